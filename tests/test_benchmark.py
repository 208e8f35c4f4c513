"""The benchmark generator, calibration, replay and warm-up."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from smartcache import SmartCache, Zone, load_config
from smartcache.cli import main
from smartcache.eval import load_cases
from smartcache.eval.calibrate import calibrate_scores, thresholds_toml
from smartcache.eval.replay import Session, load_sessions, replay, warmup
from smartcache.errors import InvalidRequest

ROOT = Path(__file__).resolve().parents[1]


def build(tmp_path, seed=0, per_cell=2):
    out = tmp_path / f"bench-{seed}.jsonl"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_benchmark.py"), "--out", str(out),
                    "--seed", str(seed), "--per-cell", str(per_cell)], check=True, capture_output=True)
    return out


@pytest.mark.integration
def test_benchmark_is_deterministic_complete_and_valid(tmp_path):
    a, b = build(tmp_path), build(tmp_path, seed=0)
    assert a.read_bytes() == b.read_bytes()
    assert build(tmp_path, seed=1).read_bytes() != a.read_bytes()
    cases = load_cases(a)                         # every line is a valid CASES.md case
    assert len(cases) == 4 * 2 * 15 * 2
    cells = Counter((c.domain, c.lang) for c in cases)
    assert set(cells) == {(d, l) for d in ("travel", "support", "code", "writing") for l in ("zh", "en")}
    cats = Counter(c.category for c in cases)
    assert len(cats) == 15 and set(Counter(c.expect for c in cases)) == {"hit", "half_hit", "miss"}
    assert all(c.probe_session != c.session for c in cases if c.category in ("cross_session_personal", "global_faq"))


@pytest.mark.integration
def test_default_size_is_at_least_3000(tmp_path):
    lines = build(tmp_path, per_cell=27).read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 3000
    histories = [sum(1 for m in json.loads(l)["probe"]["messages"] if m["role"] == "assistant") for l in lines]
    assert min(histories) == 0 and max(histories) >= 8
    # One question has one answer: the same conversation cached in two cases holds the same answer
    # (a competing run serves one case's entry to another), and a probe's own answer is given
    # where the generator knows it, never one of its case's cached answers.
    answers: dict[str, set[str]] = {}
    own = 0
    for line in lines:
        case = json.loads(line)
        for item in case["cached"]:
            answers.setdefault(json.dumps(item["messages"], ensure_ascii=False), set()).add(item["answer"])
        if "answer" in case["probe"]:
            own += 1
            assert case["expect"] == "miss" and case["probe"]["answer"] not in {c["answer"] for c in case["cached"]}
    assert sum(len(v) > 1 for v in answers.values()) == 0
    assert sum(len(v) == 1 for v in answers.values()) < len([1 for l in lines for _ in json.loads(l)["cached"]])
    assert own > 500


def test_calibration_recipe_and_thresholds_file():
    rng = np.random.default_rng(0)
    neg, pos = rng.uniform(0.0, 0.8, 1000), rng.uniform(0.6, 1.0, 1000)
    cos = np.concatenate([neg, pos]).astype(np.float32)
    labels = np.array([0] * 1000 + [1] * 1000)
    result = calibrate_scores("toy", "general", cos, labels, target_rate=0.01)
    assert result.initial == pytest.approx(np.percentile(neg, 95), abs=1e-3)
    assert (neg >= result.target).mean() <= 0.01 and result.resolved
    assert (neg >= result.target - 0.002).mean() > 0.005          # the lowest threshold that meets it
    tight = calibrate_scores("toy", "general", cos, labels, target_rate=1e-4)
    assert not tight.resolved and tight.target >= neg.max()
    text = thresholds_toml("use-multilingual", [result], half_hit=0.45, context=0.8)
    path = Path(__file__).parent / "_thresholds_tmp.toml"
    try:
        path.write_text(text, encoding="utf-8")
        table = load_config(path).table_for("use-multilingual")
        assert table.for_domain("general", "low").hit == pytest.approx(result.target, abs=1e-4)
    finally:
        path.unlink()


def U(t):
    return {"role": "user", "content": t}


def A(t):
    return {"role": "assistant", "content": t}


@pytest.mark.integration
def test_replay_counts_hits_saved_tokens_and_pollution(encoder):
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    trip = "周末去杭州玩三天，帮我排个行程"
    PLAN = "第1天：西湖\n第2天：灵隐寺\n第3天：河坊街"
    sessions = [
        Session("a", [U(trip), A(PLAN), U("预算提高到一万"), A("升级版")]),
        Session("a", [U(trip), A(PLAN), U("不对，我说的是苏州"), A("苏州")]),
    ]
    stats = replay(cache, sessions, lambda msgs: 10 * len(msgs)).to_json()
    assert stats["turns"] == 4 and stats["zones"]["hit"] == 1
    assert stats["saved_tokens_by_hits"] == 10                 # the second session's first turn
    assert stats["saved_tokens_by_half_hits"] == 20            # "预算提高到一万" reuses its two-message history
    assert stats["cache_pollution"] == 1                       # the hit was followed by a correction


@pytest.mark.integration
def test_warmup_writes_recurring_scenarios_only(encoder, tmp_path):
    path = tmp_path / "logs.jsonl"
    faq = [U("退款一般多久到账？"), A("1-7个工作日。")]
    rows = [{"session": "x1", "messages": faq}, {"session": "x2", "messages": [U("退款一般多久到账?"), A("1-7个工作日。")]},
            {"session": "x3", "messages": [U("只问过一次的问题是什么"), A("一次")]}]
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    cache = SmartCache(encoder=encoder)
    report = warmup(cache, load_sessions(path))
    assert report["written"] == 1 and report["recurring"] == 1
    d = cache.lookup([U("退款申请后多长时间能到账？")], session="new-user")
    assert d.zone is Zone.HIT and d.answer == "1-7个工作日。"
    path.write_text('{"session": "x", "messages": [{"role": "wizard", "content": "hi"}]}\n', encoding="utf-8")
    with pytest.raises(InvalidRequest, match=":1:"):
        load_sessions(path)


def test_global_entry_with_history_needs_that_history(encoder):
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    history = [U("我买的蓝牙耳机坏了，订单48213"), A("可以申请保修。")]
    r = cache.store(history + [U("运费谁出？")], "质量问题，运费由商家承担。", session="s", scope="global")
    cache.promote(r.cache_id, to_global=True)
    assert cache.lookup(history + [U("运费谁出？")], session="other").zone is Zone.HIT
    other = [U("我想退掉不想要的电饭煲，订单51762"), A("支持七天无理由退货。")]
    assert cache.lookup(other + [U("运费谁出？")], session="other").zone is not Zone.HIT


@pytest.mark.integration
def test_eval_ablate_runs_each_variant(tmp_path, capsys):
    cases = build(tmp_path, per_cell=1)
    out = tmp_path / "r.json"
    assert main(["eval", "--cases", str(cases), "--systems", "smartcache", "--ablate", "tags,context_view",
                 "--json", str(out), "--report", str(tmp_path / "r.md")]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["systems"]) == {"smartcache", "smartcache-no_tags", "smartcache-no_context_view"}
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| smartcache-no_tags | overall |" in (tmp_path / "r.md").read_text(encoding="utf-8")
    assert main(["eval", "--cases", str(cases), "--ablate", "everything"]) == 2


@pytest.mark.integration
def test_calibrate_from_cases_writes_per_domain_thresholds(tmp_path):
    cases = build(tmp_path, seed=1, per_cell=1)
    out = tmp_path / "cal"
    assert main(["calibrate", "--cases", str(cases), "--target", "0.01", "--out", str(out)]) == 0
    table = load_config(out / "thresholds.toml").table_for("use-multilingual")
    assert {"travel", "support", "code", "writing"} <= set(table.by_domain)
    for limits in table.by_domain.values():
        assert limits.half_hit <= limits.hit <= 1.0
    assert "| travel | travel |" in (out / "calibration.md").read_text(encoding="utf-8")
    assert (out / "calibration.png").read_bytes()[:4] == b"\x89PNG"


def test_warmup_command_fills_the_sqlite_file_serve_reads(tmp_path, encoder, capsys):
    logs = tmp_path / "logs.jsonl"
    rows = [{"session": f"x{i}", "messages": [U("发票在哪里申请？"), A("在订单详情页点击“申请开票”。")]} for i in range(3)]
    logs.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    db = tmp_path / "cache.db"
    assert main(["warmup", "--sessions", str(logs), "--store-path", str(db)]) == 0
    assert json.loads(capsys.readouterr().out)["written"] == 1
    cache = SmartCache(load_config(store={"backend": "sqlite", "path": str(db)}), encoder=encoder)
    decision = cache.lookup([U("发票在哪里申请?")], session="someone")
    assert decision.zone is Zone.HIT and decision.answer == "在订单详情页点击“申请开票”。"
    assert main(["warmup", "--sessions", str(logs), "--store", "redis"]) == 2      # needs --redis-url
