"""Entry lifecycle: pending -> ready, feedback, invalidation, TTL, hit-weighted LRU.

    write ──> PENDING ──(window passes, no regenerate / negative feedback)──> READY
                 │                                                          │  ▲
                 └──(regenerate / negative)──> INVALID <──(invalidate)──────┘  │
                                                  ▲         READY <-> SUSPECT (feedback score)
                                                  └── correction / reset in the session, version bump

A pending entry is never served: an answer the user regenerates or corrects
within the window must not reach anyone else first.

What is due for promotion, what purge deletes and what eviction weighs are asked
of the store, never remembered by this process: a process restarted on the same
SQLite file, or any replica on a shared Redis, promotes what another wrote, and
the compare-and-set transition makes each promotion happen once. Where several
processes share the store (``serve --workers N``), a lease in the store (``lease.py``)
lets one of them run the ticks and the eviction; the others only write and read.
"""

from __future__ import annotations

import heapq
import math
import threading
from dataclasses import dataclass
from typing import Callable

from smartcache.config import LifecycleConfig
from smartcache.errors import EntryNotFound, InvalidRequest, StoreError
from smartcache.lifecycle.lease import ALWAYS, Lease
from smartcache.store import Entry, EntryState, Scope, Store, Usage

FEEDBACK_KINDS = ("positive", "negative", "regenerate")
_BATCH = 500            # ids asked of the store at a time by tick and purge
_MAX_HINTS = 100_000    # due times remembered for maybe_tick
_MAX_HIT_BATCH = 512    # entries whose hits are written at once, whatever the time
_MAX_HITS_KEPT = 8 * _MAX_HIT_BATCH     # while the store refuses them; past it, counts are dropped


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
        self._lock = threading.Lock()
        self._last_tick = -math.inf
        # When this process's own writes fall due: only a hint of when to tick sooner than the
        # throttle allows (what to promote always comes from the store). Bounded; losing a hint
        # delays a promotion by at most the throttle interval.
        self._due_hints: list[float] = []
        self.evicted = 0
        self.expired = 0
        # Hits counted here and written in one batch (``flush_hits``): on a shared file a hit
        # written alone was a write transaction per served answer, and every other worker
        # re-read the change log after each one. A count is a ranking signal, not an answer.
        self._hits: dict[str, tuple[int, float]] = {}
        self._hits_lock = threading.Lock()
        self._hits_flushed = clock()
        # Who runs the ticks: this process alone (ALWAYS), or the holder of a lease in a shared store.
        self.lease: Lease = ALWAYS

    def admit(self, entry: Entry) -> None:
        """Write a new entry (PENDING) and keep the store within capacity."""
        self.store.put(entry)
        if entry.state is EntryState.PENDING and len(self._due_hints) < _MAX_HINTS:
            with self._lock:
                heapq.heappush(self._due_hints, entry.created_at + self.config.promotion_window_s)
        if self.lease.mine():       # else the lease holder's tick keeps the store within capacity
            self._evict_if_full()

    def tick(self) -> int:
        """Promote every pending entry of the store whose window has passed; returns how many
        this call promoted. Replicas may tick at once: each entry is promoted by one of them.
        Under a shared lease its holder sweeps (and evicts what others wrote past capacity); any
        other process promotes only when one of its own writes fell due, so its next request is
        served as a single process serves it, without waiting for the holder's next tick."""
        now = self.clock()
        with self._lock:
            self._last_tick = now
            own_due = bool(self._due_hints and self._due_hints[0] <= now)
            while self._due_hints and self._due_hints[0] <= now:
                heapq.heappop(self._due_hints)
        self.flush_hits()       # each tick writes the hits counted since the last
        held = self.lease.acquire()
        if not held and not own_due:
            return 0
        promoted = self._promote_due(now)
        if held and not self.lease.always:
            self._evict_if_full()
        return promoted

    def _promote_due(self, now: float) -> int:
        promoted = 0
        while True:
            due = self.store.pending_due(now - self.config.promotion_window_s, _BATCH)
            won = 0
            for cache_id in due:
                # Compare-and-set: another replica may have promoted it, or a regenerate killed it.
                if self.store.transition(cache_id, EntryState.PENDING, state=EntryState.READY) is not None:
                    won += 1
            promoted += won
            if len(due) < _BATCH or not won:   # the last batch, or one nobody could promote: stop
                return promoted

    def maybe_tick(self) -> int:
        """``tick`` at most every min(1 s, window / 2) of the clock (50 ms at the least), and at
        once when one of this process's own writes falls due: a lookup on a shared store then
        pays no round trip for promotion on most calls, and under a fake clock the first lookup
        past the window of an entry this process wrote promotes it."""
        now = self.clock()
        interval = min(1.0, max(self.config.promotion_window_s / 2, 0.05))
        with self._lock:
            due = now - self._last_tick >= interval or bool(self._due_hints and self._due_hints[0] <= now)
        return self.tick() if due else 0

    def next_tick_in(self) -> float:
        """Seconds until a timer should tick: the throttle interval, or sooner when one of this
        process's own writes falls due. Another worker's lookup cannot see that write's hint, so
        the writer's timer promotes it on time rather than up to an interval late."""
        now = self.clock()
        interval = min(1.0, max(self.config.promotion_window_s / 2, 0.05))
        with self._lock:
            due = self._due_hints[0] - now if self._due_hints else interval
        return min(interval, max(due, 0.0))

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
        """Count a served hit: written with the others of the last ``hit_flush_s`` seconds
        (at once when that is 0), at the next tick, or when the counts are read."""
        now = self.clock()
        with self._hits_lock:
            count, _ = self._hits.get(cache_id, (0, now))
            self._hits[cache_id] = (count + 1, now)
            due = now - self._hits_flushed >= self.config.hit_flush_s or len(self._hits) >= _MAX_HIT_BATCH
        if due:
            self.flush_hits()

    def flush_hits(self) -> None:
        """Write the hits counted since the last flush, in one batch. A batch the store refused
        is kept for the next try (StoreError propagates), merged with the hits counted since."""
        with self._hits_lock:
            batch, self._hits = self._hits, {}
            self._hits_flushed = self.clock()
        if not batch:
            return
        try:
            self.store.add_hits(batch)
        except BaseException:
            with self._hits_lock:
                if len(self._hits) + len(batch) > _MAX_HITS_KEPT:
                    raise       # a store down for long: its counts go, never the answers
                for cache_id, (count, at) in batch.items():
                    later, last = self._hits.get(cache_id, (0, at))
                    self._hits[cache_id] = (count + later, max(at, last))
            raise

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
        """Delete invalid and expired (not frozen) entries; returns how many went."""
        now = self.clock()
        gone = 0
        while True:
            doomed = self.store.purgeable(now, _BATCH)
            deleted = 0
            for cache_id, expired in doomed:
                if self.store.delete(cache_id):   # False: another replica purged it first
                    deleted += 1
                    self.expired += int(expired)
            gone += deleted
            if len(doomed) < _BATCH or not deleted:
                return gone

    def _priority(self, usage: Usage) -> float:
        """Hit-weighted LRU: recency, plus a bonus that grows with the log of the hit count."""
        return usage.used_at + self.config.hit_weight_s * math.log1p(usage.hit_count)

    def _evict_if_full(self) -> None:
        capacity = self.config.capacity
        if len(self.store) <= capacity:
            return
        self.flush_hits()       # eviction ranks by hit counts: this process's, written
        self.purge()
        excess = len(self.store) - capacity
        if excess <= 0:
            return
        # Evict a little more than needed so the O(n) pass over usage runs once per ~1 % of
        # writes; usage carries three numbers an entry, not the entries themselves.
        batch = max(excess, capacity // 100)
        victims = heapq.nsmallest(batch, self.store.usage(), key=self._priority)
        self.evicted += sum(self.store.delete(v.cache_id) for v in victims)

    def _require(self, cache_id: str) -> Entry:
        entry = self.store.get(cache_id)
        if entry is None:
            raise EntryNotFound(f"no entry {cache_id}")
        return entry
