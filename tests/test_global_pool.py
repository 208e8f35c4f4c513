"""A candidate from the tenant's global pool is judged on its content, never on where it lives
(issue 27): the verifier once learned "global means same" from training rows that were all
positives, and served "How do I remove a bank card from PayPal?" the answer to "How do I
apply for a credit card at Chase?" at p(same) 0.994."""

from __future__ import annotations

import random

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide import Zone
from smartcache.paths import shared_data

from conftest import U

FAQ = [("How do I apply for a credit card at Chase?", "Apply online at chase.com or in a branch."),
       ("招商银行信用卡怎么申请", "打开掌上生活APP，选择办卡，填写资料即可。")]
OTHERS = ["How do I remove a bank card from PayPal?", "How do I close my savings account at Chase?",
          "支付宝怎么解绑银行卡", "招商银行储蓄卡怎么注销"]


def pooled(encoder, scope: str) -> SmartCache:
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    for question, answer in FAQ:
        stored = cache.store([U(question)], answer, session="writer", scope=scope)
        cache.promote(stored.cache_id, to_global=scope == "global")
    return cache


@pytest.mark.parametrize("scope", ["global", "session"])
def test_another_question_is_a_miss_from_the_pool_as_from_the_session(encoder, scope):
    cache = pooled(encoder, scope)
    for text in OTHERS:
        found = cache.lookup([U(text)], session="reader" if scope == "global" else "writer")
        assert found.zone is not Zone.HIT, (text, found.reasons)


def test_the_same_pair_scores_alike_in_the_pool_and_in_the_session(encoder):
    """Where the entry lives changes nothing the verifier reads."""
    scores = []
    for scope in ("global", "session"):
        cache = pooled(encoder, scope)
        found = cache.lookup([U(OTHERS[0])], session="reader" if scope == "global" else "writer")
        scores.append(found.reasons[0].detail.split(";")[0])
    assert scores[0] == scores[1]


def _questions(data, rng: random.Random) -> tuple[list[str], list[str]]:
    """200 questions to cache and 200 others (100 a language): first questions of QQP and BQ
    pairs, each side drawn from different pairs, none the same text."""
    from smartcache.eval.calibrate import load_pair_set
    cached, asked = [], []
    for name in ("qqp", "bq"):
        rows = load_pair_set(name, data)
        rng.shuffle(rows)
        texts = list(dict.fromkeys(a for a, _, _ in rows[:1000]))
        cached += texts[:100]
        asked += texts[100:200]
    return cached, asked


@pytest.mark.integration
def test_two_hundred_global_entries_serve_no_other_question(encoder):
    data = shared_data()
    if data is None:
        pytest.skip("../shared/data is absent: the public pair sets are needed")
    cached, asked = _questions(data, random.Random(27))
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    written = 0
    for i, question in enumerate(cached):
        stored = cache.store([U(question)], f"answer {i}", session=f"writer-{i}", scope="global")
        if stored.stored:       # a time-sensitive question is never written
            cache.promote(stored.cache_id, to_global=True)
            written += 1
    assert written >= 180
    served = []
    for i, question in enumerate(asked):
        found = cache.lookup([U(question)], session=f"reader-{i}")
        if found.zone is Zone.HIT:
            served.append((question, found.answer, found.reasons[0].detail))
    assert served == []
