"""Minimal pairs the vectors cannot tell apart: swapped roles, opposite words, a plain
negation, another term to define. Each trap reads almost like its cached request; each
paraphrase next to it must still be a hit. On the real default encoder."""

from __future__ import annotations

import pytest

from smartcache import Zone
from conftest import S, U, remember

SYSTEM = S("You are a helpful assistant.")


@pytest.mark.parametrize("cached, probe, reason", [
    ("小明借了小红多少钱", "小红借了小明多少钱", "roles_swapped"),
    ("What do Indians find most annoying about foreigners?", "What do foreigners find most annoying about Indians?",
     "roles_swapped"),
    ("How do I install docker on ubuntu?", "How do I install ubuntu on docker?", "roles_swapped"),
    ("小货车用什么牌子的轮胎好", "大货车轮胎什么牌子好", "opposite_words"),
    ("长途大巴怎么买票", "短途大巴怎么买票", "opposite_words"),
    ("早上去西湖人多吗", "晚上去西湖人多吗", "opposite_words"),
    ("How do I encode a string to base64 in Python?", "How do I decode a string from base64 in Python?",
     "opposite_words"),
    ("刷屏是什么意思", "不刷屏是什么意思", "negated"),
    ("孕妇能吃什么水果", "孕妇不能吃什么水果", "negated"),
    ("有哪些动物要冬眠", "不冬眠的动物有哪些", "negated"),
    ("初战告捷是什么意思", "初战告捷的捷是什么意思？", "defined_term"),
    ("本命是什么意思？", "大本命是什么意思", "defined_term"),
    ("What does 'idempotent' mean?", "What does 'idempotent operation' mean?", "defined_term"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 16 else None)
def test_minimal_pair_is_never_a_hit(cache, cached, probe, reason):
    remember(cache, [SYSTEM, U(cached)], f"answer: {cached}")
    decision = cache.lookup([SYSTEM, U(probe)], session="s1")
    assert decision.zone is Zone.MISS
    assert decision.has_reason(reason), decision.reasons


PARAPHRASES = [
    ("求韩国电影爱人完整版", "求韩国爱人电影完整版"),                 # side by side: one compound
    ("苹果和香蕉哪个更有营养", "香蕉和苹果哪个更有营养"),             # a list has no roles
    ("八宝粥哪个牌子的比较好吃？", "哪个牌子的八宝粥比较好吃"),       # one modifies the other
    ("How do I install docker on ubuntu?", "How can I install docker on ubuntu"),
    ("银行卡不用了需要注销么。", "银行卡不用了，需要注销吗？"),       # the same negation on both sides
    ("我平时不太上网，帮我推荐一下北京景区附近的酒店", "帮我推荐一下北京景区附近的酒店"),  # background
    ("内卷是什么意思", "内卷什么意思啊"),
    ("What does idempotent mean?", "what does 'idempotent' mean"),
]


@pytest.mark.parametrize("cached, probe", PARAPHRASES)
def test_paraphrase_next_to_a_minimal_pair_hits_on_the_rules_only_path(make_cache, cached, probe):
    cache = make_cache(use_verifier=False)
    remember(cache, [SYSTEM, U(cached)], f"answer: {cached}")
    decision = cache.lookup([SYSTEM, U(probe)], session="s1")
    assert decision.zone is Zone.HIT, decision.reasons


def test_the_verifier_serves_most_seed_paraphrases_and_no_trap(cache):
    """On the verifier path every trap above is a miss (test_minimal_pair_is_never_a_hit and the
    seed traps), and the paraphrases beside them are served at the calibrated operating point
    with a recall floor. 11 of the 15 hit when this was written; since issue 27 the verifier is
    calibrated with thousands of competing entries and without the global-pool shortcut, and 6
    hit (docs/eval/wrong-answers.md): fewer than 6 is a regression."""
    from test_seed_traps import PARAPHRASES as SEED
    from test_seed_traps import SYSTEM as SEED_SYSTEM

    pairs = [(SEED_SYSTEM, a, b) for a, b in SEED] + [(SYSTEM, a, b) for a, b in PARAPHRASES]
    served = 0
    for i, (system, cached, probe) in enumerate(pairs):
        remember(cache, [system, U(cached)], f"answer {i}", session=f"p{i}")
        decision = cache.lookup([system, U(probe)], session=f"p{i}")
        served += decision.zone is Zone.HIT and decision.answer == f"answer {i}"
    assert served >= 6, f"{served} of {len(pairs)} paraphrases served"
