"""Sharing after fewer sessions, once a tenant's traffic has proven it (issue 28: learning
across entries). Every later session that asks words another session asked, and goes to the
engine, compares the engine's answer with the first one. Pooled over the tenant's requests,
those comparisons bound P(a later session is answered otherwise); once that bound is at most
δ, an answer is shared after ``share_after_proven`` sessions instead of ``share_after``."""

from __future__ import annotations

import json

import pytest

from conftest import U, ask
from smartcache.decide import Zone
from smartcache.learn.policy import LearnedPolicy, LearningConfig

ANSWER = "Hold the power button for ten seconds, then wait two minutes for the lights to settle."


def prove(policy: LearnedPolicy, tenant: str, n: int, differed: int = 0) -> None:
    """``n`` comparisons from as many sessions, ``differed`` of them answered otherwise."""
    for i in range(n):
        policy.compared(tenant, f"s{i}", same=i >= differed)


def test_the_packaged_count_stands_until_the_comparisons_bound_the_difference():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    assert policy.sharing_point("t").need == 3 and policy.sharing_point("t").source == "packaged"
    prove(policy, "t", 250)
    assert policy.sharing_point("t").need == 3              # 0 of 250: the bound is still above 1 %
    prove(policy, "t", 60)
    point = policy.sharing_point("t")
    assert (point.need, point.source) == (2, "proven") and point.upper <= 0.01
    assert policy.sharing_point("other").need == 3          # each tenant proves it alone


def test_answers_that_differ_between_sessions_keep_or_bring_back_the_packaged_count():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    prove(policy, "t", 400, differed=8)                       # 2 %: never proven
    assert policy.sharing_point("t").need == 3
    policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    prove(policy, "t", 400)
    assert policy.sharing_point("t").need == 2
    for i in range(6):                                        # the tenant's answers turn personal
        policy.compared("t", f"late{i}", same=False)
    assert policy.sharing_point("t").need == 3


def test_one_session_cannot_prove_it_alone():
    policy = LearnedPolicy(LearningConfig(error_bound=0.01, labels_per_session=20))
    for _ in range(1000):
        policy.compared("t", "one-client", same=True)
    assert policy.sharing_point("t").need == 3
    assert policy.sharing_point("t").compared == pytest.approx(20, abs=0.01)


def test_the_comparisons_survive_a_restart_and_replicas_add_theirs():
    a, b = LearnedPolicy(), LearnedPolicy()
    prove(a, "t", 200)
    for i in range(150):
        b.compared("t", f"b{i}", same=True)
    merged = b.merged(a.merged(None, a.take_news("t")), b.take_news("t"))
    b.adopt("t", merged)
    assert b.sharing_point("t").compared == pytest.approx(350, abs=3)      # decayed a little and b.sharing_point("t").need == 2
    again = LearnedPolicy()
    again.restore("t", b.state("t"))
    assert again.sharing_point("t").need == 2
    old = json.loads(b.state("t"))
    del old["agreement"]                                      # a state saved before: nothing proven
    again.restore("t", json.dumps(old))
    assert again.sharing_point("t").need == 3
    old["agreement"] = [10.0, 11.0, 10]
    with pytest.raises(ValueError):
        again.restore("t", json.dumps(old))


@pytest.mark.parametrize("proven", [1, 4, -1, "2"])
def test_a_count_below_two_or_above_share_after_is_refused(proven):
    with pytest.raises(ValueError):
        LearningConfig(share_after=3, share_after_proven=proven)


def test_zero_never_lowers_the_count():
    policy = LearnedPolicy(LearningConfig(share_after_proven=0))
    prove(policy, "t", 1000)
    assert policy.sharing_point("t").need == 3


def test_a_proven_tenant_shares_after_two_sessions_and_another_tenant_after_three(make_cache):
    cache = make_cache()
    for tenant in ("proven", "fresh"):
        cache.lookup([U("warm up")], session="w", tenant=tenant)        # the tenant's learned state is read
    prove(cache.policy, "proven", 400)
    for tenant in ("proven", "fresh"):
        found = cache.lookup([U("How do I restart my router?")], session="a", tenant=tenant)
        cache.promote(cache.store(found, ANSWER).cache_id)
        found = cache.lookup([U("How do I restart my router?")], session="b", tenant=tenant)
        assert found.zone is not Zone.HIT                     # another session: to the engine, compared
        cache.promote(cache.store(found, ANSWER).cache_id)
    assert cache.sharing("proven")["sessions_needed"] == 2 and cache.sharing("fresh")["sessions_needed"] == 3
    assert cache.lookup([U("How do I restart my router?")], session="c", tenant="proven").zone is Zone.HIT
    assert cache.lookup([U("How do I restart my router?")], session="c", tenant="fresh").zone is not Zone.HIT


def test_what_the_comparisons_saw_is_counted_through_the_library(make_cache):
    cache = make_cache()
    ask(cache, "How do I restart my router?", "a", ANSWER)
    ask(cache, "How do I restart my router?", "b", ANSWER)
    # An engine that answers one question otherwise per session (sampling, or a personal answer
    # nothing flagged): a difference.
    ask(cache, "Recommend a novel for a long train ride", "a", "Try 'The Remains of the Day' by Kazuo Ishiguro.")
    ask(cache, "Recommend a novel for a long train ride", "b", "Try 'Station Eleven' by Emily St. John Mandel.")
    seen = cache.sharing("default")
    assert (seen["compared"], seen["differed"], seen["sessions_needed"]) == (2, 1, 3)


def test_one_popular_question_proves_nothing_about_the_others(make_cache):
    """Sessions keep asking a question while its answer waits out the promotion window: each
    goes to the engine, and only the question's first need - 1 later sessions are compared."""
    cache = make_cache()
    for i in range(320):
        found = cache.lookup([U("How do I restart my router?")], session=f"s{i}")
        cache.store(found, ANSWER)                      # never promoted: every session forwarded
    seen = cache.sharing("default")
    assert seen["compared"] <= 2 and seen["sessions_needed"] == 3


PLAN = "Which plan am I on and what does it cost per month?"


def test_a_check_that_finds_another_answer_withdraws_what_two_sessions_shared(make_cache):
    cache = make_cache()
    cache.lookup([U("warm up")], session="w")
    prove(cache.policy, "default", 400)
    for session in "ab":                                  # two sessions, one answer: shared
        ask(cache, PLAN, session, "You are on the Basic plan, which costs 9 dollars per month.")
    found = cache.lookup([U(PLAN)], session="c")
    assert found.zone is Zone.HIT and found.entry.scope.value == "global"
    cache.check(found, "You are on the Premium plan, which costs 29 dollars per month.")
    assert cache.lookup([U(PLAN)], session="d").zone is not Zone.HIT
    assert cache.sharing("default")["differed"] == pytest.approx(1, abs=0.01)
    ask(cache, PLAN, "e", "You are on the Basic plan, which costs 9 dollars per month.")
    ask(cache, PLAN, "f", "You are on the Basic plan, which costs 9 dollars per month.")
    assert cache.lookup([U(PLAN)], session="g").zone is not Zone.HIT      # personal for good


def test_hits_of_shared_words_are_sampled_for_checks(make_cache):
    cache = make_cache()
    cache.lookup([U("warm up")], session="w")
    prove(cache.policy, "default", 400)
    for session in "ab":
        ask(cache, "How do I restart my router?", session, ANSWER)
    asked = [cache.lookup([U("How do I restart my router?")], session=f"u{i}") for i in range(200)]
    assert all(f.zone is Zone.HIT for f in asked)
    assert 5 <= sum(f.verify for f in asked) <= 40        # about 10 % while few were checked


def test_rewordings_keep_the_packaged_count_in_a_proven_tenant(make_cache):
    """The proof is about the same words asked again: a class a rewording joined needs share_after."""
    cache = make_cache()
    cache.lookup([U("warm up")], session="w")
    prove(cache.policy, "default", 400)
    ask(cache, "How do I reset my password?", "a", ANSWER)
    ask(cache, "How can I reset my password?", "b", ANSWER)
    assert cache.stats().shared == 0
    ask(cache, "How do I reset my password?", "c", ANSWER)
    assert cache.stats().shared >= 1
