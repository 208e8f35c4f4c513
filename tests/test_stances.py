"""Stances reversed on the same object are opposite actions, a hard veto (issue 27). Measured
before it was made one: over the public pair sets the new pairs fire on 31 pairs, 30 of them
labelled different (the one "same": "less disk space than X" / "X requires more"); over the dev
sets and the benchmark opposite_actions refuses 121 unwanted and 1 wanted entry."""

from __future__ import annotations

import pytest

from smartcache.decide import Zone

from conftest import U, opposite_actions, remember

REVERSED = [
    ("帮我写一封接受这个offer的邮件", "帮我写一封拒绝这个offer的邮件"),
    ("我支持这个方案，帮我写理由", "我反对这个方案，帮我写理由"),
    ("我同意他的观点，帮我写个回复", "我不同意他的观点，帮我写个回复"),
    ("把这段话扩写一下", "把这段话精简一下"),
    ("电动车有什么优点", "电动车有什么缺点"),
    ("Write an email accepting the job offer", "Write an email declining the job offer"),
    ("Expand this paragraph", "Condense this paragraph"),
    ("Write a speech in favor of the new policy", "Write a speech against the new policy"),
    ("Make this email more formal", "Make this email less formal"),
    ("What are the advantages of remote work?", "What are the disadvantages of remote work?"),
]
SAME_STANCE = [
    ("帮我写一封拒绝这个offer的邮件", "帮我写封邮件，婉拒这个offer"),
    ("我支持这个方案，帮我写理由", "我赞成这个方案，帮我写理由"),
    ("How do I politely decline an invitation?", "How can I politely turn down an invitation?"),
    ("Shorten this paragraph", "Condense this paragraph"),
    ("房费包不包括早餐", "房费包括早餐吗"),      # 包不包括 asks: neither side
]


@pytest.mark.parametrize("a, b", REVERSED)
def test_a_reversed_stance_is_an_opposite_action(a, b):
    assert opposite_actions(a, b)


@pytest.mark.parametrize("a, b", SAME_STANCE)
def test_the_same_stance_reworded_is_not(a, b):
    assert not opposite_actions(a, b)


@pytest.mark.parametrize("a, b", REVERSED[:2] + REVERSED[5:7])
def test_the_cache_refuses_a_reversed_stance_whatever_the_verifier_says(cache, a, b):
    remember(cache, [U(a)], "the answer to the first stance")
    found = cache.lookup([U(b)], session="s1")
    assert found.zone is not Zone.HIT
    assert found.has_reason("opposite_actions") or found.has_reason("intent_reversal"), found.reasons
