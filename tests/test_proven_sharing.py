"""Proven sharing counts a question, not its words: rewordings the engine answered alike in
distinct sessions are one request (issue 28, items 6 and 10). Each wording keeps its own
first answer, so a shared class serves each of its wordings word for word."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import U, ask
from smartcache.decide import ReasonCode, Zone
from smartcache.learn.phrasings import Phrasings
from smartcache.learn.policy import LearnedPolicy, Witnesses

ANSWER = ("Open Settings, choose Security, then Reset password; the link in the e-mail is valid "
          "for one hour and the new password needs twelve characters.")
ROUTER = "Hold the router's power button for ten seconds, then wait two minutes for the lights to settle."
OTHER = "Your password was reset by the administrator yesterday; use the temporary one from the letter."
WORDINGS = ["How do I reset my password?", "How can I reset my password?", "How to reset my password"]


def exact_hit(cache, text: str, session: str) -> bool:
    found = cache.lookup([U(text)], session=session)
    return found.zone is Zone.HIT and found.entry.scope.value == "global" and \
        found.has_reason(ReasonCode.EXACT_MATCH)


def test_rewordings_answered_alike_in_three_sessions_are_shared_each_word_for_word(make_cache):
    cache = make_cache()
    for session, wording in zip("abc", WORDINGS):
        assert ask(cache, wording, session, ANSWER).zone is not Zone.HIT
    # a's and b's wordings are past their window: shared now; c's waits for the class's next witness.
    assert cache.stats().shared == 2
    assert exact_hit(cache, WORDINGS[0], "d") and exact_hit(cache, WORDINGS[1], "e")
    ask(cache, WORDINGS[1], "f", ANSWER)                    # served: nothing to witness
    cache.store(cache.prepare([U(WORDINGS[0])], session="g"), ANSWER)   # a forwarded repeat, answered alike
    assert cache.stats().shared == 3 and exact_hit(cache, WORDINGS[2], "h")


def test_one_session_rewording_itself_is_one_session(make_cache):
    cache = make_cache()
    ask(cache, WORDINGS[0], "a", ANSWER)
    # Forwarded (its own session would serve it): the engine's answer is witnessed, by session a.
    cache.store(cache.prepare([U(WORDINGS[1])], session="a"), ANSWER)
    ask(cache, WORDINGS[2], "b", ANSWER)
    assert cache.stats().shared == 0
    assert cache.lookup([U(WORDINGS[0])], session="c").zone is not Zone.HIT
    ask(cache, WORDINGS[0], "c", ANSWER)                    # a third session: now it is three
    assert cache.stats().shared >= 1


def test_a_neighbour_answered_differently_joins_no_class_and_spoils_nothing(make_cache):
    cache = make_cache()
    ask(cache, "How do I reset my password?", "a", ANSWER)
    ask(cache, "How do I reset my router?", "b", ROUTER)     # near in words, another question to the engine
    ask(cache, "How do I reset my router?", "c", ROUTER)
    assert cache.stats().shared == 0                          # a's class has one session, the router's two
    ask(cache, "How do I reset my password?", "d", ANSWER)
    ask(cache, "How can I reset my password?", "e", ANSWER)
    assert cache.stats().shared == 1                          # a, d and e: the password question only
    found = cache.lookup([U("How do I reset my password?")], session="f")
    assert found.zone is Zone.HIT and found.answer == ANSWER
    assert not exact_hit(cache, "How do I reset my router?", "f")
    ask(cache, "How do I reset my router?", "g", ROUTER)     # the router's third session: its own answer
    found = cache.lookup([U("How do I reset my router?")], session="h")
    assert found.zone is Zone.HIT and found.answer == ROUTER


def test_words_answered_differently_withdraw_every_wording_of_the_class(make_cache):
    cache = make_cache()
    for session, wording in zip("abc", WORDINGS):
        ask(cache, wording, session, ANSWER)
    assert exact_hit(cache, WORDINGS[0], "d")
    # Another session's engine answer to one of the wordings differs: the answers are personal.
    cache.store(cache.prepare([U(WORDINGS[1])], session="x"), OTHER)
    for wording in WORDINGS:
        assert cache.lookup([U(wording)], session="y").zone is not Zone.HIT
    ask(cache, WORDINGS[2], "z", ANSWER)                      # and the class is never shared again
    assert not exact_hit(cache, WORDINGS[2], "w")


def test_a_root_whose_answer_is_gone_still_withdraws_what_its_class_shared(make_cache):
    cache = make_cache()
    for session, wording in zip("abc", WORDINGS):
        ask(cache, wording, session, ANSWER)
    assert exact_hit(cache, WORDINGS[1], "d")
    root = next(cache.policy.witnesses("default", k) for k in cache.policy.shared_keys("default")
                if not cache.policy.witnesses("default", k).root)
    cache.lifecycle.invalidate(tenant="default", cache_id=root.entry)    # feedback, or an admin
    cache.store(cache.prepare([U(WORDINGS[0])], session="e"), ANSWER)   # the root's words start again
    cache.store(cache.prepare([U(WORDINGS[0])], session="x"), OTHER)    # and are answered otherwise
    assert not exact_hit(cache, WORDINGS[1], "y")


def test_a_member_counts_only_for_a_root_that_lists_it():
    from smartcache.learn.judge import AnswerJudge
    from smartcache.learn.sharing import ProvenSharing

    policy = LearnedPolicy()
    sharing = ProvenSharing(policy, lambda: None, lambda: None, AnswerJudge(), need=3,
                            save=lambda tenant: None, count=lambda name: None)
    member = Witnesses("eM", ("b", "e", "f"), root="R")
    policy.witness("t", "R", Witnesses("eR", ("a",), members=("eM",)))
    assert sharing._class_of("t", "M", member)[0] == "R"
    # The root's record was forgotten and its words asked anew: it lists nobody.
    policy.witness("t", "R", Witnesses("eR2", ("d",)))
    assert sharing._class_of("t", "M", member) == ("M", Witnesses("eM", ("b", "e", "f")))
    # A root that is itself another's member (two replicas crossed two classes) is no root.
    policy.witness("t", "R", Witnesses("eR", ("a",), root="X", members=("eM",)))
    assert sharing._class_of("t", "M", member)[0] == "M"


def test_personal_data_in_a_rewording_joins_nothing(make_cache):
    cache = make_cache()
    ask(cache, WORDINGS[0], "a", ANSWER)
    ask(cache, "How do I reset my password? My e-mail is jane.doe@example.com", "b", ANSWER)
    ask(cache, WORDINGS[1], "c", ANSWER)
    assert cache.stats().shared == 0


def test_a_class_survives_the_round_trip_and_older_states_still_read():
    policy = LearnedPolicy()
    policy.witness("t", "k2", Witnesses("e2", ("s2",), root="k1"))
    policy.witness("t", "k1", Witnesses("e1", ("s1", "s2"), members=("e2",)))
    again = LearnedPolicy()
    again.restore("t", policy.state("t"))
    assert again.witnesses("t", "k1") == Witnesses("e1", ("s1", "s2"), members=("e2",))
    assert again.witnesses("t", "k2").root == "k1"
    old = json.loads(policy.state("t"))
    old["shared"] = {"k0": ["e0", ["s0"], False, False]}      # written before classes
    again.restore("t", json.dumps(old))
    assert again.witnesses("t", "k0") == Witnesses("e0", ("s0",))


def test_replicas_pool_a_class_s_members():
    a, b = LearnedPolicy(), LearnedPolicy()
    a.witness("t", "k1", Witnesses("e1", ("s1", "s2"), members=("e2",)))
    b.witness("t", "k1", Witnesses("e1", ("s1", "s3"), members=("e3",)))
    merged = b.merged(a.merged(None, a.take_news("t")), b.take_news("t"))
    b.adopt("t", merged)
    assert b.witnesses("t", "k1") == Witnesses("e1", ("s1", "s2", "s3"), members=("e2", "e3"))


def test_replicas_that_cross_two_classes_make_no_loop():
    a, b = LearnedPolicy(), LearnedPolicy()
    a.witness("t", "R", Witnesses("eR", ("s1", "s2"), members=("eM",)))
    a.witness("t", "M", Witnesses("eM", ("s2",), root="R"))
    b.witness("t", "M", Witnesses("eM2", ("s3", "s4"), members=("eR2",)))
    b.witness("t", "R", Witnesses("eR2", ("s4",), root="M"))
    b.adopt("t", b.merged(a.merged(None, a.take_news("t")), b.take_news("t")))
    r, m = b.witnesses("t", "R"), b.witnesses("t", "M")
    assert not (r.root == "M" and m.root == "R")


def test_dead_stored_phrasings_are_looked_up_once(encoder, clock, tmp_path):
    from smartcache import SmartCache, load_config

    def replica() -> SmartCache:
        return SmartCache(load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")}),
                          encoder=encoder, clock=clock)
    first = replica()
    dead = set()
    for i in range(120):
        stored = first.store([U(f"What is the opening time of museum number {i}?")],
                             f"Museum {i} opens at nine and closes at five, every day but Monday.", session=f"s{i}")
        first.lifecycle.invalidate(tenant="default", cache_id=stored.cache_id)
        dead.add(stored.cache_id)
    first.save_learned()
    second = replica()
    gets = []
    real = second.backend.get
    second.backend.get = lambda cache_id: (gets.append(cache_id), real(cache_id))[1]
    rounds = []
    for r in range(4):                                      # every round ends with a save: the state adopted again
        gets.clear()
        for j in range(5):
            second.store([U(f"How tall is tower number {r}{j}?")], f"Tower {r}{j} is {100 + j} metres tall.",
                         session=f"t{r}{j}")
        rounds.append(len(dead & set(gets)))
        second.save_learned()
    assert rounds[0] == 120 and rounds[1:] == [0, 0, 0], rounds    # each dead one read once


def _unit(*xs: float) -> np.ndarray:
    v = np.array(xs, np.float32)
    return v / np.linalg.norm(v)


def test_phrasings_nearest_first_above_the_floor_within_their_group():
    index = Phrasings()
    index.add("t", "g", "near", _unit(1, 0.1, 0))
    index.add("t", "g", "nearer", _unit(1, 0.01, 0))
    index.add("t", "g", "far", _unit(0, 1, 0))
    index.add("t", "other", "same-vector", _unit(1, 0, 0))
    index.add("u", "g", "other-tenant", _unit(1, 0, 0))
    found = index.nearest("t", "g", _unit(1, 0, 0), 3, 0.5)
    assert [k for k, _ in found] == ["nearer", "near"]
    assert found[0][1] == pytest.approx(1.0, abs=1e-3)


def test_phrasings_forget_the_oldest_first():
    index = Phrasings(kept=3)
    for i in range(5):
        index.add("t", "g", f"k{i}", _unit(1, i, 0))
    assert len(index) == 3
    assert {k for k, _ in index.nearest("t", "g", _unit(1, 0, 0), 10, -1.0)} == {"k2", "k3", "k4"}
    for i in range(5):                                      # a conversation's group goes with its last phrasing
        index.add("t", f"conversation{i}", f"c{i}", _unit(0, 1, i))
    assert index.groups() == 3 and len(index) == 3
    with pytest.raises(ValueError):
        Phrasings(kept=0)


def test_replicas_and_restarts_join_the_phrasings_the_store_tracks(encoder, clock, tmp_path):
    from smartcache import SmartCache, load_config

    def replica() -> SmartCache:
        return SmartCache(load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")}),
                          encoder=encoder, clock=clock)
    first = replica()
    ask(first, WORDINGS[0], "a", ANSWER)
    ask(first, WORDINGS[1], "b", ANSWER)
    first.save_learned()
    second = replica()                                  # another worker, or the first after a restart
    ask(second, WORDINGS[2], "c", ANSWER)               # joins the class the first one started: 3 sessions
    assert second.stats().shared == 2
    assert exact_hit(second, WORDINGS[0], "d")


def test_through_the_gateway_three_users_rewording_one_question_share_its_answers(gateway):
    """No client marks anything global: the gateway's sessions prove it. Each user asks in
    their own words; the engine answers alike; a fourth user is then served, word for word,
    whichever of the first two wordings they send (the third is pending its window)."""
    import time

    from conftest import chat

    with gateway() as client:
        client.app.state.service.engine.answer = ANSWER
        for session, wording in zip("abc", WORDINGS):
            assert chat(client, [U(wording)], session=session).headers["x-smartcache-status"] == "miss"
        deadline = time.time() + 10
        while True:                 # the store, its witness and the promotion run after each answer
            served = chat(client, [U(WORDINGS[1])], session="d")
            if served.headers["x-smartcache-status"] == "hit" or time.time() > deadline:
                break
            time.sleep(0.1)
        assert served.headers["x-smartcache-status"] == "hit"
        assert "exact_match" in served.headers["x-smartcache-reason"]
        assert served.json()["choices"][0]["message"]["content"] == ANSWER
        assert client.get("/admin/stats").json()["learning"]["shared"] == 2     # a's and b's wordings


def test_wordings_far_apart_join_when_the_engine_answered_them_letter_for_letter(make_cache):
    """Below the cosine the judge is run at, only an identical, specific answer (a deterministic
    engine's FAQ answer) tells that two wordings are one question."""
    cache = make_cache()
    answer = "按日计息，日利率0.05%，借10000元一天的利息是5元，按实际借款天数计算。"
    wordings = ["10000元一天利息就要500是这样算吗？", "乍么计息", "利息到底是怎么算的"]
    vectors = cache.encoder.encode(wordings)
    assert float(vectors[0] @ vectors[1]) < 0.5                  # too far apart for the judge's candidates
    for session, wording in zip("abc", wordings):
        ask(cache, wording, session, answer)
    assert cache.stats().shared >= 1
    other = "借款利率以页面显示为准，不同用户的利率不同。"           # unlike: no class, however near
    cache2 = make_cache()
    for session, (wording, said) in zip("abc", zip(wordings, [answer, other, answer])):
        ask(cache2, wording, session, said)
    assert cache2.stats().shared == 0
