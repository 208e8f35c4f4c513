"""Two parts of a request that trade places change what it asks ("A thanks B" / "B thanks A",
"X to Y" / "Y to X"); parts joined symmetrically, and whole clauses moved, do not. Each
example here was written for this rule, in both languages."""

from __future__ import annotations

import pytest

from smartcache import SmartCache, load_config
from smartcache.context import normalize_text
from smartcache.decide.swaps import exchanged_spans

EXCHANGED = [
    ("Convert 100 yen to Korean won.", "Convert 100 Korean won to yen.", ("yen", "korean won")),
    ("Write a note from a tenant thanking the landlord for the quick repair.",
     "Write a note from the landlord thanking a tenant for the quick repair.", ("tenant", "landlord")),
    ("How do I rsync /data from nas1 to backup2?", "How do I rsync /data from backup2 to nas1?", ("nas1", "backup2")),
    ("Is a hippo heavier than a rhino?", "Is a rhino heavier than a hippo?", ("hippo", "rhino")),
    ("How do I turn a tuple into a dict in Python?", "How do I turn a dict into a tuple in Python?", ("tuple", "dict")),
    ("写一封学生感谢老师的信", "写一封老师感谢学生的信", ("学生", "老师")),
    ("3的5次方等于多少", "5的3次方等于多少", ("3", "5")),
    ("把“猫追老鼠”翻译成法语", "把“老鼠追猫”翻译成法语", ("猫", "老鼠")),
    ("怎么把PDF转成Word", "怎么把Word转成PDF", ("pdf", "word")),
    ("深圳到广州的大巴几点发车", "广州到深圳的大巴几点发车", ("深圳", "广州")),
    # only an article stood between the two parts; a contraction spelt another way
    ("Is a crocodile a reptile?", "Is a reptile a crocodile?", ("crocodile", "reptile")),
    ("What's 3 divided by 12?", "What is 12 divided by 3?", ("3", "12")),
    # a quotation's closing mark is no part of its last word ("the cat chased the mouse'")
    ("Put 'the cat chased the mouse' into German.", "Put 'the mouse chased the cat' into German.",
     ("cat", "mouse")),
]

NOT_EXCHANGED = [
    # Joined symmetrically: the same question either way round.
    ("What is the difference between TCP and UDP?", "What is the difference between UDP and TCP?"),
    ("Should I learn Rust or Go first?", "Should I learn Go or Rust first?"),
    ("咖啡和茶哪个更提神", "茶和咖啡哪个更提神"),
    ("数学与物理有什么联系", "物理与数学有什么联系"),
    # A clause moved, not a part exchanged.
    ("What does HTTP 418 mean? Keep it short.", "Keep it short: what does HTTP 418 mean?"),
    ("告诉我光速是多少，简单点说。", "简单点说，告诉我光速是多少。"),
    # The same request, or another one that is no exchange.
    ("How long do I steam broccoli?", "How long do I steam broccoli?"),
    ("How long do I steam broccoli?", "How many minutes should broccoli be steamed?"),
    ("北京到上海的高铁要多久", "北京到杭州的高铁要多久"),
    ("Is a tomato a fruit or a vegetable?", "Is a tomato a vegetable or a fruit?"),
    ("What's the difference between a crocodile and an alligator?",
     "What is the difference between an alligator and a crocodile?"),
    ("Who's older, a cat or a dog?", "Who is older, a dog or a cat?"),
]


@pytest.mark.parametrize("a,b,parts", EXCHANGED)
def test_parts_that_trade_places_are_found(a, b, parts):
    assert exchanged_spans(normalize_text(a), normalize_text(b)) == parts


@pytest.mark.parametrize("a,b", NOT_EXCHANGED)
def test_symmetric_joins_moved_clauses_and_rewordings_are_not_exchanges(a, b):
    assert exchanged_spans(normalize_text(a), normalize_text(b)) is None


@pytest.mark.parametrize("a,b", [EXCHANGED[1][:2], EXCHANGED[5][:2]])
def test_an_exchange_is_a_miss_whatever_the_verifier_says(encoder, a, b):
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    stored = cache.store([{"role": "user", "content": a}], "A cached answer.", session="s")
    cache.promote(stored.cache_id)
    found = cache.lookup([{"role": "user", "content": b}], session="s")
    assert found.zone.value == "miss"
    assert any(r.code.value == "parts_exchanged" for r in found.reasons), found.reasons
