"""``serve --workers N`` without a server: how many workers. The gateway as processes:
``test_serve_workers.py``; its metrics: ``test_metrics_multiprocess.py``."""

from __future__ import annotations

import argparse
import os

import pytest

from smartcache.cli import build_parser
from smartcache.cli.serve import worker_count


def args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["serve", *argv])


def test_worker_count(capsys):
    cores = len(os.sched_getaffinity(0))
    assert worker_count(args()) == cores
    assert worker_count(args("--workers", "3")) == 3
    assert worker_count(args("--store", "memory")) == 1
    if cores > 1:
        assert "1 worker" in capsys.readouterr().err
    assert worker_count(args("--store", "memory", "--workers", "1")) == 1
    with pytest.raises(ValueError, match="cannot be shared"):
        worker_count(args("--store", "memory", "--workers", "2"))
    with pytest.raises(ValueError):
        worker_count(args("--workers", "0"))


def test_serve_refuses_a_memory_store_with_workers(capsys):
    from smartcache.cli import main
    assert main(["serve", "--store", "memory", "--workers", "2"]) == 2
    assert "--store memory" in capsys.readouterr().err


def test_the_admin_view_adds_up_every_workers_published_figures(tmp_path, monkeypatch):
    """Each worker publishes its Telemetry; any worker's view is the sum (serve --workers N)."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    from smartcache.decide import Zone
    from smartcache.gateway.metrics import GatewayMetrics
    from smartcache.gateway.shared_telemetry import SharedTelemetry
    from smartcache.gateway.telemetry import DecisionRecord, Telemetry

    def worker(name: str, statuses: list[str], at: float) -> SharedTelemetry:
        t = Telemetry(GatewayMetrics(lambda: {}), clock=lambda: 1000.0)
        for i, status in enumerate(statuses):
            t.lookup_done(Zone.HIT if status == "hit" else Zone.MISS, 0.002 * (i + 1))
            t.request_done(DecisionRecord(at=at + i, tenant=name, session="s", status=status, entry=None,
                                          similarity=None, reasons=[], prompt_tokens=10, saved_tokens=5,
                                          latency_ms=1.0, question=f"{name}{i}"), total_s=0.01, ttft_s=None)
        shared = SharedTelemetry(t, tmp_path)
        shared.name = f"{name}.json"            # two workers in one test process
        return shared

    a, b = worker("a", ["hit", "miss"], 10.0), worker("b", ["hit", "hit", "miss"], 20.0)
    a.publish()
    b.publish()
    view = a.view()
    assert view.summary().by_status == {"hit": 3, "half-hit": 0, "miss": 2, "bypass": 0}
    assert view.summary().saved_tokens == 25
    (bucket,) = view.timeline_json()
    assert bucket["hit"] == 3 and bucket["lookups"] == 5 and bucket["lookup_p99_ms"] is not None
    assert {row["tenant"]: row["hit"] for row in view.tenants_json()} == {"a": 1, "b": 2}
    assert [r["question"] for r in view.recent_json(10)] == ["b2", "b1", "b0", "a1", "a0"]    # newest first
    assert a.own.summary().requests == 2                  # a worker's own figures stay its own
