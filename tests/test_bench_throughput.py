"""The pure parts of scripts/bench_throughput.py: a cell's figures, the table, who asks what.
No processes and no timing: the benchmark itself is `make bench-throughput`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from bench_throughput import (  # noqa: E402
    candidate_pairs, miss_text, render_table, session_pairs, summarise_cell, workload)
from load_test import Sample  # noqa: E402


def make_sample(status: str = "hit", ms: float = 10.0, reasons: str = "semantic_match", error: str | None = None):
    return Sample("bench", "error" if error else status, ms / 1000, False, reasons=reasons, error=error)


def test_cell_figures_count_answers_and_errors_apart():
    samples = ([make_sample(ms=float(i)) for i in range(1, 99)] + [make_sample("hit", 500.0, "exact_match")]
               + [make_sample("miss", 20.0, "similar_not_same")] + [make_sample(error="http 502: upstream")])
    cell = summarise_cell(samples, 2.0)
    assert cell["requests"] == 101 and cell["errors"] == 1
    assert cell["rps"] == 50.0                        # 100 answered in 2 s; the error is not throughput
    assert cell["p50_ms"] == 49.0 and cell["p99_ms"] == 98.0     # nearest rank: 1..98, 20 twice, 500
    assert cell["hit_share"] == 0.99 and cell["semantic_share"] == 0.98 and cell["forwarded_share"] == 0.01
    assert cell["statuses"] == {"hit": 99, "miss": 1}
    assert cell["error_examples"] == ["http 502: upstream"]


def test_a_cell_with_nothing_answered_has_no_latency():
    cell = summarise_cell([make_sample(error="ConnectError")], 1.0)
    assert cell["rps"] == 0.0 and cell["errors"] == 1 and cell["p50_ms"] is None


def _report(labels):
    cells = []
    for n, label in enumerate(labels):
        for scenario in ("exact", "miss"):
            for clients in (1, 16):
                cells.append({"gateway": label, "scenario": scenario, "clients": clients,
                              "rps": 100.0 * (n + 1) * clients, "p50_ms": 5.0, "p99_ms": 9.5 + n, "errors": n,
                              "hit_share": 1.0, "semantic_share": 0.0, "forwarded_share": 0.0})
    return {"gateways": [{"label": label, "rev": "abc", "workers": 1} for label in labels], "cells": cells,
            "scenarios": ["exact", "miss"], "clients": [1, 16], "store": "memory", "seconds": 8.0, "cpus": 2,
            "loadavg_before": [0.5, 0.5, 0.5], "loadavg_after": [1.0, 0.6, 0.5], "semantic_pairs": 3, "candidate_pairs": 9}


def test_table_of_one_gateway():
    table = render_table(_report(["new"]))
    lines = table.splitlines()
    assert lines[0] == "| scenario | clients | req/s | p50 ms | p99 ms | errors | as meant |"
    assert lines[2] == "| exact | 1 | 100.0 | 5.0 | 9.5 | 0 | 100% |"
    assert "| miss | 16 | 1600.0 | 5.0 | 9.5 | 0 | 0% |" in lines
    assert "Semantic pairs timed: 3 of 9" in table


def test_table_with_a_baseline_gives_new_over_old():
    report = _report(["new", "old"])
    table = render_table(report)
    assert "| exact | 16 | 1600.0 | 3200.0 | 0.50 | 5.0 / 5.0 | 9.5 / 10.5 | 0 / 1 | 100% / 100% |" in table
    assert len([line for line in table.splitlines() if line.startswith("| exact") or line.startswith("| miss")]) == 4


def test_sessions_cover_the_pairs_and_mix_languages():
    pairs = candidate_pairs()
    assert len(set(pairs)) == len(pairs)
    cjk = [any("\u4e00" <= ch <= "\u9fff" for ch in a) for a, _ in pairs[:8]]
    assert any(cjk) and not all(cjk)
    assert session_pairs(["p0", "p1", "p2"], 2, per=2) == [["p0", "p1"], ["p2", "p0"]]
    sessions = session_pairs(pairs, 64)
    assert {p for s in sessions for p in s} == set(pairs)


@pytest.mark.parametrize("scenario", ["exact", "semantic"])
def test_hit_workloads_stay_in_the_session_that_was_warmed(scenario):
    originals, paraphrases = [["a0", "a1"], ["b0"]], [[], ["b0'"]]
    nxt = workload(scenario, 4, originals, paraphrases, [])
    got = [nxt(k, i) for k in range(4) for i in range(3)]
    lists = originals if scenario == "exact" else paraphrases
    for session, text in got:
        assert text in lists[int(session.removeprefix("tp-s"))]
    if scenario == "semantic":           # session 0 has no paraphrase that hit: nobody asks there
        assert {s for s, _ in got} == {"tp-s1"}


def test_misses_never_repeat():
    pool = ["How do I sort a list in Go?", "内卷是什么意思"]
    nxt = workload("miss", 2, [], [], pool)
    texts = [nxt(k, i)[1] for k in range(2) for i in range(50)]
    assert len(set(texts)) == len(texts)
    assert miss_text(0, 1, pool) == "内卷是什么意思（工单100001）"
