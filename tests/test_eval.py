"""The evaluation harness: CASES.md parsing, scoring arithmetic, baselines, and the eval command."""

from __future__ import annotations

import json

import pytest

from smartcache import SmartCache, load_config
from smartcache.cli import main
from smartcache.errors import InvalidRequest
from smartcache.eval import (ExactPrefixSystem, LastMessageSystem, Outcome, SmartCacheSystem, evaluate,
                             load_cases, oracle_threshold, parse_case, score)

SYS = {"role": "system", "content": "你是一个旅行助手。"}


def U(t):
    return {"role": "user", "content": t}


def A(t):
    return {"role": "assistant", "content": t}


TRIP = "周末去杭州玩三天，预算五千以内，帮我排个行程"
PLAN = "第1天：西湖、断桥\n第2天：灵隐寺\n第3天：河坊街。合计约4800元。"
CASES = [
    {"id": "p1", "lang": "zh", "category": "paraphrase", "cached": [{"messages": [SYS, U(TRIP)], "answer": PLAN}],
     "probe": {"messages": [SYS, U("周末去杭州玩3天，预算5000以内，帮我排个行程！")]}, "expect": "hit"},
    {"id": "h1", "lang": "zh", "category": "constraint_change",
     "cached": [{"messages": [SYS, U(TRIP)], "answer": PLAN}],
     "probe": {"messages": [SYS, U(TRIP), A(PLAN), U("预算提高到一万")]}, "expect": "half_hit"},
    {"id": "x1", "lang": "zh", "category": "cross_session", "probe_session": "someone-else",
     "cached": [{"messages": [SYS, U(TRIP)], "answer": PLAN}],
     "probe": {"messages": [SYS, U(TRIP)]}, "expect": "miss"},
    {"id": "c1", "lang": "en", "category": "same_last_message_other_context",
     "cached": [{"messages": [U("I'm staying at the Hilton."), A("Noted."), U("Does the hotel have breakfast?")],
                 "answer": "The Hilton serves breakfast 6-10."}],
     "probe": {"messages": [U("I'm staying at the Marriott."), A("Noted."), U("Does the hotel have breakfast?")]},
     "expect": "miss"},
]


@pytest.fixture
def cases(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in CASES) + "\n", encoding="utf-8")
    return load_cases(path), path


def test_bad_cases_are_rejected_with_their_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(CASES[0], ensure_ascii=False) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(InvalidRequest, match=":2:"):
        load_cases(path)
    with pytest.raises(InvalidRequest, match="expect"):
        parse_case({**CASES[0], "expect": "maybe"})
    with pytest.raises(InvalidRequest, match="expect_index"):
        parse_case({**CASES[0], "expect_index": 3})
    with pytest.raises(InvalidRequest, match="at least one cached"):
        parse_case({**CASES[0], "cached": []})


def test_scoring_follows_cases_md(cases):
    loaded, _ = cases
    outcomes = [Outcome("hit", PLAN), Outcome("hit", PLAN), Outcome("miss", None), Outcome("half_hit", None)]
    result = score(loaded, outcomes)["overall"]
    # 1 of 1 positives hit; 1 false hit (h1 served) over 3 negatives; 2 served, 1 correct.
    bounds = {k: result.pop(k) for k in ("hit_recall_lower95", "false_hit_rate_upper95")}
    assert result == {"n": 4, "positives": 1, "hits": 1, "false_hits": 1, "hit_recall": 1.0, "false_hit_rate": 1 / 3,
                      "precision_at_hit": 0.5, "zone_accuracy": 0.5}
    # Wilson lower bound of 1 of 1, Clopper-Pearson upper bound of 1 of 3 (one-sided 95 %).
    assert bounds == {"hit_recall_lower95": pytest.approx(0.2699, abs=1e-3),
                      "false_hit_rate_upper95": pytest.approx(0.8647, abs=1e-3)}
    wrong_entry = score(loaded[:1], [Outcome("hit", "another answer")])["overall"]
    assert wrong_entry["hits"] == 0 and wrong_entry["false_hits"] == 1


def test_the_probes_own_answer_is_right_wherever_it_is_served():
    """``probe.answer``: what the engine answers the probe itself. A competing run may serve
    it from another case's entry; that is no false hit. Anything else served still is."""
    marriott = "The Marriott serves breakfast 7-11."
    case = parse_case({**CASES[3], "probe": {**CASES[3]["probe"], "answer": marriott}})
    assert case.serves_right(marriott) and not case.serves_right("The Hilton serves breakfast 6-10.")
    assert not case.serves_right(None)
    result = score([case, case], [Outcome("hit", marriott), Outcome("hit", "The Hilton serves breakfast 6-10.")])
    overall = result["overall"]
    assert overall["false_hits"] == 1 and overall["precision_at_hit"] == 0.5
    # Zones stay the labels': the case expected a miss.
    assert overall["zone_accuracy"] == 0.0
    with pytest.raises(InvalidRequest, match="must not be served"):
        parse_case({**CASES[3], "probe": {**CASES[3]["probe"], "answer": "The Hilton serves breakfast 6-10."}})
    with pytest.raises(InvalidRequest, match="differs from the expected hit"):
        parse_case({**CASES[0], "probe": {**CASES[0]["probe"], "answer": "another plan"}})
    with pytest.raises(InvalidRequest, match="must be a string"):
        parse_case({**CASES[3], "probe": {**CASES[3]["probe"], "answer": 3}})


def test_oracle_threshold_is_the_best_recall_under_the_cap(cases):
    loaded, _ = cases
    outcomes = [Outcome("miss", None, 0.95, PLAN), Outcome("miss", None, 0.97, PLAN),
                Outcome("miss", None, 0.5, PLAN), Outcome("miss", None, 0.2, "x")]
    best = oracle_threshold(loaded, outcomes)
    assert best["threshold"] is None and best["hit_recall"] == 0.0     # h1 outscores p1: nothing is safe
    best = oracle_threshold(loaded, outcomes, max_false_hit_rate=0.34)
    assert best["hit_recall"] == 1.0 and best["threshold"] == pytest.approx(0.95)


def test_smartcache_against_the_baselines_on_the_same_cases(cases, encoder):
    loaded, _ = cases
    report = evaluate([SmartCacheSystem(lambda: SmartCache(load_config(), encoder=encoder)), ExactPrefixSystem(),
                       LastMessageSystem(encoder, 0.8)], loaded)
    smart = report["systems"]["smartcache"]["overall"]
    assert smart["hit_recall"] == 1.0 and smart["false_hits"] == 0 and smart["zone_accuracy"] == 1.0
    last = report["systems"]["last_message"]
    # GPTCache-style: the same last message in another context, and another session, are served.
    assert last["by_category"]["same_last_message_other_context"]["false_hits"] == 1
    assert last["by_category"]["cross_session"]["false_hits"] == 1
    assert "oracle_at_1pct_false_hits" in last
    assert report["systems"]["exact_prefix"]["overall"]["hit_recall"] == 0.0


def test_eval_command_prints_tables_and_writes_the_json_contract(cases, tmp_path, capsys):
    _, path = cases
    out = tmp_path / "report.json"
    assert main(["eval", "--cases", str(path), "--json", str(out), "--systems", "smartcache,last_message"]) == 0
    printed = capsys.readouterr().out
    assert "| smartcache | overall |" in printed and "| last_message | zh |" in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report) >= {"systems", "encoder", "cases", "seconds"}
    for key in ("n", "hits", "false_hits", "hit_recall", "false_hit_rate", "precision_at_hit", "zone_accuracy"):
        assert key in report["systems"]["smartcache"]["overall"]
    assert set(report["systems"]["smartcache"]["by_lang"]) == {"zh", "en"}
    assert main(["eval", "--cases", str(path), "--systems", "nope"]) == 2
    assert main(["eval", "--cases", str(tmp_path / "absent.jsonl")]) == 2


def test_competing_cases_share_one_session_or_the_global_pool(cases, encoder):
    from smartcache.eval.harness import SHARED_SESSION, compete
    loaded, _ = cases
    reset = parse_case({"id": "r1", "expect": "miss", "cached": [{"messages": [U("我想订一张去上海的机票")],
                                                                   "answer": "好的，哪天出发？"}],
                        "probe": {"messages": [U("我想订一张去上海的机票"), A("好的，哪天出发？"), U("算了，重新开始")]}})
    ordered = [reset] + list(loaded)      # the reset is probed first and must not wipe the others
    in_session = compete(ordered, "session")
    assert {c.session for c in in_session} == {SHARED_SESSION}
    # the scoping case keeps its shape: entries in the shared session, the probe from another
    assert [c.probe_session for c in in_session if c.id == "x1"] == ["probe:x1"]
    pooled = compete(ordered, "global")
    assert [c.scope for c in pooled] == ["global", "global", "global", "session", "global"]
    system = SmartCacheSystem(lambda: SmartCache(load_config(), encoder=encoder))
    for where in ("session", "global"):
        report = evaluate([system], ordered, competing=where)
        by = report["systems"]["smartcache"]["by_category"]
        assert by["paraphrase"]["hits"] == 1, where
        # In the global pool the scoping case's probe meets p1's and h1's entries, the same
        # question with the same answer: served, and counted false by labels written for one
        # case at a time. A competing run's false hits are an upper bound for that reason.
        assert by["cross_session"]["false_hits"] == (where == "global"), where
        assert report["systems"]["smartcache"]["overall"]["false_hits"] == (where == "global"), where
    with pytest.raises(ValueError):
        compete(ordered, "everywhere")


def test_competing_another_case_s_answer_to_the_very_same_request_is_right(encoder):
    from smartcache.eval.harness import compete
    austria, australia = "What is the capital of Austria?", "What is the capital of Australia?"
    vienna, canberra = "Vienna is the capital of Austria.", "Canberra is the capital of Australia."

    def case(id_, cached, answer, probe, category="entity_change"):
        return parse_case({"id": id_, "expect": "miss", "category": category, "lang": "en",
                           "cached": [{"messages": [U(cached)], "answer": answer}], "probe": {"messages": [U(probe)]}})
    # Each case caches one capital and asks the other: the other case's entry is that very question.
    weather = "What's the weather in Vienna today?"
    cases = [case("a", australia, canberra, austria), case("b", austria, vienna, australia),
             case("c", weather, "Sunny, 21 °C.", weather, category="time_sensitive"),
             case("d", "How do I get to Vienna?", "By train from Munich.", weather, category="related_task")]
    competed = {c.id: c for c in compete(cases, "session")}
    assert competed["a"].also_right == (vienna,) and competed["b"].also_right == (canberra,)
    assert competed["c"].also_right == () and competed["d"].also_right == ()     # c's holds for its moment only
    # A case's own answers are not "another case's"; a case testing session scoping keeps its
    # own; an answer written under another knowledge base is not this request's.
    own = parse_case({"id": "e", "expect": "miss", "category": "scope_change", "session": "s1",
                      "cached": [{"messages": [U("What is my order status?")], "answer": "Order 7 ships Monday."}],
                      "probe": {"messages": [U("What is my order status?")], "session": "s2"}})
    kb1 = parse_case({"id": "f", "expect": "miss", "category": "paraphrase",
                      "cached": [{"messages": [U("What is the refund window?")], "answer": "14 days.",
                                  "versions": {"kb": "1"}}],
                      "probe": {"messages": [U("How long is the warranty?")]}, "versions": {"kb": "2"}})
    kb2 = parse_case({"id": "g", "expect": "miss", "category": "paraphrase", "versions": {"kb": "2"},
                      "cached": [{"messages": [U("How long is the warranty?")], "answer": "Two years."}],
                      "probe": {"messages": [U("What is the refund window?")]}})
    itself = parse_case({"id": "h", "expect": "miss", "category": "regenerate",
                         "cached": [{"messages": [U("Tell me a joke.")], "answer": "Why did the chicken…"}],
                         "probe": {"messages": [U("Tell me a joke.")]}})
    more = {c.id: c for c in compete([own, kb1, kb2, itself], "global")}
    assert more["e"].also_right == () and more["g"].also_right == () and more["h"].also_right == ()
    assert more["f"].also_right == ("Two years.",)
    assert competed["a"].serves_right(vienna) and not competed["a"].serves_right(canberra)
    report = evaluate([SmartCacheSystem(lambda: SmartCache(load_config(), encoder=encoder))], cases,
                      competing="session")
    result = report["systems"]["smartcache"]
    assert result["by_rule"]["entity_change"] == {"exact_match": 2}     # both served the other's entry
    assert result["by_category"]["entity_change"]["false_hits"] == 0
