"""Issue 28, item 7: `smartcache train --observations` refits the verifier on the public rows and
a tenant's labelled traffic, holds the newest observations back, and raises its points until
what it would serve of them proves the bound or is no worse than today's model."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from smartcache import SmartCache, load_config
from smartcache.decide.verifier import TreeVerifier
from smartcache.eval.refit import refit
from smartcache.eval.training import harvest, merge
from smartcache.learn.observations import Labelled, as_rows, encode
from smartcache.learn.policy import Observation

from test_training import case

PAIRS = [("How do I reset my password?", "How can I reset my password", "hit"),
         ("How do I deploy this service?", "How do I migrate this service?", "miss"),
         ("怎么部署这个服务", "这个服务如何部署", "hit"), ("退款多久到账", "客服电话多少", "miss")]
ASKED = [("How do I reset my password?", "What's the way to reset my password?", True),
         ("How do I deploy this service?", "How do I monitor this service?", False),
         ("How do I export photos to PDF?", "How can I save my photos as a PDF?", True),
         ("How do I export photos to PDF?", "How do I import photos from a PDF?", False),
         ("Plan a 3-day trip to Kyoto", "Plan a three day Kyoto trip", True),
         ("Plan a 3-day trip to Kyoto", "Plan a 3-day trip to Osaka", False)]


@pytest.fixture(scope="module")
def public(encoder):
    rules_only = SmartCache(load_config(use_verifier=False, store={"backend": "memory"}), encoder=encoder)
    return merge([harvest([case(f"{s}-{i}", a, b, e) for i, (a, b, e) in enumerate(PAIRS * 3)], s, rules_only)
                  for s in ("qqp", "lcqmc", "gen-x")])


@pytest.fixture(scope="module")
def observed(encoder):
    """Labelled evidence rows from real lookups, as the cache keeps them, in time order."""
    rows = []
    for n in range(6):
        for i, (cached, asked, same) in enumerate(ASKED):
            cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
            stored = cache.store(cache.lookup([U(cached)], session="s"), "an answer")
            cache.promote(stored.cache_id)
            found = cache.lookup([U(asked)], session="s")
            if found.nearest_features is None:      # a veto or a gate settled it: no label to learn from
                continue
            rows.append(Labelled(found.nearest_features, same, float(found.scores.same), found.stratum,
                                 float(n * 10 + i), "forwarded", f"s{n}"))
    assert len(rows) >= 24 and any(r.correct for r in rows) and not all(r.correct for r in rows)
    return rows


def U(text: str) -> dict:
    return {"role": "user", "content": text}


def test_refit_holds_the_newest_back_and_reports_both_models(public, observed):
    packaged = TreeVerifier.load()
    model, report = refit(public, as_rows(observed, packaged.features), packaged, error_bound=0.01,
                          held_back=0.3, say=lambda m: None, params={"max_iter": 5, "min_samples_leaf": 2})
    n, back = len(observed), math.ceil(0.3 * len(observed))
    assert report["observations"] == n and report["held_back"] == back and report["trained_on"] == n - back
    for side in ("before", "after"):
        assert report[side]["rows"] == back and report[side]["right"] + report[side]["wrong"] == report[side]["served"]
    after = report["after"]
    # What the refit model serves of the held-back rows proves δ or is no worse than today's.
    assert after["served"] == 0 or after["wrong_upper"] <= 0.01 or (
        after["wrong"] <= report["before"]["wrong"] and after["right"] >= report["before"]["right"])
    assert model.features == packaged.features and model.meta["refit"]["held_back"] == back
    again = TreeVerifier.from_json(json.loads(json.dumps(model.to_json())))
    x = np.asarray([r.features for r in observed], np.float32)
    assert np.allclose(again.predict(x), model.predict(x))


def test_too_few_or_one_sided_observations_are_refused(public, observed):
    packaged = TreeVerifier.load()
    with pytest.raises(ValueError, match="too few"):
        refit(public, as_rows(observed[:1], packaged.features), packaged, say=lambda m: None)
    with pytest.raises(ValueError, match="weight"):
        refit(public, as_rows(observed, packaged.features), packaged, weight=-1.0, say=lambda m: None)
    with pytest.raises(ValueError, match="all one label"):
        refit(public, as_rows([r for r in observed if r.correct], packaged.features), packaged, say=lambda m: None)


def test_the_command_writes_a_model_the_cache_serves_with(public, observed, tmp_path, encoder):
    packaged = TreeVerifier.load()
    public.save(tmp_path / "public.npz")
    (tmp_path / "obs.json").write_text(encode(observed, packaged.features), encoding="utf-8")
    out, report = tmp_path / "refit.json", tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "smartcache.cli", "train", "--observations", str(tmp_path / "obs.json"),
                           "--harvest", str(tmp_path / "public.npz"), "--out", str(out), "--report", str(report)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "held back" in (report / "refit.md").read_text(encoding="utf-8")
    cache = SmartCache(load_config(verifier_path=str(out), store={"backend": "memory"}), encoder=encoder)
    assert cache.decider.verifier.meta["refit"]["observations"] == len(observed)
    # What is learned is scores of one model: the refit one learns apart from the packaged one's state.
    cache.lookup([U("anything")], session="s")          # the tenant's stored state is read
    cache.policy.observe(Observation("default", "en:single:low", 0.5, True, "e1"))
    cache.save_learned()
    tag = hashlib.sha256(out.read_bytes()).hexdigest()[:12]
    assert cache.backend.load_state("learned:default") is None
    assert cache.backend.load_state(f"learned:default@{tag}") is not None
    missing = subprocess.run([sys.executable, "-m", "smartcache.cli", "train", "--observations",
                              str(tmp_path / "obs.json")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "--harvest" in missing.stderr and "Traceback" not in missing.stderr
