"""A history on one side only says nothing about whether two questions are the same.

The verifier read "the request has a history and the entry none" as a sign of "same": almost
none of its training rows have that shape, and most of those are background that changes
nothing. So "How do I close my savings account at Chase?" after a word about one's finances
was served the answer to "How do I apply for a credit card at Chase?" (p(same) 0.954). Such a
pair must now also pass read as the two bare requests (``Decider._bare_doubts``).
"""

from __future__ import annotations

import random

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide import Zone
from smartcache.paths import shared_data

from conftest import U


def A(text: str) -> dict:
    return {"role": "assistant", "content": text}


FINANCES = [U("I'm sorting out my finances this month."), A("Good idea. What do you need help with?")]
BUDGET = [U("I'm finishing the quarterly budget sheet."), A("Nice, what do you need?")]
ACCOUNTS = [U("最近在整理家里的账"), A("好的，需要我帮什么忙？")]
REPORT = [U("我在做一份销售报表"), A("好的。")]

# (cached question, another question, a history that bears on neither)
DIFFERENT = [
    ("How do I apply for a credit card at Chase?", "How do I close my savings account at Chase?", FINANCES),
    ("How do I export a spreadsheet as a PDF?", "How do I password-protect a spreadsheet?", BUDGET),
    ("支付宝怎么解绑银行卡", "招商银行储蓄卡怎么注销", ACCOUNTS),
    ("Excel里怎么冻结首行？", "Excel里怎么给单元格加边框？", REPORT),
]
SAME = [
    ("How do I apply for a credit card at Chase?", "How do I apply for a Chase credit card?", FINANCES),
    ("支付宝怎么解绑银行卡", "支付宝如何解绑银行卡", ACCOUNTS),
    ("How do I export a spreadsheet as a PDF?", "How can I save a spreadsheet as a PDF?", BUDGET),
    ("Excel里怎么冻结首行？", "Excel怎么把第一行冻结住？", REPORT),
]


def lookup(encoder, cached: str, asked: str, history: list[dict], side: str):
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    stored = cache.store((history if side == "cached" else []) + [U(cached)], "ANSWER", session="s")
    if not stored.stored:       # a time-sensitive question is never written
        return None
    cache.promote(stored.cache_id)
    return cache.lookup((history if side == "request" else []) + [U(asked)], session="s")


@pytest.mark.parametrize("side", ["request", "cached"])
@pytest.mark.parametrize("cached,asked,history", DIFFERENT, ids=[d[1] for d in DIFFERENT])
def test_another_question_with_a_history_on_one_side_is_not_served(encoder, cached, asked, history, side):
    found = lookup(encoder, cached, asked, history, side)
    assert found.zone is not Zone.HIT, found.reasons


@pytest.mark.parametrize("side", ["request", "cached"])
@pytest.mark.parametrize("cached,asked,history", DIFFERENT + SAME, ids=[d[1] for d in DIFFERENT + SAME])
def test_a_history_on_one_side_serves_only_what_the_bare_requests_would(encoder, cached, asked, history, side):
    """An unrelated exchange before one request adds nothing the bare pair lacks: with it, a
    pair is served only where the two bare requests are."""
    bare = lookup(encoder, cached, asked, [], side)
    found = lookup(encoder, cached, asked, history, side)
    assert found.zone is not Zone.HIT or bare.zone is Zone.HIT, (found.reasons, bare.reasons)


def test_the_refusal_says_it_read_the_bare_requests(encoder):
    cached, asked, history = DIFFERENT[0]
    found = lookup(encoder, cached, asked, history, "request")
    assert found.zone is Zone.MISS
    assert "read as the bare requests" in found.reasons[0].detail, found.reasons


@pytest.mark.integration
@pytest.mark.parametrize("source", ["bq", "qqp"])
def test_a_background_on_one_side_serves_no_more_near_misses(encoder, source):
    """Pairs labelled different questions (BQ is held out of training whole; QQP's rows here
    are drawn apart from training's seed), each judged bare and with an unrelated exchange
    before one side. The history must not turn misses into hits. The English exchanges are
    about an order, so the request's domain (read from its history when its turn names none)
    is not its turn's: the bare reading must use the turn's own point."""
    data = shared_data()
    if data is None:
        pytest.skip("../shared/data is absent: the public pair sets are needed")
    from smartcache.eval.calibrate import load_pair_set
    rows = [(a, b) for a, b, label in load_pair_set(source, data) if not label and a != b]
    random.Random(28).shuffle(rows)
    backgrounds = {
        "bq": [ACCOUNTS, REPORT, [U("我下个月要去杭州出差"), A("好的，祝出差顺利。")]],
        "qqp": [[U("I ordered a phone case last week and I want to return it."), A("Sure, I can help with your order.")],
                FINANCES, [U("My package arrived damaged yesterday."), A("Sorry about that! Let's sort it out.")]],
    }[source]
    served = {"bare": 0, "request": 0, "cached": 0}
    for i, (a, b) in enumerate(rows[:200]):
        for side in served:
            history = [] if side == "bare" else backgrounds[i % len(backgrounds)]
            found = lookup(encoder, a, b, history, "request" if side == "bare" else side)
            served[side] += found is not None and found.zone is Zone.HIT
    assert served["request"] <= served["bare"] + 1, served
    assert served["cached"] <= served["bare"] + 1, served
