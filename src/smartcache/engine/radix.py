"""A radix tree over token ids whose nodes hold the KV state of their tokens.

Each edge is a run of token ids; its node keeps, per layer, the key and value
tensors of exactly those positions (shape [1, heads, len, head_dim]). A lookup
walks the longest matching path (splitting inside an edge when needed) and
concatenates the slices, so a request prefills only what follows. Because K/V
of position i depend only on tokens 0..i, any stored path is valid for every
request that starts with it, whatever session it came from.

Memory is bounded: least recently used leaves are evicted until the tree is
under its byte budget. Thread-safe.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Sequence

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]     # per layer: (keys, values), [1, heads, seq, dim]

_clock = itertools.count()


class _Node:
    __slots__ = ("tokens", "kv", "children", "parent", "last_used", "nbytes")

    def __init__(self, tokens: tuple[int, ...], kv: KV, parent: "_Node | None") -> None:
        self.tokens = tokens
        self.kv = kv
        self.children: dict[int, _Node] = {}
        self.parent = parent
        self.last_used = next(_clock)
        self.nbytes = sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)

    def split(self, at: int) -> "_Node":
        """Cut this edge after ``at`` tokens; returns the new upper node (self becomes its child)."""
        upper = _Node(self.tokens[:at], [(k[:, :, :at].clone(), v[:, :, :at].clone()) for k, v in self.kv],
                      self.parent)
        upper.last_used = self.last_used
        assert self.parent is not None
        self.parent.children[self.tokens[0]] = upper
        self.tokens = self.tokens[at:]
        self.kv = [(k[:, :, at:].clone(), v[:, :, at:].clone()) for k, v in self.kv]
        self.nbytes -= upper.nbytes
        self.parent = upper
        upper.children[self.tokens[0]] = self
        return upper


@dataclass(frozen=True)
class PrefixMatch:
    length: int          # tokens of the request covered by cached KV
    kv: KV | None        # their KV, concatenated; None when length == 0


@dataclass(frozen=True)
class RadixStats:
    nodes: int
    tokens: int
    bytes: int
    budget_bytes: int
    lookups: int
    matched_tokens: int
    requested_tokens: int
    evicted_nodes: int


class RadixKVCache:
    def __init__(self, budget_bytes: int) -> None:
        if budget_bytes <= 0:
            raise ValueError("the KV budget must be positive")
        self.budget_bytes = budget_bytes
        self._root = _Node((), [], None)
        self._bytes = 0
        self._lock = threading.Lock()
        self._lookups = self._matched = self._requested = self._evicted = 0

    def match(self, ids: Sequence[int], *, max_length: int | None = None) -> PrefixMatch:
        """The longest cached prefix of ``ids`` (at most ``max_length`` tokens) with its KV."""
        limit = len(ids) if max_length is None else min(max_length, len(ids))
        with self._lock:
            self._lookups += 1
            self._requested += len(ids)
            pieces: list[KV] = []
            node, pos = self._root, 0
            while pos < limit:
                child = node.children.get(ids[pos])
                if child is None:
                    break
                n = 0
                edge = child.tokens
                while n < len(edge) and pos + n < limit and edge[n] == ids[pos + n]:
                    n += 1
                child.last_used = next(_clock)
                pieces.append(child.kv if n == len(edge) else [(k[:, :, :n], v[:, :, :n]) for k, v in child.kv])
                pos += n
                if n < len(edge):
                    break
                node = child
            self._matched += pos
            self._touch_path(node)
        if pos == 0:
            return PrefixMatch(0, None)
        layers = len(pieces[0])
        kv = [(torch.cat([p[i][0] for p in pieces], dim=2), torch.cat([p[i][1] for p in pieces], dim=2))
              for i in range(layers)]
        return PrefixMatch(pos, kv)

    def insert(self, ids: Sequence[int], kv: KV) -> int:
        """Store the KV of ``ids`` (``kv`` covers at least len(ids) positions); returns new tokens stored."""
        ids = tuple(int(t) for t in ids)
        if not ids or not kv or kv[0][0].shape[2] < len(ids):
            return 0
        with self._lock:
            node, pos = self._root, 0
            while pos < len(ids):
                child = node.children.get(ids[pos])
                if child is None:
                    break
                edge = child.tokens
                n = 0
                while n < len(edge) and pos + n < len(ids) and edge[n] == ids[pos + n]:
                    n += 1
                if n < len(edge):
                    child = child.split(n)
                child.last_used = next(_clock)
                node, pos = child, pos + n
            added = len(ids) - pos
            if added:
                leaf = _Node(ids[pos:], [(k[:, :, pos:len(ids)].clone(), v[:, :, pos:len(ids)].clone())
                                         for k, v in kv], node)
                if leaf.nbytes > self.budget_bytes:
                    return 0
                node.children[ids[pos]] = leaf
                self._bytes += leaf.nbytes
                self._touch_path(leaf)
            self._evict(protect=node if not added else node.children[ids[pos]])
            return added

    def clear(self) -> None:
        with self._lock:
            self._root = _Node((), [], None)
            self._bytes = 0

    def stats(self) -> RadixStats:
        with self._lock:
            nodes = list(self._walk())
            return RadixStats(nodes=len(nodes), tokens=sum(len(n.tokens) for n in nodes), bytes=self._bytes,
                              budget_bytes=self.budget_bytes, lookups=self._lookups,
                              matched_tokens=self._matched, requested_tokens=self._requested,
                              evicted_nodes=self._evicted)

    # -- internals (lock held) --------------------------------------------------------

    def _walk(self):
        stack = list(self._root.children.values())
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children.values())

    def _touch_path(self, node: _Node) -> None:
        stamp = next(_clock)
        while node is not None and node is not self._root:
            node.last_used = stamp
            node = node.parent  # type: ignore[assignment]

    def _evict(self, protect: _Node) -> None:
        """Drop least recently used leaves until under budget; never the path just written."""
        protected = set()
        node: _Node | None = protect
        while node is not None:
            protected.add(id(node))
            node = node.parent
        while self._bytes > self.budget_bytes:
            leaves = [n for n in self._walk() if not n.children and id(n) not in protected]
            if not leaves:
                return
            victim = min(leaves, key=lambda n: n.last_used)
            assert victim.parent is not None
            del victim.parent.children[victim.tokens[0]]
            self._bytes -= victim.nbytes
            self._evicted += 1
