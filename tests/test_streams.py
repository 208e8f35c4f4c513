"""Stream replay (STREAMS.md): loading, the systems, scoring with intervals, the CLI report."""

from __future__ import annotations

import json

import pytest

from smartcache.cli import main
from smartcache.errors import InvalidRequest
from smartcache.eval.streams import (
    CosineStream, ExactStream, Rate, SmartCacheStream, load_stream, replay_stream,
)
from smartcache.cache import SmartCache
from smartcache.config import load_config


def line(i, text, key, *, t=None, tenant="t0", session=None, category="first", **extra) -> dict:
    row = {"id": f"r{i}", "t": float(i if t is None else t), "tenant": tenant, "lang": "en", "source": "s",
           "category": category, "messages": [{"role": "user", "content": text}], "answer_key": key,
           "answer": f"answer {key}", **extra}
    if session:
        row["session"] = session
    return row


def write(path, rows):
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return path


def test_load_stream_names_the_bad_line(tmp_path):
    good = [line(0, "a", "k0"), line(1, "b", "k1")]
    assert [r.id for r in load_stream(write(tmp_path / "s.jsonl", good))] == ["r0", "r1"]
    assert load_stream(write(tmp_path / "s.jsonl", good))[0].session == "r0"     # default: the id
    for bad, message in ((good + [line(2, "c", "k2", t=0.5)], "t runs backwards"),
                         (good + [dict(line(2, "c", "k2"), scope="world")], "scope"),
                         (good + [{"id": "x", "t": 3}], "missing"),
                         (good + [good[0]], "duplicate id")):
        with pytest.raises(InvalidRequest, match=":3: .*" + message):
            load_stream(write(tmp_path / "bad.jsonl", bad))


def test_rate_interval_brackets_the_rate():
    r = Rate.of(3, 100)
    assert r.lower < r.value == 0.03 < r.upper
    assert Rate.of(0, 0).upper == 1.0 and Rate.of(5, 5).upper == 1.0


def test_exact_serves_repeats_and_scores_the_key(tmp_path):
    rows = [line(0, "How do I reset my password?", "k0"), line(1, "how do I reset  my password?", "k0"),
            line(2, "What is the refund policy?", "k1"), line(3, "What is the refund policy?", "k9"),
            line(4, "What is the refund policy?", "k1", tenant="t1")]
    report = replay_stream(load_stream(write(tmp_path / "s.jsonl", rows)), [ExactStream()], window=2)
    o = report["systems"]["exact"]["overall"]
    # r1: a normalised repeat, right; r3: the same text with another key, served wrong; r4: another tenant
    assert (o["n"], o["hits"], o["wrong"], o["engine_calls"]) == (5, 2, 1, 3)
    assert o["error_rate"] == 0.2 and o["error_rate_lower95"] < 0.2 < o["error_rate_upper95"]
    assert len(report["systems"]["exact"]["windows"]) == 3
    assert report["systems"]["exact"]["by_lang"]["en"]["n"] == 5


def test_smartcache_scopes_on_the_streams_clock(tmp_path, encoder):
    rows = [line(0, "How do I reset my password?", "k0", session="a"),
            line(1, "How do I reset my password?", "k0", session="b", t=10.0),
            line(2, "How do I reset my password?", "k0", session="b", t=100.0)]
    requests = load_stream(write(tmp_path / "s.jsonl", rows))

    def make(clock):
        return SmartCache(load_config(store={"backend": "memory"}), encoder=encoder, clock=clock)
    as_is = SmartCacheStream(make, scope="stream", promote_at_once=False)
    pooled = SmartCacheStream(make, "smartcache@global", scope="global")
    one = SmartCacheStream(make, "smartcache@session", scope="session")
    report = replay_stream(requests, [as_is, pooled, one])
    # stream scope: r1 is another session; r2 comes after b's own answer waited out its window (30 s)
    assert [report["systems"][n]["overall"]["hits"] for n in ("smartcache", "smartcache@global",
                                                              "smartcache@session")] == [1, 2, 2]
    assert all(s["overall"]["wrong"] == 0 for s in report["systems"].values())


def test_cosine_baseline_serves_above_its_threshold(tmp_path, encoder):
    rows = [line(0, "How do I reset my password?", "k0"), line(1, "How can I reset my password", "k0"),
            line(2, "Where is the nearest train station?", "k1")]
    report = replay_stream(load_stream(write(tmp_path / "s.jsonl", rows)), [CosineStream(encoder, 0.8)])
    assert report["systems"]["cosine@0.8"]["overall"]["hits"] == 1


@pytest.mark.integration
def test_replay_stream_command_writes_json_markdown_and_plot(tmp_path, capsys):
    rows = [line(i, text, key) for i, (text, key) in enumerate(
        [("How do I reset my password?", "k0"), ("How do I reset my password?", "k0"),
         ("怎么修改绑定的手机号", "k1"), ("怎么修改绑定的手机号", "k1")])]
    stream = write(tmp_path / "s.jsonl", rows)
    out, md = tmp_path / "r.json", tmp_path / "r.md"
    assert main(["replay", "--stream", str(stream), "--systems", "smartcache@global,exact,cosine@0.95",
                 "--json", str(out), "--report", str(md)]) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["systems"]) == {"smartcache@global", "exact", "cosine@0.95"}
    assert report["systems"]["exact"]["overall"]["hits"] == 2
    assert "| exact |" in md.read_text(encoding="utf-8")
    assert md.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert main(["replay", "--stream", str(stream), "--systems", "nonsense"]) == 2


def test_the_learning_cache_shares_what_three_sessions_were_answered_alike(tmp_path, encoder):
    from smartcache.cli.replay import make_stream_systems

    question = "How do I reset my password?"
    rows = [line(i, question, "k0", session=f"u{i}", t=float(i)) for i in range(6)]
    requests = load_stream(write(tmp_path / "s.jsonl", rows))
    config = load_config(store={"backend": "memory"})
    systems = make_stream_systems(["static", "smartcache", "smartcache:0.02"], config, encoder)
    assert [s.settings["learning"] for s in systems] == [False, True, True]
    assert systems[2].settings["error_bound"] == 0.02
    report = replay_stream(requests, systems)
    # Six users ask word for word, with no scope: the packaged path keeps each answer in its
    # session; learning shares it once three sessions got it alike, so users 4-6 are served.
    assert report["systems"]["static"]["overall"]["hits"] == 0
    learning = report["systems"]["smartcache"]
    assert learning["overall"]["hits"] == 3 and learning["overall"]["wrong"] == 0
    assert learning["learned"]["t0"]["shared"] == 1 and "learned" in report["systems"]["static"]
    assert report["systems"]["static"]["learned"] == {}
    with pytest.raises(ValueError):
        make_stream_systems(["smartcache:2"], config, encoder)


def test_the_multiturn_stream_gives_one_conversation_one_answer(tmp_path):
    """The dev sets write an answer per case; in the stream the same words (as the exact path
    reads them) cached by two cases carry one answer key, so serving either is right. Cases
    whose answers hold for one session or one moment keep their own."""
    import random
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "scripts"))
    try:
        import build_streams
    finally:
        sys.path.remove(str(root / "scripts"))
    dev = tmp_path / "devset"
    dev.mkdir()
    cached = [{"messages": [{"role": "user", "content": "How many teaspoons are in a tablespoon?"}],
               "answer": "Three."}]
    again = [{"messages": [{"role": "user", "content": "how many teaspoons are in a tablespoon"}],
              "answer": "There are 3 teaspoons in one tablespoon."}]
    probe = [{"role": "user", "content": "How many tablespoons are in a teaspoon?"}]
    cases = [
        {"id": "a", "lang": "en", "category": "paraphrase", "cached": cached, "probe": {"messages": probe},
         "expect": "miss"},
        {"id": "b", "lang": "en", "category": "filler", "cached": again, "probe": {"messages": again[0]["messages"]},
         "expect": "hit"},
        {"id": "c", "lang": "en", "category": "time_sensitive", "cached": again, "probe": {"messages": probe},
         "expect": "miss"},
        {"id": "d", "lang": "en", "category": "entity_change", "expect": "miss",
         "cached": [{"messages": [{"role": "user", "content": "How many cups are in a pint?"}], "answer": "Two."}],
         "probe": {"messages": cached[0]["messages"]}},
    ]
    (dev / "x-a.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n", encoding="utf-8")
    rows = build_streams.multiturn(dev, random.Random(0))
    first = [r for r in rows if r["category"] == "cached"]
    keys = {r["answer_key"] for r in first if r["answer"] == "Three."}
    assert len(keys) == 1
    key = keys.pop()
    assert [r["answer_key"] for r in first].count(key) == 2          # a's and b's, not c's (time-sensitive)
    assert next(r for r in rows if r["category"] == "hit:filler")["answer_key"] == key
    probes = {r["category"]: (r["answer_key"], r["answer"]) for r in rows if r["category"].startswith("miss:")}
    assert probes["miss:paraphrase"][0] == "x-a:a:probe" and probes["miss:time_sensitive"][0] == "x-a:c:probe"
    assert probes["miss:entity_change"] == (key, "Three.")    # d's probe asks what a caches: a's answer
    assert all(r["answer"] for r in rows)


def test_a_replay_saves_what_each_learning_system_observed(tmp_path):
    """``--save-observations``: the labels' evidence rows, in the store's format, one file a
    learning system and tenant (what ``smartcache train --observations`` reads)."""
    from smartcache.decide.verifier import TreeVerifier
    from smartcache.learn.observations import decode

    rows = [line(i, text, key, session="s") for i, (text, key) in enumerate(
        [("How do I deploy this service?", "k0"), ("How do I migrate this service?", "k1"),
         ("How do I monitor this service?", "k2")])]
    stream = write(tmp_path / "s.jsonl", rows)
    assert main(["replay", "--stream", str(stream), "--systems", "smartcache,exact",
                 "--save-observations", str(tmp_path / "obs")]) == 0
    [saved] = sorted((tmp_path / "obs").iterdir())
    assert saved.name == "smartcache.t0.json"
    labelled = decode(saved.read_text(encoding="utf-8"), TreeVerifier.load().features)
    assert len(labelled) == 2 and not any(r.correct for r in labelled)
