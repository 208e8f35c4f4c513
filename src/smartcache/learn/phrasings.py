"""The phrasings whose answers are being tracked across sessions, searchable by meaning.

Proven sharing counts sessions per request. A reworded request is the same request to
the engine when the engine answers it the same, so a new phrasing is compared with the
nearest tracked ones (same versions, same history) and, where the answers agree, counts
toward their class. This index only proposes whom to compare with: the answers decide.

It lives in the process and is rebuilt from what the store holds: the tracked requests of
the learned state (pooled by every worker and replica) and their entries' turn vectors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

KEPT = 10_000       # phrasings per tenant: 20 MB of float32 vectors at the packaged encoder's 512 dimensions


class Phrasings:
    """Per tenant and per group (version and history), the vectors of tracked request keys;
    the oldest phrasing goes first once a tenant holds ``kept``."""

    def __init__(self, kept: int = KEPT) -> None:
        if kept < 1:
            raise ValueError("kept must be at least 1")
        self.kept = kept
        self._lock = threading.Lock()
        self._order: dict[str, OrderedDict[str, str]] = {}            # tenant -> key -> group, oldest first
        self._groups: dict[tuple[str, str], _Group] = {}

    def add(self, tenant: str, group: str, key: str, vector: np.ndarray) -> None:
        with self._lock:
            order = self._order.setdefault(tenant, OrderedDict())
            if key in order:
                return
            order[key] = group
            self._groups.setdefault((tenant, group), _Group(vector.shape[-1])).add(key, vector)
            while len(order) > self.kept:
                old, old_group = order.popitem(last=False)
                found = self._groups[(tenant, old_group)]
                found.remove(old)
                if not found.keys:          # a conversation's group goes with its last phrasing
                    del self._groups[(tenant, old_group)]

    def has(self, tenant: str, key: str) -> bool:
        with self._lock:
            return key in self._order.get(tenant, ())

    def nearest(self, tenant: str, group: str, vector: np.ndarray, k: int, floor: float) -> list[tuple[str, float]]:
        """Up to ``k`` keys of the group at cosine >= ``floor``, nearest first."""
        with self._lock:
            found = self._groups.get((tenant, group))
            return [] if found is None else found.nearest(vector, k, floor)

    def __len__(self) -> int:
        with self._lock:
            return sum(len(o) for o in self._order.values())

    def groups(self) -> int:
        with self._lock:
            return len(self._groups)


class _Group:
    """Dense rows; a removed row is swapped with the last one."""

    def __init__(self, dim: int) -> None:
        self.keys: list[str] = []
        self.row: dict[str, int] = {}
        self.vectors = np.zeros((4, dim), np.float32)

    def add(self, key: str, vector: np.ndarray) -> None:
        n = len(self.keys)
        if n == len(self.vectors):
            self.vectors = np.concatenate([self.vectors, np.zeros_like(self.vectors)])
        self.vectors[n] = vector
        self.keys.append(key)
        self.row[key] = n

    def remove(self, key: str) -> None:
        i = self.row.pop(key)
        last = len(self.keys) - 1
        if i != last:
            moved = self.keys[last]
            self.keys[i], self.vectors[i] = moved, self.vectors[last]
            self.row[moved] = i
        self.keys.pop()

    def nearest(self, vector: np.ndarray, k: int, floor: float) -> list[tuple[str, float]]:
        n = len(self.keys)
        if n == 0:
            return []
        sims = self.vectors[:n] @ vector.astype(np.float32)
        top = np.argpartition(-sims, k - 1)[:k] if n > k else np.arange(n)
        top = top[np.argsort(-sims[top])]
        return [(self.keys[i], float(sims[i])) for i in top if sims[i] >= floor]


__all__ = ["KEPT", "Phrasings"]
