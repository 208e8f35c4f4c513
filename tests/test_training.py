"""Training the verifier: labels from cases, source families held out, the bound and the
operating point, and `smartcache train` end to end on a tiny set."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smartcache import SmartCache, load_config
from smartcache.decide.verifier import DIFFERENT, MODIFY, SAME, TreeVerifier
from smartcache.eval.cases import parse_case
from smartcache.eval.training import (
    Harvest, case_outcomes, family_of, harvest, operating_points, tally, upper_bound, wilson_lower,
)
from conftest import A, U


def case(cid, cached, probe, expect, history=(), probe_history=None, **extra):
    hist = [m for u, a in history for m in (U(u), A(a))]
    probe_hist = hist if probe_history is None else [m for u, a in probe_history for m in (U(u), A(a))]
    return parse_case({"id": cid, "cached": [{"messages": hist + [U(cached)], "answer": f"ans {cid}"}],
                       "probe": {"messages": probe_hist + [U(probe)]}, "expect": expect, **extra})


@pytest.fixture
def rules_only(encoder):
    return SmartCache(load_config(use_verifier=False), encoder=encoder)


def test_harvest_labels_candidates_as_a_lookup_would_find_them(rules_only):
    first = "Plan a 3-day trip to Kyoto"
    cases = [
        case("p", "How do I reset my password?", "How can I reset my password", "hit"),
        case("n", "How do I deploy this service?", "How do I monitor this service?", "miss"),
        case("h", "预算提高到一万", "预算提高到一万", "half_hit"),
        case("q", "周末去杭州玩3天", "周末去杭州玩5天", "miss"),              # a replaced number: vetoed
        case("t", "今天天气怎么样", "今天天气如何", "miss"),                   # time-sensitive: the gate
        case("x", first, first, "hit", probe_session="someone-else"),       # another session: nothing found
    ]
    h = harvest(cases, "unit", rules_only)
    assert [m["id"] for m in h.cases] == ["p", "n", "h", "q", "t", "x"]
    labels = {h.cases[c]["id"]: y for c, y in zip(h.case, h.y)}
    assert labels == {"p": SAME, "n": DIFFERENT, "h": MODIFY}
    assert h.vetoes["quantity_change"] == [0, 1]
    assert {h.cases[c]["id"]: t for c, t in zip(h.case, h.target)} == {"p": True, "n": False, "h": True}


def test_a_harvest_survives_saving(rules_only, tmp_path):
    h = harvest([case("p", "How do I reset my password?", "How can I reset my password", "hit")], "unit", rules_only)
    h.save(tmp_path / "h.npz")
    again = Harvest.load(tmp_path / "h.npz")
    assert again.cases == h.cases and again.y == h.y and np.allclose(np.stack(again.x), np.stack(h.x))
    assert again.texts == h.texts and len(h.texts) == len(h.y) == 1


def test_an_older_harvest_keeps_its_turns_or_is_refused(rules_only, tmp_path):
    h = harvest([case("p", "How do I reset my password?", "How can I reset my password", "hit")], "unit", rules_only)
    h.save(tmp_path / "h.npz")
    with np.load(tmp_path / "h.npz") as data:
        arrays = {k: data[k] for k in data.files if k != "texts"}
    # Its rows kept what the cross-encoder read: (probe turn, its dependency, cached turn, its dependency).
    sides = [(probe, "", cached, "") for probe, cached in h.texts]
    np.savez(tmp_path / "sides.npz", **arrays, sides=np.asarray(json.dumps(sides)))
    assert Harvest.load(tmp_path / "sides.npz").texts == h.texts
    np.savez(tmp_path / "older.npz", **arrays)
    with pytest.raises(ValueError, match="harvest again"):
        Harvest.load(tmp_path / "older.npz")


def test_families_group_a_source_with_its_placements():
    assert family_of("lcqmc-ctx") == family_of("lcqmc") == "lcqmc"
    assert family_of("gen-travel") == "gen" and family_of("gptcache") == "qqp"


def test_bounds_are_the_textbook_values():
    assert upper_bound(0, 599) == pytest.approx(0.005, abs=2e-4)     # the rule of three: 3/n
    assert upper_bound(5, 1000) == pytest.approx(0.0105, abs=5e-4)
    assert upper_bound(3, 3) == 1.0 and upper_bound(0, 0) == 1.0
    assert wilson_lower(90, 100) == pytest.approx(0.84, abs=0.01)


def synthetic_harvest(n: int = 2000, seed: int = 0) -> tuple[Harvest, np.ndarray]:
    rng = np.random.default_rng(seed)
    h = Harvest()
    scores = []
    for i in range(n):
        positive = i % 2 == 0
        h.cases.append({"id": str(i), "source": "s", "lang": "en", "category": "c", "tier": "low",
                        "expect": "hit" if positive else "miss", "domain": "general"})
        h.case.append(i)
        h.target.append(positive)
        h.y.append(SAME if positive else DIFFERENT)
        h.x.append(np.zeros(1, np.float32))
        scores.append(rng.beta(8, 2) if positive else rng.beta(2, 8))
    return h, np.asarray(scores)


@pytest.mark.integration
def test_the_operating_point_keeps_the_upper_bound_within_budget():
    h, p = synthetic_harvest()
    for budget in (0.05, 0.01, 0.005):
        point = operating_points(h, p, budget, tiers=("low",))["low"]
        r = tally(h, case_outcomes(h, p, {"default": point}), lambda m: True)
        assert r["false_hit_upper"] <= budget
        looser = tally(h, case_outcomes(h, p, {"default": point - 0.005}), lambda m: True)
        assert looser["false_hit_upper"] > budget or point == 0.5    # it is the lowest such point
    assert operating_points(h, p, 0.05, tiers=("low",))["low"] <= operating_points(h, p, 0.005, tiers=("low",))["low"]


@pytest.mark.integration
def test_smartcache_train_writes_a_loadable_model_and_a_report(tmp_path, rules_only, encoder, monkeypatch):
    from smartcache.eval.train_run import train

    rows = []
    pairs = [("How do I reset my password?", "How can I reset my password", "hit"),
             ("How do I deploy this service?", "How do I migrate this service?", "miss"),
             ("怎么部署这个服务", "这个服务如何部署", "hit"), ("退款多久到账", "客服电话多少", "miss")]
    for source in ("alpha", "beta", "gen-x"):
        for i, (a, b, expect) in enumerate(pairs * 3):
            rows.append((source, case(f"{source}-{i}", a, b, expect).raw))
    data = tmp_path / "data"
    data.mkdir()
    for source in ("alpha", "beta", "gen-x"):
        with (data / f"{source}.jsonl").open("w", encoding="utf-8") as fh:
            for s, raw in rows:
                if s == source:
                    fh.write(json.dumps(raw, ensure_ascii=False) + "\n")
    out = tmp_path / "verifier.json"
    report = train(data, out, tmp_path / "report", make_cache=lambda: rules_only, workers=1, say=lambda m: None,
                   params={"max_iter": 10, "min_samples_leaf": 2})
    model = TreeVerifier.load(out)
    assert report["cases"] == 36 and {r["family"] for r in report["held_out"]} >= {"alpha", "beta", "gen"}
    assert "Held out by source family" in (tmp_path / "report" / "training.md").read_text(encoding="utf-8")
    assert set(model.meta["operating_points"]) >= {"low", "medium", "default"}


def test_operating_points_on_source_held_out_predictions(tmp_path, rules_only):
    """``--points held_out``: the shipped model trains on every row and the points come from
    the predictions of models that each never saw a row's source family."""
    from smartcache.eval.train_run import train
    from smartcache.eval.training import merge

    pairs = [("How do I reset my password?", "How can I reset my password", "hit"),
             ("How do I deploy this service?", "How do I migrate this service?", "miss"),
             ("怎么部署这个服务", "这个服务如何部署", "hit"), ("退款多久到账", "客服电话多少", "miss")]
    cases = {source: [case(f"{source}-{i}", a, b, e) for i, (a, b, e) in enumerate(pairs * 2)]
             for source in ("qqp", "bq", "lcqmc", "gen-x")}
    merge([harvest(cs, source, rules_only) for source, cs in cases.items()]).save(tmp_path / "harvest.npz")
    report = train(tmp_path, tmp_path / "verifier.json", tmp_path / "report", make_cache=lambda: rules_only,
                   reuse_harvest=True, harvest_path=tmp_path / "harvest.npz", points_on="held_out",
                   workers=1, say=lambda m: None, params={"max_iter": 5, "min_samples_leaf": 2})
    model = TreeVerifier.load(tmp_path / "verifier.json")
    assert model.meta["points_on"] == "held_out" and report["points_on"] == "held_out"
    assert "Calibration split" not in (tmp_path / "report" / "training.md").read_text(encoding="utf-8")


def test_a_pool_of_traffic_judges_each_request_against_every_earlier_answer(rules_only):
    """Issue 27: a request's rows are its candidates among all answers stored before it; a row
    is same when the candidate was stored from a request with the same answer key, and a
    request is an expected hit when its key was stored before it."""
    from smartcache.eval.training import harvest_pool
    texts = [("How do I reset my password?", "k0"), ("How do I change my email address?", "k1"),
             ("How can I reset my password?", "k0"), ("How do I delete my account?", "k2")]
    requests = [{"id": f"r{i}", "session": "pool", "lang": "en", "messages": [U(t)], "answer_key": k}
                for i, (t, k) in enumerate(texts)]
    h = harvest_pool(requests, "tiny-pool", rules_only)
    assert [c["expect"] for c in h.cases] == ["miss", "miss", "hit", "miss"]
    x, y, case, target = h.arrays()
    # The paraphrase's candidates include its twin, labelled same; nothing else is.
    assert set(case.tolist()) <= {1, 2, 3}
    assert [bool(t) for t, c in zip(target, case) if c == 2].count(True) == 1
    assert not any(t for t, c in zip(target, case) if c != 2)
    assert all((lbl == SAME) == bool(t) for lbl, t in zip(y.tolist(), target))


def test_row_weights_count_each_request_once():
    from smartcache.eval.training import row_weights
    w = row_weights(np.asarray(["qqp"] * 5), np.asarray([0, 0, 0, 0, 1]))
    assert w[:4].sum() == pytest.approx(w[4])
