"""Store stage: entries, their states, and filtered vector search. Knows nothing of HTTP or engines."""

from smartcache.store.base import (
    Answer, Entry, EntryId, EntryState, Scope, ScoredEntry, SearchFilter, Store, VersionKey, VersionKeyHash,
)
from smartcache.store.memory import MemoryStore

__all__ = [
    "Answer", "Entry", "EntryId", "EntryState", "Scope", "ScoredEntry", "SearchFilter", "Store",
    "VersionKey", "VersionKeyHash", "MemoryStore",
]
