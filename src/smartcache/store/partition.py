"""One partition of the in-process store: parallel arrays over its rows.

A partition holds one pool's rows (tenant, version key, session or global):
ids, turn vectors (float32; float16 once the pool has a graph), context vectors
(float16, in a pool of slots, so rows without one, or read back lazily from a
persistent store, cost 4 bytes), and the columns a search masks on
(servability, expiry, feedback, domain). Rows are removed by swapping the last
one in, so the arrays stay dense and a search allocates nothing per row.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from smartcache.store.base import Entry, EntryState
from smartcache.store.graph import Graph

# Domain tags as small integers: a search masks on them, and comparing an int column is about
# twenty times cheaper than comparing a column of str objects. One table for every partition
# of the process (the tags are a handful); codes are never reused.
_DOMAIN_CODES: dict[str, int] = {"general": 0}
_CODES_LOCK = threading.Lock()


def domain_code(domain: str) -> int:
    code = _DOMAIN_CODES.get(domain)
    if code is None:
        with _CODES_LOCK:
            code = _DOMAIN_CODES.setdefault(domain, len(_DOMAIN_CODES))
    return code


def domain_names() -> list[str]:
    """The tags by code: ``domain_names()[domain_code(t)] == t``."""
    with _CODES_LOCK:
        return sorted(_DOMAIN_CODES, key=_DOMAIN_CODES.__getitem__)


@dataclass
class Partition:
    dim: int
    ids: list[str] = field(default_factory=list)
    graph: Graph | None = None
    labels: np.ndarray = field(init=False)     # int64: the row's label in the graph
    label_row: dict[int, int] = field(default_factory=dict)
    vectors: np.ndarray = field(init=False)
    # Context vectors in float16, in a pool of slots: ctx_slot[row] is the row's slot, or -1 when
    # the partition holds none for it (the entry has none, or, read back from disk, reads its own).
    ctx_slot: np.ndarray = field(init=False)
    ctx_pool: np.ndarray = field(init=False)
    ctx_free: list[int] = field(default_factory=list)
    edits: int = 0                             # rows added to or removed from the graph (when to save it)
    version: int = 0                           # bumped when a row's vector or the matrix changes (the scan memo)
    servable: np.ndarray = field(init=False)   # bool: state is servable
    frozen: np.ndarray = field(init=False)     # bool: exempt from expiry
    expires: np.ndarray = field(init=False)    # float64 expiry time
    feedback: np.ndarray = field(init=False)   # float32 feedback score
    domains: np.ndarray = field(init=False)    # int32: the domain tag's ``domain_code``
    cold: np.ndarray = field(init=False)       # int32: the row's number among the store's cold rows; -1: warm
    changes: int = 0                           # bumped whenever a row's search columns change (the mask memo)
    # (feedback floor, domain) -> (changes, computed at, valid until, mask, its count): ``servable_rows``
    _masks: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._allocate(4)   # most partitions are one session's few turns

    @classmethod
    def of_rows(cls, dim: int, ids: list[str], labels: np.ndarray, turns: np.ndarray,
                entries: Sequence[Entry]) -> "Partition":
        """A partition filled at once (a store read back from disk), sized exactly: no doubling
        slack. It holds no context vectors: the entries bring their own when asked."""
        part = cls(dim)
        n = len(ids)
        part.ids, part.labels, part.vectors = ids, labels, turns
        part.ctx_slot = np.full(n, -1, np.int32)
        part.servable = np.fromiter((e.state.servable for e in entries), bool, n)
        part.frozen = np.fromiter((e.state is EntryState.FROZEN for e in entries), bool, n)
        part.expires = np.fromiter((e.expires_at for e in entries), np.float64, n)
        part.feedback = np.fromiter((e.feedback_score for e in entries), np.float32, n)
        part.domains = np.fromiter((domain_code(e.domain) for e in entries), np.int32, n)
        part.cold = np.full(n, -1, np.int32)
        part.label_row = dict(zip(labels.tolist(), range(n)))
        return part

    @classmethod
    def of_columns(cls, dim: int, ids: list[str], columns: dict[str, np.ndarray], domains: np.ndarray,
                   cold: np.ndarray) -> "Partition":
        """A partition of cold rows, from a snapshot's columns (``snapshot``), sized exactly."""
        part = cls(dim)
        n = len(ids)
        part.ids = ids
        part.labels, part.vectors = columns["labels"], columns["vectors"]
        part.servable, part.frozen = columns["servable"], columns["frozen"]
        part.expires, part.feedback = columns["expires"], columns["feedback"]
        part.domains, part.cold = domains, cold
        part.ctx_slot = np.full(n, -1, np.int32)
        part.label_row = dict(zip(part.labels.tolist(), range(n)))
        return part

    def take_room(self, old: "Partition") -> None:
        """Adopt ``old``'s arrays, spare room included, where this partition was restored from a
        snapshot of it (the same rows, in the same order): no copy, and the next append does
        not copy a full pool. Its save count goes on (``edits``)."""
        n = len(self.ids)
        if len(old.ids) != n:
            raise ValueError("take_room needs the partition this one was restored from")
        self.edits = old.edits
        capacity = old.vectors.shape[0]
        if capacity == n:
            return
        cold, self.cold = self.cold, np.full(capacity, -1, np.int32)
        self.cold[:n] = cold
        self.ctx_slot = np.full(capacity, -1, np.int32)
        self.vectors, self.labels, self.servable, self.frozen = old.vectors, old.labels, old.servable, old.frozen
        self.expires, self.feedback, self.domains = old.expires, old.feedback, old.domains
        self.version += 1
        self.changes += 1

    def _allocate(self, capacity: int) -> None:
        old = len(self.ids)
        self.changes += 1
        def grow(arr: np.ndarray | None, shape: tuple[int, ...], dtype: object) -> np.ndarray:
            new = np.zeros(shape, dtype=dtype)
            if arr is not None:
                new[:old] = arr[:old]
            return new
        current = getattr(self, "vectors", None)
        self.vectors = grow(current, (capacity, self.dim), current.dtype if current is not None else np.float32)
        self.version += 1
        self.servable = grow(getattr(self, "servable", None), (capacity,), bool)
        self.frozen = grow(getattr(self, "frozen", None), (capacity,), bool)
        self.expires = grow(getattr(self, "expires", None), (capacity,), np.float64)
        self.feedback = grow(getattr(self, "feedback", None), (capacity,), np.float32)
        self.domains = grow(getattr(self, "domains", None), (capacity,), np.int32)
        self.labels = grow(getattr(self, "labels", None), (capacity,), np.int64)
        self.ctx_slot = grow(getattr(self, "ctx_slot", None), (capacity,), np.int32)
        self.ctx_slot[old:] = -1
        self.cold = grow(getattr(self, "cold", None), (capacity,), np.int32)
        self.cold[old:] = -1
        if not hasattr(self, "ctx_pool"):
            self.ctx_pool = np.zeros((0, self.dim), np.float16)

    def _set_context(self, row: int, context: np.ndarray | None) -> None:
        slot = int(self.ctx_slot[row])
        if context is None:
            if slot >= 0:
                self.ctx_free.append(slot)
                self.ctx_slot[row] = -1
            return
        if slot < 0:
            if not self.ctx_free:     # grow the pool by doubling; its new slots are free
                used = self.ctx_pool.shape[0]
                pool = np.zeros((max(4, 2 * used), self.dim), np.float16)
                pool[:used] = self.ctx_pool
                self.ctx_pool = pool
                self.ctx_free.extend(range(pool.shape[0] - 1, used - 1, -1))
            slot = self.ctx_free.pop()
            self.ctx_slot[row] = slot
        self.ctx_pool[slot] = context

    def set_row(self, row: int, entry: Entry) -> None:
        # A stored (vector-less) entry keeps the row's vectors, and so does an update that
        # hands back the row's own (a promotion, a feedback): a search's scores still hold.
        if entry.turn_vector.size and not np.array_equal(self.vectors[row], entry.turn_vector):
            self.vectors[row] = entry.turn_vector
            self.version += 1
        if entry.context_vector is None or entry.context_vector.size:   # size 0: keep the row's
            self._set_context(row, entry.context_vector)
        self.changes += 1
        self.servable[row] = entry.state.servable
        self.frozen[row] = entry.state is EntryState.FROZEN
        self.expires[row] = entry.expires_at
        self.feedback[row] = entry.feedback_score
        self.domains[row] = domain_code(entry.domain)

    def append(self, entry: Entry, label: int) -> int:
        row = len(self.ids)
        if row == self.vectors.shape[0]:
            # Amortised O(1) appends; a large pool grows by a quarter, so the first put after a
            # million rows are read back does not hold room for a second million.
            self._allocate(row * 2 if row < 65536 else row + row // 4)
        self.ids.append(entry.cache_id)
        self.cold[row] = -1
        self.set_row(row, entry)
        self.labels[row] = label
        self.label_row[label] = row
        if self.graph is not None:
            self.graph.add(self.labels[row:row + 1], self.vectors[row:row + 1])
            self.edits += 1
        return row

    def servable_rows(self, floor: float, now: float, domain: str | None) -> tuple[np.ndarray, int]:
        """The rows a search may return (servable, feedback at least ``floor``, frozen or not
        expired at ``now``, of ``domain`` or general: a mask over the first rows) and how many.
        Kept while no row changes and no row it holds expires: at a million rows the mask is
        four passes over every row, each search. The mask is shared: never write to it."""
        held = self._masks.get((floor, domain))
        if held is not None and held[0] == self.changes and held[1] <= now < held[2]:
            return held[3], held[4]
        n = len(self.ids)
        mask = self.servable[:n] & (self.feedback[:n] >= floor)
        mask &= self.frozen[:n] | (self.expires[:n] > now)
        if domain is not None and domain != "general":
            mask &= self.in_domain(domain, n)
        expiring = mask & ~self.frozen[:n]
        until = float(self.expires[:n][expiring].min()) if expiring.any() else math.inf
        count = int(np.count_nonzero(mask))
        if len(self._masks) >= 8:
            self._masks.clear()
        self._masks[(floor, domain)] = (self.changes, now, until, mask, count)
        return mask, count

    def in_domain(self, domain: str, n: int) -> np.ndarray:
        """Rows of ``domain`` or 'general' among the first ``n``."""
        codes = self.domains[:n]
        code = _DOMAIN_CODES.get(domain)        # None: no row was ever tagged so
        return codes == 0 if code is None else (codes == code) | (codes == 0)

    def full(self, row: int, stored: Entry) -> Entry:
        """The stored entry with the row's vectors back, in float32 as they were put."""
        slot = int(self.ctx_slot[row])
        if slot < 0:    # none here: the stored entry's own (None, or one it reads from disk when asked)
            return stored.with_changes(turn_vector=self.vectors[row].astype(np.float32))
        return stored.with_changes(turn_vector=self.vectors[row].astype(np.float32),
                                   context_vector=self.ctx_pool[slot].astype(np.float32))

    def build_graph(self, graph: Graph | None = None, labels: np.ndarray | None = None) -> None:
        """Index the partition with HNSW, or adopt a graph read back from disk with the rows'
        ``labels`` in it. A pool this large keeps its vectors in half precision (rescoring needs
        no more; a cosine moves by about 1e-3): 1 KB an entry instead of 2."""
        n = len(self.ids)
        if graph is None:
            graph = Graph(self.dim)
            graph.add(self.labels[:n], self.vectors[:n])
        else:
            self.labels[:n] = labels
            self.label_row = dict(zip(labels.tolist(), range(n)))
        self.graph = graph
        self.vectors = self.vectors.astype(np.float16, copy=False)
        self.version += 1           # the rows' scores move by about 1e-3

    def remove(self, row: int) -> str | None:
        """Swap-remove a row; returns the id that moved into ``row`` (or None)."""
        last = len(self.ids) - 1
        moved = None
        self.version += 1
        self.changes += 1
        del self.label_row[int(self.labels[row])]
        self._set_context(row, None)
        if self.graph is not None:
            self.graph.remove(self.labels[row])
            self.edits += 1
        if row != last:
            for arr in (self.vectors, self.servable, self.frozen, self.expires, self.feedback, self.domains,
                        self.labels, self.ctx_slot, self.cold):
                arr[row] = arr[last]
            moved = self.ids[last]
            self.label_row[int(self.labels[row])] = row
            self.ids[row] = moved
        self.ids.pop()
        return moved
