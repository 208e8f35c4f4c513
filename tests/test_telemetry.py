"""The dashboard's counts under concurrent writers and readers (worker threads and the admin pool)."""

from __future__ import annotations

import threading

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
