"""Cold rows: a store's entries read back from an index snapshot, held as columns only.

A million entries as Python objects cost about 1.6 KB each and 15 s to build on open.
Rows restored from a snapshot (``snapshot``) are instead a few numpy columns: a
partition's vectors and search columns, and here what the store's other indexes need
(the stable hashes of each row's conversation, session and request key, and what usage
and the lifecycle read). A row becomes an entry, read from the file, the first time
anything asks for it (``MemoryStore._entry``); from then on it is warm, like every row
put since, and its cold slot is dead.

The hashes only narrow a lookup: every row they name is read and compared on its own
fields, so a collision costs a read, never a wrong answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from smartcache.store.base import Entry, EntryState

# The states as small codes in a column (the order is the format's: append, never reorder).
STATES = (EntryState.PENDING, EntryState.READY, EntryState.SUSPECT, EntryState.FROZEN, EntryState.INVALID)
STATE_CODE = {state: code for code, state in enumerate(STATES)}


def stable_hash(*parts: str) -> int:
    """A 64-bit hash of ``parts`` that is the same in every process (``hash()`` of a str is
    salted per process), as a signed int so it fits an int64 column."""
    digest = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def request_hash(key: tuple[str, str, str], request_key: str) -> int:
    """The exact path's key of a row: its partition and its request key (0: it has none)."""
    return stable_hash(*key, request_key) if request_key else 0


class _Lookup:
    """Rows by a hash column: the column sorted once, then a binary search a lookup."""

    def __init__(self, hashes: np.ndarray) -> None:
        self.order = np.argsort(hashes, kind="stable").astype(np.int32)
        self.sorted = hashes[self.order]

    def rows(self, value: int) -> np.ndarray:
        lo = np.searchsorted(self.sorted, value, side="left")
        hi = np.searchsorted(self.sorted, value, side="right")
        return self.order[lo:hi]


@dataclass
class ColdRows:
    """The snapshot's rows that no one has asked for yet, by their number in the snapshot."""

    ids: list[str]
    states: np.ndarray           # uint8: STATE_CODE
    created: np.ndarray          # float64
    last_hit: np.ndarray         # float64
    hits: np.ndarray             # int64
    conversation: np.ndarray     # int64 stable hashes
    session: np.ndarray
    request: np.ndarray
    # Reads rows' entries from the store, by id (a row gone or unreadable is left out).
    fetch: Callable[[Sequence[str]], dict[str, Entry]]
    alive: np.ndarray = field(init=False)
    count: int = field(init=False)     # rows still cold
    _lookups: dict[str, _Lookup] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.alive = np.ones(len(self.ids), bool)
        self.count = len(self.ids)

    def _find(self, column: str, value: int) -> list[str]:
        lookup = self._lookups.get(column)
        if lookup is None:      # sorted on first use: an open that never asks pays nothing
            lookup = self._lookups[column] = _Lookup(getattr(self, column))
        rows = lookup.rows(value)
        return [self.ids[int(r)] for r in rows[self.alive[rows]]]

    def by_conversation(self, conversation_hash: str) -> list[str]:
        return self._find("conversation", stable_hash(conversation_hash))

    def by_session(self, session_id: str) -> list[str]:
        return self._find("session", stable_hash(session_id))

    def by_request(self, key: tuple[str, str, str], request_key: str) -> list[str]:
        return self._find("request", request_hash(key, request_key)) if request_key else []

    def kill(self, number: int) -> None:
        if self.alive[number]:
            self.alive[number] = False
            self.count -= 1

    def living(self) -> np.ndarray:
        return np.flatnonzero(self.alive)
