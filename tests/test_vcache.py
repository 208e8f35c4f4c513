"""vCache as a stream baseline (``smartcache.eval.vcache``): its decision rule on synthetic streams
with a table encoder whose similarities are set by hand, and once with the real encoder."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from smartcache.cli.replay import make_stream_systems
from smartcache.eval.streams import Served, StreamRequest, replay_stream
from smartcache.eval.vcache import EPSILONS, VCacheStream, explore_probability, fit_profile

DIM = 64


class TableEncoder:
    """Looks each (normalised) text up in a table of unit vectors."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def encode(self, texts):
        return np.stack([self.table[t] for t in texts]).astype(np.float32)


def near(base: np.ndarray, sim: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at cosine ``sim`` from the unit vector ``base``."""
    u = rng.normal(size=base.shape)
    u -= (u @ base) * base
    return sim * base + np.sqrt(max(1.0 - sim * sim, 0.0)) * u / np.linalg.norm(u)


def make_request(i: int, text: str, key: str, answer: str | None = None) -> StreamRequest:
    return StreamRequest(f"r{i}", float(i), "t0", f"r{i}", None, "en", "s", "c",
                         [{"role": "user", "content": text}], key, answer or f"answer {key}")


def make_stream(n: int, *, p_near: float, sim_same: float = 0.97, sim_near: float = 0.90,
                seed: int = 0) -> tuple[TableEncoder, list[StreamRequest]]:
    """One question asked ``n`` times: reworded at ``sim_same`` (same answer), or, with
    probability ``p_near``, a near miss at ``sim_near`` with an answer of its own."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=DIM)
    base /= np.linalg.norm(base)
    table, requests = {"q0": base}, [make_request(0, "q0", "k0")]
    for i in range(1, n):
        if rng.random() < p_near:
            text, key, sim = f"near{i}", f"k-near{i}", sim_near
        else:
            text, key, sim = f"para{i}", "k0", sim_same
        table[text] = near(base, min(sim + rng.normal(0, 0.01), 1.0), rng)
        requests.append(make_request(i, text, key))
    return TableEncoder(table), requests


def observations(served: Served) -> int:
    return int(re.search(r"\bn=(\d+)", served.reason).group(1))


def run(system: VCacheStream, requests: list[StreamRequest]) -> list[Served]:
    return [system.handle(r) for r in requests]


def test_fit_finds_the_boundary_and_tau_follows_similarity():
    rng = np.random.default_rng(0)
    s = np.concatenate([rng.uniform(0.9, 1.0, 40), rng.uniform(0.6, 0.85, 40)])
    fit = fit_profile(s, np.array([1] * 40 + [0] * 40))
    assert 0.85 <= fit.mle[0] <= 0.9
    z = VCacheStream(TableEncoder({}), 0.05)._z
    taus = [explore_probability(x, fit, 0.05, EPSILONS, z) for x in (0.7, 0.88, 0.99)]
    assert taus[0] > 0.9 and taus[0] >= taus[1] >= taus[2] and taus[2] < 0.2
    # right answers only at low similarity, wrong ones above: no boundary to serve above
    fit = fit_profile(np.array([0.9, 0.5, 0.95, 0.4]), np.array([0, 1, 0, 1]))
    assert explore_probability(0.97, fit, 0.05, EPSILONS, z) > 0.8


def test_profile_bound_grows_with_evidence():
    """k right answers at s = 1 beside three wrong ones far below: τ̂ falls as k grows, the way a
    binomial bound would (the Wald bound this replaced stayed at 0.65 for k = 50, δ = 0.05)."""
    z = VCacheStream(TableEncoder({}), 0.05)._z

    def tau(k: int, delta: float) -> float:
        fit = fit_profile(np.array([1.0] * k + [0.3, 0.4, 0.5]), np.array([1] * k + [0, 0, 0]))
        return explore_probability(1.0, fit, delta, EPSILONS, z)
    taus = [tau(k, 0.05) for k in (3, 12, 30, 60)]
    assert taus == sorted(taus, reverse=True) and taus[0] > 0.7 and taus[-1] == 0.0
    assert tau(30, 0.01) > tau(30, 0.05)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiny_delta_never_serves_an_entry_with_too_few_observations(seed):
    encoder, requests = make_stream(200, p_near=0.2, seed=seed)
    system = VCacheStream(encoder, 1e-6, seed=seed)
    served = run(system, requests)
    assert not any(s.hit for s in served[: system.min_observations + 1])
    assert all(observations(s) >= system.min_observations for s in served if s.hit)
    assert sum(s.hit for s in served) <= 10          # with δ = 1e-6 it serves almost nothing
    assert all(s.checks == 0 for s in served)         # exploring is the request's own engine call


def test_a_repeated_cluster_is_eventually_served():
    # paraphrases at 0.97 and near misses at 0.90: the entry learns its boundary from both sides
    encoder, requests = make_stream(400, p_near=0.2, seed=0)
    served = run(VCacheStream(encoder, 0.05), requests)
    early, late = sum(s.hit for s in served[:20]), sum(s.hit for s in served[-100:])
    assert early <= 10 and late >= 60       # 20 % of the traffic are near misses it must not serve
    assert all(r.answer_key == "k0" for s, r in zip(served[-100:], requests[-100:]) if s.hit and "para" in r.id)


@pytest.mark.parametrize("delta", [0.01, 0.05])
def test_near_misses_are_learned_against(delta):
    # half the traffic is a near miss with another answer, close to the paraphrases' similarity
    wrong = n = 0
    for seed in range(3):
        encoder, requests = make_stream(300, p_near=0.5, seed=seed)
        served = run(VCacheStream(encoder, delta, seed=seed), requests)
        wrong += sum(s.hit and s.served_key != r.answer_key for s, r in zip(served, requests))
        n += len(requests)
    assert wrong / n <= delta       # the promise, over 900 requests of which half are traps


def test_decisions_never_read_answer_key():
    encoder, requests = make_stream(300, p_near=0.3, seed=3)
    keys = [r.answer_key for r in requests]
    random.Random(0).shuffle(keys)
    shuffled = [StreamRequest(r.id, r.t, r.tenant, r.session, r.scope, r.lang, r.source, r.category, r.messages,
                              k, r.answer) for r, k in zip(requests, keys)]
    a, b = run(VCacheStream(encoder, 0.05), requests), run(VCacheStream(encoder, 0.05), shuffled)
    assert [s.hit for s in a] == [s.hit for s in b] and any(s.hit for s in a)
    assert [s.reason for s in a] == [s.reason for s in b]


def test_tenants_have_pools_of_their_own():
    encoder, requests = make_stream(200, p_near=0.2, seed=0)
    other = [StreamRequest(r.id + "b", r.t, "t1", r.session, None, r.lang, r.source, r.category, r.messages,
                           "other-" + r.answer_key, "other " + r.answer) for r in requests]
    mixed = [x for pair in zip(requests, other) for x in pair]
    served = run(VCacheStream(encoder, 0.05), mixed)
    assert all(s.served_key.startswith("other-") == (r.tenant == "t1") for s, r in zip(served, mixed) if s.hit)


def test_registered_by_name_and_validated():
    systems = make_stream_systems(["vcache@0.02"], None, TableEncoder({}))
    assert systems[0].name == "vcache@0.02" and systems[0].settings["delta"] == 0.02
    with pytest.raises(ValueError, match="vcache@D"):
        make_stream_systems(["vcache"], None, TableEncoder({}))
    with pytest.raises(ValueError, match="delta"):
        VCacheStream(TableEncoder({}), 0.0)


def test_with_the_real_encoder(encoder):
    questions = ["How do I reset my password?", "What is the refund policy?", "How can I change my email address?",
                 "Where is my order?", "How do I cancel my subscription?"]
    rows = [make_request(i, questions[i % 5] if i % 3 else questions[i % 5].lower() + "  ", f"k{i % 5}")
            for i in range(50)]
    report = replay_stream(rows, [VCacheStream(encoder, 0.05)])
    o = report["systems"]["vcache@0.05"]["overall"]
    assert o["n"] == 50 and o["wrong"] == 0 and o["engine_calls"] + o["hits"] == 50
    assert o["hits"] > 0     # exact repeats (similarity 1) of an entry whose other neighbours were wrong
