"""The verifier model: the numpy tree walk against scikit-learn, serialisation, the packaged
model, and the evidence it is fed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from smartcache.decide.evidence import FEATURES, HARD_VETOES, gather
from smartcache.decide.verifier import CLASSES, PACKAGED, TreeVerifier
from smartcache.errors import ConfigError
from conftest import A, U, remember


def make_model(seed: int = 0, n: int = 3000, features: int = 6):
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(seed)
    x = rng.random((n, features)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 1).astype(int) + (x[:, 2] > 0.7)
    return x, HistGradientBoostingClassifier(max_iter=40, max_depth=5, random_state=seed).fit(x, y)


@pytest.mark.integration
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_tree_walk_gives_scikit_learns_probabilities(seed):
    x, model = make_model(seed)
    ours = TreeVerifier.from_sklearn(model, [f"f{i}" for i in range(x.shape[1])])
    assert np.abs(ours.predict(x) - model.predict_proba(x)).max() < 1e-6


@pytest.mark.integration
def test_a_model_survives_its_json_round_trip():
    x, model = make_model()
    ours = TreeVerifier.from_sklearn(model, [f"f{i}" for i in range(x.shape[1])], {"operating_points": {"low": 0.8, "default": 0.9}})
    again = TreeVerifier.from_json(json.loads(json.dumps(ours.to_json())))
    assert np.abs(again.predict(x) - ours.predict(x)).max() < 1e-6
    assert again.operating_point("low") == 0.8 and again.operating_point("medium") == 0.9   # else the default


def test_bad_input_is_refused_with_a_clear_error(tmp_path):
    model = TreeVerifier.constant(["a", "b"], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"expected \(n, 2\)"):
        model.predict(np.zeros((1, 3)))
    bad = tmp_path / "model.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ConfigError):
        TreeVerifier.load(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(model.to_json()))
    with pytest.raises(ConfigError, match="other features"):
        TreeVerifier.load(good, features=FEATURES)


def test_the_packaged_model_matches_its_features_and_has_its_operating_points():
    features = FEATURES
    model = TreeVerifier.load(features=features, packaged=PACKAGED)
    assert model.feature.shape[0] > 0 and model.depth > 0
    points = model.meta["operating_points"]
    assert {"low", "medium", "default"} <= set(points) and all(0.5 <= p < 1.0 for p in points.values())
    p = model.predict(np.zeros((4, len(features)), np.float32))
    assert p.shape == (4, len(CLASSES)) and np.allclose(p.sum(axis=1), 1.0)


def evidence_of(cache, cached_messages, probe_messages):
    entry = cache.get(remember(cache, cached_messages, "answer"))
    fp, _ = cache.fingerprint(probe_messages)
    return gather(fp, entry, float(fp.turn_vector @ entry.turn_vector))


@pytest.mark.parametrize("cached, probe, veto", [
    ("周末去杭州玩3天，帮我排个行程", "周末去杭州玩5天，帮我排个行程", "quantity_change"),
    ("Book a table for 2 people at 7pm", "Book a table for 2 people at 8pm", "quantity_change"),
    ("开启 A 功能", "别开启 A 功能", "intent_reversal"),
    ("Enable dark mode in the app settings", "Don't enable dark mode in the app settings", "intent_reversal"),
    ("怎么开启自动备份", "怎么关闭自动备份", "opposite_actions"),
    ("从北京到上海的高铁要多久", "从上海到北京的高铁要多久", "direction_reversed"),
    ("How long is the flight from Paris to Rome?", "How long is the flight from Rome to Paris?", "direction_reversed"),
])
def test_near_certain_signals_are_hard_vetoes(cache, cached, probe, veto):
    e = evidence_of(cache, [U(cached)], [U(probe)])
    assert e.veto is not None and e.veto.code == veto


@pytest.mark.parametrize("cached, probe", [
    ("why are utensils made of steel not used in a microwave?", "why shouldn't we use steel utensils in a microwave?"),
    ("为啥借呗进不了", "我借呗怎么进不去"),
    ("周末去杭州玩三天，预算五千以内", "周末去杭州玩3天，预算不超过5000块"),
    ("Which is better, Python or Go?", "Which is better, Go or Python?"),      # symmetric: evidence only
    ("How long is the train from Vienna to Paris?", "How long is the train to Paris from Vienna?"),  # same route
])
def test_negations_elsewhere_and_rephrased_values_are_evidence_not_vetoes(cache, cached, probe):
    e = evidence_of(cache, [U(cached)], [U(probe)])
    assert e.veto is None, e.veto
    assert e.features.shape == (len(FEATURES),) and np.isfinite(e.features).all()
    assert all(r.code not in HARD_VETOES for r in e.signals)


def test_evidence_sees_the_history(cache):
    history = [U("推荐一本科幻小说"), A("推荐《三体》，刘慈欣著。")]
    e = evidence_of(cache, history + [U("三体的作者是谁")], history + [U("它的作者是谁")])
    x = dict(zip(FEATURES, e.features))
    assert x["same_history"] == 1.0 and x["context_similarity"] == 1.0 and x["probe_has_context"] == 1.0


def test_the_packaged_model_is_parsed_once_and_read_only() -> None:
    first, second = TreeVerifier.load(features=FEATURES), TreeVerifier.load()
    assert first is second      # every cache of the process shares it
    with pytest.raises(ValueError):
        first.threshold[0, 0] = 0.0


@pytest.mark.parametrize("context", [True, False])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_uncalibrated_high_risk_tier_is_never_served_below_a_calibrated_one(context, lang):
    """An operator who serves medical or finance paraphrases (``repeat_only_domains = []``)
    gets the strictest point there is, not the pooled one below the low tier's."""
    model = TreeVerifier.load(None)
    high = model.operating_point("high", context, lang)
    assert high >= max(model.operating_point(t, c, lang) for t in ("low", "medium") for c in (True, False))
    assert high == max(model.operating_point("high", c, lang) for c in (True, False))
