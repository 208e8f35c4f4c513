"""Entry lifecycle: pending -> ready, feedback, invalidation, TTL, hit-weighted LRU.

    write ──> PENDING ──(window passes, no regenerate / negative feedback)──> READY
                 │                                                          │  ▲
                 └──(regenerate / negative)──> INVALID <──(invalidate)──────┘  │
                                                  ▲         READY <-> SUSPECT (feedback score)
                                                  └── correction / reset in the session, version bump

A pending entry is never served: an answer the user regenerates or corrects
within the window must not reach anyone else first.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable

from smartcache.config import LifecycleConfig
from smartcache.errors import EntryNotFound, InvalidRequest, StoreError
from smartcache.store import Entry, EntryState, Scope, Store

FEEDBACK_KINDS = ("positive", "negative", "regenerate")


@dataclass(frozen=True)
class FeedbackResult:
    cache_id: str
    state: EntryState
    feedback_score: float


class Lifecycle:
    """Applies lifecycle rules to a store. Thread-safe; time comes from an injectable clock."""

    def __init__(self, store: Store, config: LifecycleConfig, clock: Callable[[], float]) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self._pending: deque[tuple[float, str]] = deque()   # (created_at, id), oldest first
        self._lock = threading.Lock()
        self.evicted = 0
        self.expired = 0

    def admit(self, entry: Entry) -> None:
        """Write a new entry (PENDING) and keep the store within capacity."""
        with self._lock:
            self.store.put(entry)
            if entry.state is EntryState.PENDING:
                self._pending.append((entry.created_at, entry.cache_id))
        self._evict_if_full()

    def tick(self) -> int:
        """Promote every pending entry whose window has passed; returns how many."""
        now = self.clock()
        promoted = 0
        with self._lock:
            while self._pending and self._pending[0][0] + self.config.promotion_window_s <= now:
                _, cache_id = self._pending.popleft()
                # Compare-and-set: a regenerate seen by another replica may have killed it meanwhile.
                if self.store.transition(cache_id, EntryState.PENDING, state=EntryState.READY) is not None:
                    promoted += 1
        return promoted

    def promote(self, cache_id: str, *, to_global: bool = False, _tries: int = 5) -> Entry:
        """Make an entry servable now; ``to_global`` also moves it into the tenant's global pool."""
        entry = self._require(cache_id)
        if entry.state is EntryState.INVALID:
            raise InvalidRequest(f"entry {cache_id} is invalid and cannot be promoted")
        changes: dict[str, object] = {}
        if entry.state is EntryState.PENDING:
            changes["state"] = EntryState.READY
        if to_global:
            changes["scope"] = Scope.GLOBAL
        if not changes:
            return entry
        new = self.store.transition(cache_id, entry.state, **changes)
        if new is None and _tries > 1:   # changed by another replica since we read it: decide again
            return self.promote(cache_id, to_global=to_global, _tries=_tries - 1)
        if new is None:
            raise StoreError(f"entry {cache_id} keeps changing; promotion not applied")
        return new

    def feedback(self, cache_id: str, kind: str, _tries: int = 5) -> FeedbackResult:
        """Apply user feedback. Regenerate or negative on a pending entry kills it; on a ready
        one it lowers the score, and below the floor the entry is no longer recalled."""
        if kind not in FEEDBACK_KINDS:
            raise InvalidRequest(f"feedback kind must be one of {FEEDBACK_KINDS}, got {kind!r}")
        entry = self._require(cache_id)
        cfg = self.config
        if kind == "positive":
            score = min(1.0, entry.feedback_score + cfg.positive_bonus)
            state = EntryState.READY if entry.state is EntryState.SUSPECT and score >= cfg.suspect_below else entry.state
        elif entry.state is EntryState.PENDING:
            score, state = 0.0, EntryState.INVALID
        else:
            score = entry.feedback_score - cfg.negative_penalty
            state = self._state_for(entry.state, score)
        new = self.store.transition(cache_id, entry.state, feedback_score=score, state=state)
        if new is None and _tries > 1:   # another replica changed it first: apply to what it is now
            return self.feedback(cache_id, kind, _tries - 1)
        if new is None:
            raise StoreError(f"entry {cache_id} keeps changing; feedback not applied")
        return FeedbackResult(cache_id, new.state, new.feedback_score)

    def penalise(self, cache_id: str) -> None:
        """Lower an entry's weight after its answer failed key-fact validation."""
        entry = self.store.get(cache_id)
        if entry is not None:
            score = entry.feedback_score - self.config.validation_penalty
            self.store.update(cache_id, feedback_score=score, state=self._state_for(entry.state, score))

    def _state_for(self, state: EntryState, score: float) -> EntryState:
        if state in (EntryState.INVALID, EntryState.FROZEN, EntryState.PENDING):
            return state
        if score < self.config.feedback_floor:
            return EntryState.INVALID
        return EntryState.SUSPECT if score < self.config.suspect_below else EntryState.READY

    def record_hit(self, cache_id: str) -> None:
        self.store.add_hit(cache_id, self.clock())

    def invalidate(self, *, tenant: str, session_id: str | None = None, version_key: str | None = None,
                   cache_id: str | None = None, before: float | None = None) -> int:
        """Mark matching entries INVALID (frozen ones only when named by id); returns how many.

        With ``session_id``: that session's entries (a correction or reset);
        with ``version_key``: every entry under that key (a version bump).
        """
        if cache_id is not None:
            entry = self._require(cache_id)
            if entry.tenant != tenant:
                raise EntryNotFound(f"no entry {cache_id} for tenant {tenant!r}")
            self.store.update(cache_id, state=EntryState.INVALID)
            return 1
        if session_id is None and version_key is None:
            raise InvalidRequest("invalidate needs a session, a version key or an entry id")
        count = 0
        for entry in self.store.find(tenant=tenant, session_id=session_id, version_key=version_key):
            if entry.scope is Scope.GLOBAL and session_id is not None:
                continue   # a session's correction does not reach the tenant's shared FAQ
            if entry.state in (EntryState.INVALID, EntryState.FROZEN):
                continue
            if before is not None and entry.created_at > before:
                continue
            self.store.update(entry.cache_id, state=EntryState.INVALID)
            count += 1
        return count

    def purge(self) -> int:
        """Delete invalid and expired entries; returns how many went."""
        now = self.clock()
        gone = 0
        for entry in list(self.store):
            expired = entry.state is not EntryState.FROZEN and entry.expires_at <= now
            if entry.state is EntryState.INVALID or expired:
                self.store.delete(entry.cache_id)
                gone += 1
                self.expired += int(expired)
        return gone

    def _priority(self, entry: Entry) -> float:
        """Hit-weighted LRU: recency, plus a bonus that grows with the log of the hit count."""
        used = max(entry.last_hit_at, entry.created_at)
        return used + self.config.hit_weight_s * math.log1p(entry.hit_count)

    def _evict_if_full(self) -> None:
        capacity = self.config.capacity
        if len(self.store) <= capacity:
            return
        self.purge()
        excess = len(self.store) - capacity
        if excess <= 0:
            return
        # Evict a little more than needed so the O(n) scan runs once per ~1 % of writes.
        batch = max(excess, capacity // 100)
        victims = sorted((e for e in self.store if e.state is not EntryState.FROZEN), key=self._priority)[:batch]
        for entry in victims:
            self.store.delete(entry.cache_id)
        self.evicted += len(victims)

    def _require(self, cache_id: str) -> Entry:
        entry = self.store.get(cache_id)
        if entry is None:
            raise EntryNotFound(f"no entry {cache_id}")
        return entry
