"""The dashboard's counts under concurrent writers and readers (worker threads and the admin pool)."""

from __future__ import annotations

import threading

import pytest

from smartcache.decide import Zone
from smartcache.gateway.metrics import GatewayMetrics
from smartcache.gateway.telemetry import DecisionRecord, Telemetry


def record(status: str) -> DecisionRecord:
    return DecisionRecord(at=0.0, tenant="t", session="s", status=status, entry=None, similarity=None,
                          reasons=[], prompt_tokens=3, saved_tokens=1, latency_ms=1.0, question="q")


def test_counts_stay_whole_while_the_admin_reads() -> None:
    telemetry = Telemetry(GatewayMetrics(lambda: {}), bucket_s=1e-6, buckets=50)   # a bucket per request
    writers, per_writer = 4, 2000
    reader_errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        for _ in range(per_writer):
            telemetry.request_done(record("hit"), total_s=0.01, ttft_s=None)
            telemetry.lookup_done(Zone.HIT, 0.001)
            telemetry.polluted()

    def read() -> None:
        try:
            while not done.is_set():
                telemetry.timeline_json()
                telemetry.recent_json(50)
                telemetry.summary()
        except BaseException as exc:        # a timeline changing size under the reader
            reader_errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    threads = [threading.Thread(target=write) for _ in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    reader.join()
    summary = telemetry.summary()
    assert not reader_errors
    assert summary.by_status["hit"] == summary.pollution == writers * per_writer
    assert summary.saved_tokens == writers * per_writer and summary.prompt_tokens == 3 * writers * per_writer


def make_record(status: str, *, tenant: str = "t", prompt: int = 3, saved: int = 1) -> DecisionRecord:
    return DecisionRecord(at=0.0, tenant=tenant, session="s", status=status, entry=None, similarity=None,
                          reasons=[], prompt_tokens=prompt, saved_tokens=saved, latency_ms=1.0, question="q")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_each_bucket_has_its_lookup_quantiles_and_tokens() -> None:
    clock = Clock()
    telemetry = Telemetry(GatewayMetrics(lambda: {}), bucket_s=10.0, clock=clock)
    for ms in [2.0] * 98 + [40.0, 300.0]:
        telemetry.lookup_done(Zone.MISS, ms / 1000)
    telemetry.request_done(make_record("hit", prompt=100, saved=100), total_s=0.01, ttft_s=None)
    telemetry.request_done(make_record("half-hit", prompt=200, saved=150), total_s=0.01, ttft_s=None)
    telemetry.request_done(make_record("miss", prompt=100, saved=0), total_s=0.01, ttft_s=None)
    clock.now += 10.0                      # the next bucket: a bypass, never looked up
    telemetry.request_done(make_record("bypass", prompt=50, saved=0), total_s=0.01, ttft_s=None)
    first, second = telemetry.timeline_json()
    assert (first["t"], second["t"]) == (1000.0, 1010.0)
    assert first["lookups"] == 100 and first["lookup_p50_ms"] == pytest.approx(2.0, rel=0.045)
    assert first["lookup_p99_ms"] == pytest.approx(40.0, rel=0.045)       # nearest rank: the 99th of 100
    assert (first["hit"], first["half-hit"], first["miss"]) == (1, 1, 1)
    assert (first["prompt_tokens"], first["saved_tokens"]) == (400, 250)
    assert second["lookups"] == 0 and second["lookup_p50_ms"] is None and second["lookup_p99_ms"] is None
    assert (second["bypass"], second["prompt_tokens"], second["saved_tokens"]) == (1, 50, 0)


def test_buckets_past_the_window_are_dropped_lookups_included() -> None:
    clock = Clock()
    telemetry = Telemetry(GatewayMetrics(lambda: {}), bucket_s=1.0, buckets=3, clock=clock)
    for _ in range(5):
        telemetry.lookup_done(Zone.HIT, 0.001)
        clock.now += 1.0
    assert [row["t"] for row in telemetry.timeline_json()] == [1002.0, 1003.0, 1004.0]


def test_zones_per_tenant_busiest_first_and_a_bounded_number_of_names() -> None:
    from smartcache.gateway.telemetry import MAX_TENANTS

    telemetry = Telemetry(GatewayMetrics(lambda: {}))
    for status, tenant in [("hit", "acme"), ("miss", "acme"), ("half-hit", "acme/support"), ("miss", "globex"),
                           ("hit", "globex"), ("hit", "globex"), ("bypass", "globex")]:
        telemetry.request_done(make_record(status, tenant=tenant), total_s=0.01, ttft_s=None)
    rows = telemetry.tenants_json()
    assert [r["tenant"] for r in rows] == ["globex", "acme", "acme/support"]
    assert rows[0] == {"tenant": "globex", "hit": 2, "half-hit": 0, "miss": 1, "bypass": 1}
    for i in range(2 * MAX_TENANTS):
        telemetry.request_done(make_record("miss", tenant=f"made-up-{i}"), total_s=0.01, ttft_s=None)
    rows = telemetry.tenants_json()
    assert len(rows) == MAX_TENANTS + 1 and rows[-1]["tenant"] is None
    assert rows[-1]["miss"] == 2 * MAX_TENANTS - (MAX_TENANTS - 3)
    assert sum(r["miss"] for r in rows) == 2 + 2 * MAX_TENANTS
