"""GuardedStore: faults become StoreError, a store that is down fails fast until its retry is
due, backs off while it stays down, and is up again after one good call; SmartCache fails open."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from conftest import U, remember
from smartcache import SmartCache, load_config
from smartcache.decide import Zone
from smartcache.errors import StoreError
from smartcache.store import MemoryStore
from smartcache.store.guard import GuardedStore


class Flaky(MemoryStore):
    """A MemoryStore whose every call raises ``fault`` while it is set, counting the calls it saw."""

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.fault: BaseException | None = None
        self.calls = 0

    def __getattribute__(self, name: str):
        attr = super().__getattribute__(name)
        if name in ("search", "find", "put", "get", "update", "generation", "count_by_state", "pending_due"):
            def guarded(*args, **kwargs):
                self.calls += 1
                if self.fault is not None:
                    raise self.fault
                return attr(*args, **kwargs)
            return guarded
        return attr


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_fault_marks_the_call_down_and_it_fails_fast_until_the_retry():
    inner, clock = Flaky(4), Clock()
    store = GuardedStore(inner, retry_after_s=1.0, max_retry_s=4.0, clock=clock)
    assert store.get("a") is None and store.health().up
    inner.fault = sqlite3.OperationalError("database is locked")
    with pytest.raises(StoreError, match="locked"):
        store.get("a")                        # a backend error comes out typed
    health = store.health()
    assert not health.up and "locked" in health.last_error and health.failures == 1
    calls = inner.calls
    with pytest.raises(StoreError, match="unavailable"):
        store.get("a")
    assert inner.calls == calls               # not asked again while down
    clock.now += 1.01                         # the retry is due: one probe, which fails
    with pytest.raises(StoreError):
        store.get("a")
    assert inner.calls == calls + 1
    clock.now += 1.5                          # the backoff doubled to 2 s
    with pytest.raises(StoreError, match="unavailable"):
        store.get("a")
    inner.fault = None
    clock.now += 0.6
    assert store.get("a") is None             # the probe succeeds: up again, no restart
    assert store.health().up and store.health().last_error is None
    assert store.health().failures == 2


def test_one_broken_kind_of_call_leaves_the_others_working():
    inner, clock = Flaky(4), Clock()
    store = GuardedStore(inner, clock=clock)
    inner.fault = OSError("connection reset")
    with pytest.raises(StoreError):
        store.pending_due(1.0, 10)
    inner.fault = None
    assert store.get("a") is None             # another call still goes to the store
    assert not store.health().up              # but the store is reported degraded meanwhile
    clock.now += 1.01
    assert store.pending_due(1.0, 10) == [] and store.health().up


def test_the_backoff_is_capped():
    inner, clock = Flaky(4), Clock()
    store = GuardedStore(inner, retry_after_s=1.0, max_retry_s=4.0, clock=clock)
    inner.fault = OSError("connection refused")
    for _ in range(6):
        with pytest.raises(StoreError):
            store.get("a")
        clock.now += 4.01                     # never longer than the cap: every probe goes through
    assert inner.calls == 6


def test_calls_failing_together_are_one_failure_of_the_backoff():
    """Eight calls in flight when the server dies fail together: the backoff is still its first
    step (1 s), not doubled once per call (it reached the 15 s cap at once, and a restarted
    Redis waited that long for its first probe)."""
    import threading

    inner, clock = Flaky(4), Clock()
    store = GuardedStore(inner, retry_after_s=1.0, max_retry_s=15.0, clock=clock)
    together = threading.Barrier(8)

    class Dying(OSError):
        pass

    real_get = MemoryStore.get

    def get(cache_id):        # every call waits for the others, then they all fail at once
        together.wait(timeout=10)
        raise Dying("connection reset by peer")

    inner.get = get
    failed = []

    def call():
        try:
            store.get("a")
        except StoreError as exc:
            failed.append(exc)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert len(failed) == 8 and store.health().failures == 8
    inner.get = lambda cache_id: real_get(inner, cache_id)       # the server is back
    clock.now += 1.01                         # one backoff step later the probe goes through
    assert store.get("a") is None and store.health().up


def test_programming_errors_are_not_swallowed():
    inner = Flaky(4)
    store = GuardedStore(inner)
    inner.fault = TypeError("a bug, not a fault of the store")
    with pytest.raises(TypeError):
        store.get("a")
    assert store.health().up


def test_smartcache_fails_open_while_the_store_is_down(encoder, clock):
    inner = Flaky(encoder.dim)
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder, store=inner, clock=clock)
    remember(cache, [U("How do I reset my password?")], "Open settings, then security.")
    assert cache.lookup([U("How can I reset my password?")], session="s1").zone is Zone.HIT
    inner.fault = OSError("connection reset by peer")
    decision = cache.lookup([U("How can I reset my password?")], session="s1")
    assert decision.zone is Zone.MISS and decision.has_reason("store_error") and not decision.cacheable
    stored = cache.store([U("What is an API key?")], "A secret that identifies a caller.", session="s1")
    assert not stored.stored and stored.reason.startswith("store_error")
    assert cache.stats().store_errors >= 2 and not cache.store_health().up
    assert cache.stats().entries == 0          # counts unknown while down, not an exception
    inner.fault = None
    cache.backend._down.clear()               # skip the real-time backoff of this test
    assert cache.lookup([U("How can I reset my password?")], session="s1").zone is Zone.HIT
    assert cache.store_health().up
    assert np.isfinite(cache.stats().hit_rate)
