"""Store stage: entries, their states, and filtered vector search. Knows nothing of HTTP or engines."""

from smartcache.store.base import (
    Answer, Doomed, Entry, EntryId, EntryState, Scope, ScoredEntry, SearchFilter, Store, VersionKey, VersionKeyHash,
    Usage,
)
from smartcache.store.memory import MemoryStore

__all__ = [
    "Answer", "Doomed", "Entry", "EntryId", "EntryState", "Scope", "ScoredEntry", "SearchFilter", "Store",
    "VersionKey", "VersionKeyHash", "MemoryStore", "Usage",
]
