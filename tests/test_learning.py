"""The cache learns from its own traffic under an error bound (issue 28): the pooled policy,
the labels a lookup yields, checks of served answers, and learned state that survives."""

from __future__ import annotations

import dataclasses
import random

import pytest

from conftest import U, ask
from smartcache import SmartCache, load_config
from smartcache.decide import ReasonCode, Zone
from smartcache.errors import ConfigError, InvalidRequest
from smartcache.learn.bound import EDGES, upper
from smartcache.learn.policy import CHECK, FORWARDED, LearnedPolicy, LearningConfig, Observation

STRATUM = "en:single:low"


def fill(policy: LearnedPolicy, tenant: str, scores, correct: bool, kind: str = FORWARDED, entry: str = "e") -> None:
    """Labels from as many sessions as there are labels (one session adds at most 20)."""
    for i, score in enumerate(scores):
        policy.observe(Observation(tenant, STRATUM, score, correct, f"{entry}{i}", kind, session=f"{entry}{i}"))


# -- the pooled policy ------------------------------------------------------------------------

def test_the_packaged_point_stands_until_the_bound_is_earned():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    fill(policy, "t", [0.5] * 290, True)            # 290 right answers: the bound is 1.03 %, not yet 1 %
    assert policy.point("t", STRATUM, 0.9).source == "packaged"
    fill(policy, "t", [0.5] * 20, True, entry="f")   # 310: upper bound 0.96 %
    point = policy.point("t", STRATUM, 0.9)
    assert point.source == "learned" and point.score <= 0.5 and point.upper <= 0.01


def test_wrong_answers_at_low_scores_keep_the_point_where_they_are():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    rng = random.Random(0)
    # Right above 0.7, one in five wrong below it: the learned point may not go under 0.7.
    fill(policy, "t", [rng.uniform(0.7, 0.99) for _ in range(800)], True)
    fill(policy, "t", [rng.uniform(0.3, 0.69) for _ in range(400)], False, entry="w")
    fill(policy, "t", [rng.uniform(0.3, 0.69) for _ in range(1600)], True, entry="r")
    point = policy.point("t", STRATUM, 0.9)
    assert point.source == "learned" and point.score >= 0.69, point


def test_a_few_bad_answers_at_the_edge_are_not_hidden_by_many_good_ones_far_above():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    fill(policy, "t", [0.99] * 3000, True)
    fill(policy, "t", [0.3] * 10, False, entry="w")    # 10 of 110 wrong at 0.3: 0.3 % of the region
    fill(policy, "t", [0.3] * 100, True, entry="r")
    assert policy.point("t", STRATUM, 0.9).score > 0.3


def test_checked_hits_far_above_never_dilute_a_band_below():
    # Right labels at 0.995 (checked hits, word-for-word repeats) say nothing about 0.3-0.85.
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    fill(policy, "t", [0.995] * 326, True, CHECK)
    fill(policy, "t", [0.31], True, entry="lone")
    assert policy.point("t", STRATUM, 0.9).source == "packaged"
    fill(policy, "t", [0.996] * 3000, True, CHECK, entry="c")
    rng = random.Random(1)
    for i in range(60):
        policy.observe(Observation("t", STRATUM, rng.uniform(0.4, 0.85), i % 8 != 0, f"b{i}", session=f"b{i}"))
    assert policy.point("t", STRATUM, 0.9).source == "packaged"


def test_wrong_labels_count_past_a_sessions_cap():
    policy = LearnedPolicy(LearningConfig(labels_per_session=20))
    for i in range(20):
        policy.observe(Observation("t", STRATUM, 0.95, True, f"e{i}", CHECK, session=""))
    policy.observe(Observation("t", STRATUM, 0.97, False, "E", CHECK, session=""))
    assert policy.live("t") == (21, 1) and not policy.admits("t", "E", 0.97)


@pytest.mark.parametrize("text", ["[]", "null", '{"format": 1, "strata": []}', '"x"',
                                  '{"format": 1, "strata": {"bad": {"right": [0], "wrong": [0]}}}'])
def test_a_malformed_state_is_a_value_error(text):
    with pytest.raises(ValueError):
        LearnedPolicy().restore("t", text)


def test_checks_that_prove_the_packaged_point_wrong_tighten_it():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    fill(policy, "t", [0.95] * 200, True, CHECK)
    fill(policy, "t", [0.95] * 20, False, CHECK, entry="w")    # 9 % wrong at the packaged point
    point = policy.point("t", STRATUM, 0.9)
    assert point.source == "tightened" and point.score > 0.95
    assert policy.live("t") == (220, 20)


def test_an_entry_answered_differently_is_not_served_at_that_score_again():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    policy.observe(Observation("t", STRATUM, 0.8, False, "e1", session="s1"))
    assert not policy.admits("t", "e1", 0.8) and not policy.admits("t", "e1", 0.7)
    assert policy.admits("t", "e1", 0.85) and policy.admits("t", "e2", 0.5) and policy.admits("u", "e1", 0.5)


def test_each_tenant_learns_alone_and_state_round_trips():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    fill(policy, "a", [0.4] * 400, True)
    assert policy.point("a", STRATUM, 0.9).source == "learned"
    assert policy.point("b", STRATUM, 0.9).source == "packaged"
    again = LearnedPolicy(LearningConfig(error_bound=0.01))
    again.restore("a", policy.state("a"))
    restored, original = again.point("a", STRATUM, 0.9), policy.point("a", STRATUM, 0.9)
    assert (restored.score, restored.source) == (original.score, original.source)
    assert restored.n == pytest.approx(original.n, abs=0.01)
    with pytest.raises(ValueError):
        again.restore("a", '{"format": 99}')
    with pytest.raises(ValueError):
        again.restore("a", "not json")
    assert again.point("a", STRATUM, 0.9).source == "learned"       # a bad state leaves it as it was


def test_the_strict_tier_needs_more_evidence():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01, strict_error_bound=0.002))
    for i in range(400):
        policy.observe(Observation("t", "en:single:high", 0.4, True, f"e{i}", session=f"h{i}"))
        policy.observe(Observation("t", STRATUM, 0.4, True, f"e{i}", session=f"l{i}"))
    assert policy.point("t", STRATUM, 0.9).source == "learned"
    assert policy.point("t", "en:single:high", 0.9).source == "packaged"     # 0.002 needs ~1,500


def test_one_session_cannot_flood_the_pool():
    # 2,000 labels "the same" at P(same) 0.3, all chosen by one client: at most 20 count, the
    # point stays packaged, and another tenant learns nothing from it.
    policy = LearnedPolicy(LearningConfig(error_bound=0.01, labels_per_session=20))
    for i in range(2000):
        policy.observe(Observation("a", STRATUM, 0.3, True, f"e{i}", session="attacker"))
    assert policy.summary("a")[STRATUM]["observations"] == pytest.approx(20, abs=0.1)
    assert policy.point("a", STRATUM, 0.9).source == "packaged"
    assert policy.point("b", STRATUM, 0.9).source == "packaged" and policy.summary("b") == {}
    again = LearnedPolicy(LearningConfig(error_bound=0.01, labels_per_session=20))
    again.restore("a", policy.state("a"))       # the count survives a restart
    assert not again.observe(Observation("a", STRATUM, 0.3, True, "x", session="attacker"))
    assert again.summary("a")[STRATUM]["observations"] == pytest.approx(20, abs=0.1)


def test_check_rate_falls_from_the_cap_to_the_floor():
    policy = LearnedPolicy(LearningConfig(check_floor=0.02, check_cap=0.1))
    assert policy.check_rate("t", STRATUM) == 0.1
    for _ in range(100_000):
        policy.served("t", STRATUM)
    assert policy.check_rate("t", STRATUM) == 0.02


def test_bad_settings_and_scores_are_refused():
    with pytest.raises(ConfigError):
        load_config(learning={"error_bound": 0})
    with pytest.raises(ConfigError):
        load_config(learning={"check_floor": 0.5, "check_cap": 0.1})
    with pytest.raises(ValueError):
        LearnedPolicy().observe(Observation("t", STRATUM, float("nan"), True, "e"))
    with pytest.raises(ConfigError):
        load_config(learning={"labels_per_session": 0})
    with pytest.raises(ConfigError):
        load_config(learning={"half_life": "long"})
    with pytest.raises(ConfigError):
        load_config(learning={"no_such_knob": 1})
    assert upper(0, 0) == 1.0 and EDGES[0] < 0.01 and EDGES[-1] > 0.99


def test_a_tenant_may_have_its_own_error_bound(tmp_path):
    config = LearningConfig(tenants={"loose": {"error_bound": 0.03}, "strict": {"strict_error_bound": 0.0005}})
    assert config.delta(STRATUM, "loose") == 0.03 and config.delta(STRATUM, "other") == 0.01
    assert config.delta("en:single:high", "strict") == 0.0005 and config.delta("en:single:high", "loose") == 0.002
    policy = LearnedPolicy(config)
    for tenant in ("loose", "other"):                   # 150 right labels: 3 / 0.03 = 100 suffice, 300 do not
        for i in range(150):
            policy.observe(Observation(tenant, STRATUM, 0.5, True, f"e{i}", session=f"s{i}"))
    assert policy.point("loose", STRATUM, 0.9).source == "learned"
    assert policy.point("other", STRATUM, 0.9).source == "packaged"
    for _ in range(200):                                # checks: ~3 / δ of a stratum's hits, then the floor
        policy.served("loose", STRATUM)
        policy.served("other", STRATUM)
    assert policy.check_rate("loose", STRATUM) == pytest.approx(0.05) and policy.check_rate("other", STRATUM) == 0.1
    cache = SmartCache(load_config(learning={"tenants": {"loose": {"error_bound": 0.03}}}))
    for tenant in ("loose", "other"):
        cache.lookup([U("How do I reset my password?")], session="s", tenant=tenant)    # its state read
        cache.policy.observe(Observation(tenant, STRATUM, 0.5, True, "e", session="s"))
    assert cache.learned("loose")[STRATUM]["error_bound"] == 0.03       # what /admin/stats shows
    assert cache.learned("other")[STRATUM]["error_bound"] == 0.01
    # In a TOML file, one table a tenant.
    path = tmp_path / "c.toml"
    path.write_text('[learning.tenants.acme]\nerror_bound = 0.005\n', encoding="utf-8")
    assert load_config(path).learning.delta(STRATUM, "acme") == 0.005
    for bad in ({"acme": {"error_bound": 1.5}}, {"acme": {"error_bound": True}}, {"acme": {"delta": 0.01}},
                {"acme": 0.01}, ["acme"], {"": {"error_bound": 0.01}}, {"acme": {"error_bound": float("nan")}}):
        with pytest.raises(ConfigError):
            load_config(learning={"tenants": bad})
    for bad in ((("a", 5.0, None),), (("a", "x", None),), (("a", 0.01, None), ("a", 0.02, None)), ((1, 0.1, 0.1),)):
        with pytest.raises(ValueError):
            LearningConfig(tenants=bad)
    # A bound the tenant does not set follows the global one, also when that is changed later.
    strict_only = LearningConfig(tenants={"acme": {"strict_error_bound": 0.001}})
    assert dataclasses.replace(strict_only, error_bound=0.05).delta(STRATUM, "acme") == 0.05
    assert dataclasses.replace(strict_only, error_bound=0.05).delta("en:single:high", "acme") == 0.001


# -- the cache ------------------------------------------------------------------------------------

ANSWER = "To reset your password, open Settings, choose Security and then Reset password; a link arrives by e-mail."
OTHER = "Opening hours are nine to five on weekdays, and the shop is closed on public holidays and Sundays."


def test_a_forwarded_request_labels_its_candidate(make_cache):
    cache = make_cache()
    stored = cache.store([U("How do I reset my password?")], ANSWER, session="s1", scope="global")
    cache.promote(stored.cache_id, to_global=True)
    found = cache.lookup([U("How do I reset my router?")], session="s2")
    assert found.nearest is not None and found.nearest.cache_id == stored.cache_id
    assert found.zone is not Zone.HIT and found.scores.same is not None
    cache.store(found, OTHER, scope="session")          # store() learns from the lookup it is given
    assert cache.stats().observations == 1
    tenant = cache.policy.summary("default")
    assert sum(s["wrong"] for s in tenant.values()) == pytest.approx(1.0)
    assert not cache.policy.admits("default", stored.cache_id, found.scores.same)


def test_learning_needs_a_lookup_and_a_string(make_cache):
    cache = make_cache()
    with pytest.raises(InvalidRequest):
        cache.learn([U("hi")], "answer")            # type: ignore[arg-type]
    found = cache.lookup([U("hi there, how do I bake bread?")], session="s1")
    with pytest.raises(InvalidRequest):
        cache.learn(found, None)                    # type: ignore[arg-type]
    assert cache.learn(found, "bread needs flour") is None      # nothing was weighed: nothing to label


def test_a_check_found_different_demotes_the_entry_and_counts_as_live_error(make_cache):
    cache = make_cache(exact_path=False)        # the verifier weighs the repeat: a labelled candidate
    stored = cache.store([U("How do I reset my password?")], ANSWER, session="s1")
    cache.promote(stored.cache_id)
    found = cache.lookup([U("How do I reset my password?")], session="s1")
    assert found.zone is Zone.HIT and found.nearest is not None
    judgement = cache.check(found, OTHER)
    assert judgement is not None and judgement.label.value == "different"
    assert cache.stats().checks == 1 and cache.stats().checks_wrong == 1
    assert cache.get(stored.cache_id).feedback_score < 1.0


def test_learned_state_survives_a_restart_on_the_same_file(encoder, clock, tmp_path):
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")},
                         learning={"persist_every": 1})
    first = SmartCache(config, encoder=encoder, clock=clock)
    fill(first.policy, "default", [0.4] * 400, True)
    first._save_learned("default")          # what persist_every does after an observation
    # No close(): a process killed now leaves what the store has (SQLite commits each write).
    second = SmartCache(config, encoder=encoder, clock=clock)
    second.lookup([U("anything at all")], session="s1")         # the tenant's state is read on first use
    assert second.policy.point("default", STRATUM, 0.9).source == "learned"


def test_learning_never_overrides_a_veto(make_cache):
    cache = make_cache()
    fill(cache.policy, "default", [EDGES[0]] * 2000, True)        # as if everything were the same
    stored = cache.store([U("Book a table for 4 people at 7pm")], "Booked: a table for 4 at 7pm.", session="s1")
    cache.promote(stored.cache_id)
    found = cache.lookup([U("Book a table for 6 people at 7pm")], session="s1")
    assert found.zone is not Zone.HIT


def test_learning_off_is_the_packaged_path(make_cache):
    cache = make_cache(learning={"enabled": False})
    assert cache.policy is None
    stored = cache.store([U("How do I reset my password?")], ANSWER, session="s1")
    cache.promote(stored.cache_id)
    found = cache.lookup([U("How do I reset my password?")], session="s1")
    assert found.zone is Zone.HIT and not found.verify and cache.check(found, OTHER) is None


def test_a_learned_hit_says_so(make_cache):
    cache = make_cache()
    stored = cache.store([U("What is the capital of Australia?")], "Canberra is the capital of Australia, "
                         "not Sydney; it was chosen as a compromise in 1908.", session="s1")
    cache.promote(stored.cache_id)
    found = cache.lookup([U("Which city is Australia's capital?")], session="s1")
    if found.zone is Zone.HIT or found.scores.same is None:
        pytest.skip("served at the packaged point already, or no candidate weighed")
    fill(cache.policy, "default", [max(0.0025, found.scores.same - 0.05)] * 400, True, entry="x")
    again = cache.lookup([U("Which city is Australia's capital?")], session="s1")
    assert again.zone is Zone.HIT and again.has_reason(ReasonCode.LEARNED_MATCH)
    assert "below the packaged" in next(r.detail for r in again.reasons if r.code is ReasonCode.LEARNED_MATCH)


# -- through the gateway ---------------------------------------------------------------------------

def test_the_gateway_learns_from_forwarded_answers_and_shows_the_live_error(gateway):
    from conftest import S, chat

    system = S("You are a helpful assistant.")
    with gateway() as client:
        engine = client.app.state.service.engine
        engine.answer = "To reset your password open Settings, then Security, then Reset password."
        assert chat(client, [system, U("How do I reset my password?")]).headers["x-smartcache-status"] == "miss"
        engine.answer = "Restart the router by holding its power button for ten seconds, then wait two minutes."
        r = chat(client, [system, U("How do I reset my router?")], session="s1")
        assert r.headers["x-smartcache-status"] != "hit"
        learning = client.get("/admin/stats").json()["learning"]
        assert learning["observations"] == 1 and learning["checks"] == 0 and learning["live_error"] is None
        metrics = client.get("/metrics").text
        assert "smartcache_learned_observations_total 1.0" in metrics and "smartcache_checks_total 0.0" in metrics
        strata = learning["by_tenant"]["default"]
        assert sum(s["observations"] for s in strata.values()) == pytest.approx(1.0)
        assert all(s["point_source"] == "packaged" and s["point"] == s["packaged_point"] for s in strata.values())


# -- proven safe across users ----------------------------------------------------------------------

SHARED_ANSWER = ("Open Settings, choose Security, then Reset password; the link in the e-mail is valid "
                 "for one hour and the new password needs twelve characters.")


def test_an_answer_given_alike_in_three_sessions_enters_the_global_pool(make_cache):
    cache = make_cache()
    question = "How do I reset my password?"
    for session in ("a", "b"):
        assert ask(cache, question, session, SHARED_ANSWER).zone is not Zone.HIT
    assert cache.stats().shared == 0
    assert ask(cache, question, "c", SHARED_ANSWER).zone is not Zone.HIT
    assert cache.stats().shared == 1
    found = cache.lookup([U(question)], session="d")            # a fourth user: served from the pool
    assert found.zone is Zone.HIT and found.entry.scope.value == "global"


def test_answers_that_differ_between_sessions_are_personal_and_never_shared(make_cache):
    cache = make_cache()
    question = "Where is my order?"
    answers = ["Your order 1 shipped on Monday and arrives on Thursday by courier.",
               "Your order is still being packed; it should leave the warehouse tomorrow morning.",
               "Your latest order was delivered yesterday and signed for at the front desk."]
    for session, answer in zip("abcd", answers + answers[:1]):
        assert ask(cache, question, session, answer).zone is not Zone.HIT
    assert cache.stats().shared == 0
    assert cache.lookup([U(question)], session="e").zone is not Zone.HIT


def test_personal_data_is_never_shared(make_cache):
    cache = make_cache()
    question = "My account number is 4401 2231 9981, how do I close it?"
    for session in "abcd":
        assert ask(cache, question, session, SHARED_ANSWER).zone is not Zone.HIT
    assert cache.stats().shared == 0


def test_one_session_repeating_itself_proves_nothing(make_cache):
    cache = make_cache(learning={"share_after": 2})
    question = "How do I reset my password?"
    for _ in range(3):
        found = cache.lookup([U(question)], session="a")
        if found.zone is not Zone.HIT:
            cache.store(found, SHARED_ANSWER)
    assert cache.stats().shared == 0
    assert cache.lookup([U(question)], session="b").zone is not Zone.HIT


_WRITER = """
import os, signal, sys
from smartcache import SmartCache, load_config
from smartcache.learn.policy import Observation
cache = SmartCache(load_config(store={"backend": "sqlite", "path": sys.argv[1]}, learning={"persist_every": 50}))
for i in range(400):    # saved every 50 observations, as traffic would
    if cache.policy.observe(Observation("default", "en:single:low", 0.4, True, f"e{i}", session=f"s{i}")):
        cache._save_learned("default")
print("learned", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.integration
def test_learned_state_survives_kill_9(encoder, clock, tmp_path):
    import subprocess
    import sys

    path = tmp_path / "c.db"
    proc = subprocess.run([sys.executable, "-c", _WRITER, str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == -9 and "learned" in proc.stdout, proc.stderr[-2000:]
    cache = SmartCache(load_config(store={"backend": "sqlite", "path": str(path)}), encoder=encoder, clock=clock)
    cache.lookup([U("anything")], session="s1")
    point = cache.policy.point("default", STRATUM, 0.9)
    assert point.source == "learned" and point.n > 390       # all 400 (decayed a little), none lost


def test_a_pending_answer_is_not_shared_before_its_window_and_a_differing_one_is_withdrawn(make_cache):
    cache = make_cache()
    question = "How do I reset my password?"
    for session in "abc":       # answers written, none promoted: the first one is still pending
        found = cache.lookup([U(question)], session=session)
        assert cache.store(found, SHARED_ANSWER).stored
    assert cache.stats().shared == 0
    first = next(e for e in cache.entries() if e.session_id == "a")
    cache.promote(first.cache_id)                     # its window passed
    found = cache.lookup([U(question)], session="d")
    assert found.zone is not Zone.HIT
    cache.store(found, SHARED_ANSWER)
    assert cache.stats().shared == 1
    assert cache.lookup([U(question)], session="e").zone is Zone.HIT
    # Another session's engine answer to the same words differs: the shared answer is withdrawn.
    cache.store(cache.prepare([U(question)], session="f"), OTHER)
    assert cache.get(first.cache_id).state.value == "invalid"
    assert cache.lookup([U(question)], session="g").zone is not Zone.HIT


def test_personal_data_anywhere_in_the_conversation_is_never_shared(make_cache):
    from conftest import S
    cache = make_cache()
    messages = [S("You are the assistant of jane.doe@example.com."), U("How do I reset my password?")]
    for session in "abcd":
        found = cache.lookup(messages, session=session)
        if found.zone is not Zone.HIT:
            stored = cache.store(found, SHARED_ANSWER)
            cache.promote(stored.cache_id)
    assert cache.stats().shared == 0


def test_nothing_is_learned_while_the_stored_state_cannot_be_read(make_cache):
    from smartcache.errors import StoreError
    cache = make_cache()

    def down(name):
        raise StoreError("store down")
    cache.backend.inner.load_state = down           # the guarded store turns it into a StoreError
    stored = cache.store([U("How do I reset my password?")], ANSWER, session="s1", scope="global")
    cache.promote(stored.cache_id, to_global=True)
    found = cache.lookup([U("How do I reset my router?")], session="s2")
    assert found.nearest is not None
    cache.store(found, OTHER)
    assert cache.stats().observations == 0          # the packaged point decided; nothing learned
