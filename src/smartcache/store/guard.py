"""A store that may fail: its faults become StoreError, its health is known, and a store
that is down is not asked again on every request.

``SmartCache`` wraps every backend in a ``GuardedStore``. When a call fails, that kind of
call (search, put, pending_due, …) is marked down: for the next ``retry_after_s``
(doubling up to ``max_retry_s`` while it keeps failing) it fails at once with StoreError
instead of waiting on a dead connection, and callers fail open (a lookup is a miss, an
answer is not cached). The first such call after that is a probe: when it succeeds that
call is up again, with no restart. A dead server fails every kind of call, each once per
backoff; a single broken query takes down only itself. The store is reported degraded
while any kind of call is within its backoff.

The backoff doubles once per failed *probe*, not once per failed call: under load many
calls of one kind are in flight when the server dies, and they all fail within the same
millisecond. Counting each of them took the backoff from 1 s to its 15 s cap at the first
fault (the load test's --kill-redis run: Redis back after 3.5 s, the first hit 16.7 s after
that). A call that fails after another call of its kind already recorded a failure, since
it started, changes nothing but the count.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

import numpy as np

from smartcache.errors import StoreError
from smartcache.store.base import Doomed, Entry, EntryState, ScoredEntry, SearchFilter, Store, Usage

T = TypeVar("T")


def _backend_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [StoreError, OSError, sqlite3.Error]
    try:
        import redis
        errors.append(redis.RedisError)
    except ImportError:  # pragma: no cover - redis is a hard requirement
        pass
    return tuple(errors)


_FAULTS = _backend_errors()


@dataclass(frozen=True)
class StoreHealth:
    up: bool
    since: float                  # wall-clock time of the last change of state
    last_error: str | None        # the error that took it down (None while up)
    failures: int                 # failed calls since start


class GuardedStore(Store):
    def __init__(self, inner: Store, *, retry_after_s: float = 1.0, max_retry_s: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.retry_after_s = retry_after_s
        self.max_retry_s = max_retry_s
        self._clock = clock
        self._lock = threading.Lock()
        self._down: dict[str, tuple[float, float]] = {}   # op -> (fail fast until, its backoff)
        self._since = time.time()
        self._last_error: str | None = None
        self._failures = 0

    @property
    def in_memory(self) -> bool:       # type: ignore[override]
        return self.inner.in_memory

    def free_now(self) -> bool:
        return self.inner.free_now()

    def __getattr__(self, name: str) -> Any:
        # Backend extras (close, integrity, path, corrupt, …) stay reachable.
        return getattr(self.__dict__["inner"], name)

    def health(self) -> StoreHealth:
        with self._lock:
            now = self._clock()
            up = not any(until > now for until, _ in self._down.values())
            return StoreHealth(up, self._since, None if up else self._last_error, self._failures)

    def _call(self, op: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._lock:
            down = self._down.get(op)
            if down is not None and self._clock() < down[0]:
                raise StoreError(f"the store is unavailable ({self._last_error}); retrying shortly")
        try:
            result = fn(*args, **kwargs)
        except _FAULTS as exc:
            self._failed(op, exc, seen=down)
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"store {op} failed: {exc}") from exc
        if down is not None:
            with self._lock:
                self._down.pop(op, None)
                if not self._down:
                    self._since, self._last_error = time.time(), None
        return result

    def _failed(self, op: str, exc: BaseException, seen: tuple[float, float] | None) -> None:
        """Record a failed call of ``op``; ``seen`` is its down state when the call started."""
        with self._lock:
            self._failures += 1
            self._last_error = f"{op}: {exc}"[:300]
            current = self._down.get(op)
            if current is not None and current is not seen:
                return        # another call of this kind failed since this one started: same outage, one step
            if not self._down:
                self._since = time.time()
            backoff = self.retry_after_s if seen is None else min(seen[1] * 2, self.max_retry_s)
            self._down[op] = (self._clock() + backoff, backoff)

    # -- the contract, each call guarded ---------------------------------------------

    def put(self, entry: Entry) -> None:
        self._call("put", self.inner.put, entry)

    def get(self, cache_id: str) -> Entry | None:
        return self._call("get", self.inner.get, cache_id)

    def update(self, cache_id: str, **changes: object) -> Entry | None:
        return self._call("update", self.inner.update, cache_id, **changes)

    def transition(self, cache_id: str, expected: EntryState, **changes: object) -> Entry | None:
        return self._call("transition", self.inner.transition, cache_id, expected, **changes)

    def add_hit(self, cache_id: str, at: float) -> None:
        self._call("add_hit", self.inner.add_hit, cache_id, at)

    def add_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        self._call("add_hits", self.inner.add_hits, hits)

    def delete(self, cache_id: str) -> bool:
        return self._call("delete", self.inner.delete, cache_id)

    def search(self, flt: SearchFilter, vector: np.ndarray, k: int) -> list[ScoredEntry]:
        return self._call("search", self.inner.search, flt, vector, k)

    def exact(self, flt: SearchFilter, request_key: str, limit: int = 4) -> list[Entry]:
        return self._call("exact", self.inner.exact, flt, request_key, limit)

    def find(self, *, tenant: str | None = None, session_id: str | None = None,
             version_key: str | None = None, conversation_hash: str | None = None,
             prefix_hash: str | None = None, states: Iterable[EntryState] | None = None) -> list[Entry]:
        return self._call("find", self.inner.find, tenant=tenant, session_id=session_id, version_key=version_key,
                          conversation_hash=conversation_hash, prefix_hash=prefix_hash, states=states)

    def pending_due(self, created_before: float, limit: int) -> list[str]:
        return self._call("pending_due", self.inner.pending_due, created_before, limit)

    def purgeable(self, now: float, limit: int) -> list[Doomed]:
        return self._call("purgeable", self.inner.purgeable, now, limit)

    def usage(self) -> list[Usage]:
        return self._call("usage", self.inner.usage)

    def __contains__(self, cache_id: object) -> bool:
        return self._call("get", lambda: cache_id in self.inner if hasattr(self.inner, "__contains__")
                          else isinstance(cache_id, str) and self.inner.get(cache_id) is not None)

    def count_by_state(self) -> dict[str, int]:
        return self._call("count", self.inner.count_by_state)

    def generation(self, name: str) -> int:
        return self._call("generation", self.inner.generation, name)

    def bump_generation(self, name: str) -> int:
        return self._call("bump_generation", self.inner.bump_generation, name)

    def save_state(self, name: str, value: str) -> None:
        self._call("save_state", self.inner.save_state, name, value)

    def load_state(self, name: str) -> str | None:
        return self._call("load_state", self.inner.load_state, name)

    def update_state(self, name: str, merge: Callable[[str | None], str]) -> str:
        return self._call("save_state", self.inner.update_state, name, merge)

    def set_marker(self, name: str, value: str, ttl_s: float) -> None:
        self._call("set_marker", self.inner.set_marker, name, value, ttl_s)

    def set_markers(self, values: Mapping[str, str], ttl_s: float) -> None:
        self._call("set_markers", self.inner.set_markers, values, ttl_s)

    def get_marker(self, name: str) -> str | None:
        return self._call("get_marker", self.inner.get_marker, name)

    def take_marker(self, name: str) -> str | None:
        return self._call("take_marker", self.inner.take_marker, name)

    def claim_marker(self, name: str, value: str, ttl_s: float) -> bool:
        return self._call("claim_marker", self.inner.claim_marker, name, value, ttl_s)

    def __len__(self) -> int:
        return self._call("count", self.inner.__len__)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self._call("scan", lambda: list(self.inner)))
