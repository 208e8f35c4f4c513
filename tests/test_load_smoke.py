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
