"""A served hit's regenerate markers, written behind the request on a shared store
(``gateway.feedback._Behind``): read at once by the process that served the hit, by another
once written, taken only once, gone with the window, never written for a store in memory."""

from __future__ import annotations

import threading
import time

import pytest

from smartcache import SmartCache, load_config
from smartcache.gateway.controls import RequestControls
from smartcache.gateway.feedback import Answered, Feedback
from smartcache.gateway.telemetry import Telemetry


class _Quiet(Telemetry):
    def __init__(self) -> None:         # no metrics: these tests read markers only
        pass

    def polluted(self) -> None:
        self.was_polluted = True


def sqlite_cache(path, encoder) -> SmartCache:
    return SmartCache(load_config(store={"backend": "sqlite", "path": str(path)}), encoder=encoder)


def wait_written(cache: SmartCache, name: str, timeout: float = 10.0) -> str:
    until = time.monotonic() + timeout
    while (value := cache.get_marker(name)) is None:
        assert time.monotonic() < until, f"{name} was never written"
        time.sleep(0.01)
    return value


@pytest.fixture
def two_workers(tmp_path, encoder):
    """Two caches on one SQLite file, as two `serve` workers have."""
    a, b = sqlite_cache(tmp_path / "c.db", encoder), sqlite_cache(tmp_path / "c.db", encoder)
    yield a, b
    for cache in (a, b):
        cache.backend.inner.close()


CONTROLS = RequestControls(tenant="t", session="s1")


def test_the_serving_process_reads_its_marker_at_once_and_another_once_written(two_workers):
    a, b = two_workers
    mine, theirs = Feedback(a, _Quiet(), window_s=30), Feedback(b, _Quiet(), window_s=30)
    mine.hit_served("k1", CONTROLS, Answered(1.0, "entry-1", True))
    assert mine.is_repeat("k1")                              # not yet written, or written: either way
    wait_written(b, "answered:k1")
    assert theirs.is_repeat("k1")
    mine.close()


def test_a_marker_is_taken_once_wherever_it_waits(two_workers):
    a, b = two_workers
    mine, theirs = Feedback(a, _Quiet(), window_s=30), Feedback(b, _Quiet(), window_s=30)
    mine.hit_served("k2", CONTROLS, Answered(1.0, "entry-2", True))
    assert mine._recall("answered:k2", take=True) is not None
    mine.close()                                             # everything waiting is written (or was taken)
    assert mine._recall("answered:k2", take=True) is None
    assert theirs._recall("answered:k2", take=True) is None
    assert a.get_marker("answered:k2") is None


def test_a_marker_taken_while_it_is_written_is_taken_from_the_store_after(two_workers):
    a, _ = two_workers
    feedback = Feedback(a, _Quiet(), window_s=30)
    behind = feedback._behind
    release = threading.Event()
    real = a.set_markers

    def slow(values, ttl):
        release.wait(5)
        real(values, ttl)

    a.set_markers = slow
    feedback.hit_served("k3", CONTROLS, Answered(1.0, "entry-3", True))
    until = time.monotonic() + 5
    while not behind._writing:                                # the writer has it in hand
        assert time.monotonic() < until
        time.sleep(0.005)
    assert feedback._recall("answered:k3", take=True) is not None
    release.set()
    feedback.close()
    assert a.get_marker("answered:k3") is None                # written, then taken
    assert feedback._recall("answered:k3") is None


def test_a_window_of_zero_keeps_no_marker(two_workers):
    a, _ = two_workers
    feedback = Feedback(a, _Quiet(), window_s=0)
    feedback.hit_served("k4", CONTROLS, Answered(1.0, "entry-4", True))
    assert not feedback.is_repeat("k4")
    feedback.close()
    assert not feedback.is_repeat("k4")


def test_a_store_in_memory_writes_at_once(encoder):
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    feedback = Feedback(cache, _Quiet(), window_s=30)
    assert feedback._behind is None
    feedback.hit_served("k5", CONTROLS, Answered(1.0, "entry-5", True))
    assert cache.get_marker("answered:k5") is not None


def test_a_writer_closed_starts_again_on_the_next_hit(two_workers):
    a, _ = two_workers
    feedback = Feedback(a, _Quiet(), window_s=30)
    feedback.hit_served("k6", CONTROLS, Answered(1.0, "entry-6", True))
    feedback.close()
    feedback.hit_served("k7", CONTROLS, Answered(1.0, "entry-7", True))
    wait_written(a, "answered:k7")
    feedback.close()
    assert a.get_marker("answered:k6") is not None
