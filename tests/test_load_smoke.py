"""LOAD SMOKE TEST: scripts/load_test.py for about 5 s with 4 sessions against the load-test
upstream (scripts/load_upstream.py), both processes on free 127.0.0.1 ports.

It checks the harness and the gateway's bookkeeping under concurrency, not speed: 0 errors
and 0 lost writes (every forwarded answer counted in ``smartcache_stores_total``). The script
stops itself after its round; should it hang, it gets SIGTERM (it then stops its children)
and the test fails. About 30-60 s in all, most of it the gateway loading its encoder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 240      # start-up on a busy 2-core machine included


@pytest.mark.load
def test_load_smoke_no_errors_no_lost_writes(tmp_path):
    out = tmp_path / "load-smoke.json"
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "load_test.py"), "--sessions", "4",
                             "--duration", "5", "--rounds", "1", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed, _ = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.terminate()          # SIGTERM: the script stops the gateway and the upstream first
        printed, _ = proc.communicate(timeout=60)
        pytest.fail(f"load_test.py did not stop within {LIMIT_S} s:\n{printed[-3000:]}")
    assert proc.returncode == 0, printed[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    (r,) = report["rounds"]
    assert r["requests"] > 0 and r["errors"] == 0, r["error_examples"]
    assert r["lost_writes"] == 0, (r["forwarded_answers"], r["stores_by_outcome"])
    assert r["forwarded_answers"] > 0 and r["stores_by_outcome"].get("stored", 0) > 0
    assert set(r["mix"]) <= {"hit", "half-hit", "miss", "bypass"}


# The harness's arithmetic, without processes.
sys.path.insert(0, str(ROOT / "scripts"))


def test_server_timing_header_is_read_by_name():
    from load_test import server_timing

    assert server_timing("lookup;dur=1.9, engine;dur=3") == 1.9
    assert server_timing('engine;dur=3, lookup;desc="cache";dur=0.25') == 0.25
    assert server_timing("engine;dur=3") is None and server_timing(None) is None


def test_quantiles_from_buckets_interpolate_as_prometheus_does():
    from load_report import estimate_quantiles, percentiles

    buckets = {0.001: 0.0, 0.0025: 8.0, 0.005: 10.0, float("inf"): 10.0}
    q = estimate_quantiles(buckets, (0.5, 0.99))
    assert q[0.5] == pytest.approx(0.001 + 0.0015 * 5 / 8)
    assert q[0.99] == pytest.approx(0.0025 + 0.0025 * (9.9 - 8) / 2)
    assert estimate_quantiles({0.01: 0.0, float("inf"): 4.0}, (0.5,)) == {0.5: 0.01}    # past the last bound
    assert estimate_quantiles({}, (0.5,)) == {0.5: None}
    assert percentiles([0.010, 0.012, 0.030]) == {"n": 3, "p50_ms": 12.0, "p99_ms": 30.0}
