"""Metrics of a gateway of several worker processes (``serve --workers N``): prometheus_client's
multiprocess files, summed by whichever worker renders /metrics."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


WORKER = textwrap.dedent("""
    import sys
    from smartcache.gateway.metrics import GatewayMetrics
    from smartcache.store.guard import StoreHealth
    n = int(sys.argv[1])
    m = GatewayMetrics(lambda: {"ready": 7}, lambda: StoreHealth(True, 0.0, None, n), lambda: (n, 1, 0))
    m.requests.labels("hit").inc(n)
    m.lookups.labels("hit").inc(n)
    m.lookups.labels("miss").inc(10 - n)
    m.latency.labels("hit").observe(0.01)
    m.publish()
    if len(sys.argv) > 2:
        sys.stdout.write(m.render().decode())
""")


def test_metrics_are_summed_over_worker_processes(tmp_path):
    """Two processes count into one PROMETHEUS_MULTIPROC_DIR; either one's render shows the sums."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", WORKER, "3"], env=env, check=True)
    text = subprocess.run([sys.executable, "-c", WORKER, "4", "render"], env=env, check=True,
                          capture_output=True, text=True).stdout
    lines = set(text.splitlines())
    assert 'smartcache_requests_total{status="hit"} 7.0' in lines
    assert 'smartcache_request_seconds_count{status="hit"} 2.0' in lines
    assert "smartcache_hit_rate 0.35" in lines                       # 7 hits of 20 lookups
    assert "smartcache_store_failures_total 7.0" in lines            # published per process, summed
    assert "smartcache_learned_observations_total 7.0" in lines and "smartcache_checks_total 2.0" in lines
    assert 'smartcache_entries{state="ready"} 7.0' in lines           # the shared store, read once
    assert "smartcache_store_up 1.0" in lines
    assert not any(line.startswith("smartcache_hit_rate{") for line in lines)     # no per-process rows


def test_one_process_renders_its_own_registry(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    from smartcache.gateway.metrics import GatewayMetrics
    m = GatewayMetrics(lambda: {"ready": 1})
    m.publish()         # a no-op
    m.requests.labels("miss").inc()
    assert 'smartcache_requests_total{status="miss"} 1.0' in m.render().decode()
