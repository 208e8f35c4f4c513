"""The seed traps from the core issue, on the real default encoder, in Chinese and English."""

from __future__ import annotations

import pytest

from smartcache import Zone
from conftest import A, S, U, remember

SYSTEM = S("你是一个乐于助人的助手。当前时间：2026-12-01 10:00:00")


@pytest.mark.parametrize("cached, probe, reason", [
    ("客服电话为什么打不通", "退款申请多久能到账", "low_similarity"),
    ("开启 A 功能", "别开启 A 功能", "intent_reversal"),
    ("Enable feature A for my account", "Don't enable feature A for my account", "intent_reversal"),
    ("怎么开启自动备份", "怎么关闭自动备份", "opposite_actions"),
    ("How do I install docker on ubuntu", "How do I uninstall docker on ubuntu", "opposite_actions"),
    ("帮我写一封请假邮件", "帮我写一封投诉邮件", "entity_change"),          # doc:请假邮件 -> doc:投诉邮件
    ("Write a sick leave email to my manager", "Write a complaint email to my manager", "entity_change"),
    ("怎么部署", "怎么迁移", "task_action"),
    ("How do I deploy this service?", "How do I migrate this service?", "task_action"),
    ("周末去杭州玩三天，预算五千以内，帮我排个行程", "周末去苏州玩三天，预算五千以内，帮我排个行程", "entity_change"),
    ("订单 48213 的退款到哪一步了", "订单 48231 的退款到哪一步了", "entity_change"),
    ("Book a table for 2 people at 7pm", "Book a table for 4 people at 7pm", "entity_change"),
    ("从北京到上海的高铁要多久", "从上海到北京的高铁要多久", "direction_reversed"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 16 else None)
def test_trap_is_never_a_hit(cache, cached, probe, reason):
    remember(cache, [SYSTEM, U(cached)], f"答案：{cached}")
    decision = cache.lookup([SYSTEM, U(probe)], session="s1")
    assert decision.zone is Zone.MISS
    assert decision.answer is None
    assert decision.has_reason(reason), decision.reasons


PARAPHRASES = [
    ("怎么部署这个服务", "这个服务如何部署"),
    ("退款申请多久能到账", "退款一般几天到账"),
    ("周末去杭州玩三天，预算五千以内，帮我排个行程", "周末去杭州玩3天，预算5000以内，帮我排一下行程"),
    ("How do I reset my password?", "How can I reset my password"),
    ("How do I reset my password?", "I forgot my password, how do I reset it?"),
    ("开启 A 功能", "开启A功能"),
    ("帮我写一封请假邮件", "帮我写一封请假的邮件吧"),
]


@pytest.mark.parametrize("cached, probe", PARAPHRASES)
def test_paraphrase_hits_on_the_rules_only_path(make_cache, cached, probe):
    cache = make_cache(use_verifier=False)
    entry = remember(cache, [SYSTEM, U(cached)], f"答案：{cached}")
    decision = cache.lookup([SYSTEM, U(probe)], session="s1")
    assert decision.zone is Zone.HIT, decision.reasons
    assert decision.entry.cache_id == entry
    assert decision.answer == f"答案：{cached}"
    # Spacing, a particle or courtesy aside, some are one request: the exact or near-exact path finds it first.
    assert any(decision.has_reason(code) for code in ("semantic_match", "exact_match", "near_exact_match"))


def test_budget_raise_is_a_half_hit(cache):
    first = [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    answer = "第1天：西湖、断桥\n第2天：灵隐寺\n第3天：河坊街。合计约4800元。"
    entry = remember(cache, first, answer)
    decision = cache.lookup(first + [A(answer), U("预算提高到一万")], session="s1")
    assert decision.zone is Zone.HALF_HIT
    assert decision.answer is None            # the cached answer is not served ...
    assert decision.entry.cache_id == entry   # ... but its conversation is the reusable prefix
    assert decision.has_reason("constraint_change")


def test_english_constraint_change_is_a_half_hit(cache):
    first = [U("Plan a 3-day trip to Kyoto under $1500")]
    answer = "Day 1: Fushimi Inari. Day 2: Arashiyama. Day 3: Gion. Total about $1400."
    remember(cache, first, answer)
    decision = cache.lookup(first + [A(answer), U("Increase the budget to $3000 and add a day in Nara")],
                            session="s1")
    assert decision.zone is Zone.HALF_HIT
    assert decision.answer is None


def test_correction_invalidates_the_sessions_answers(cache):
    ask = [SYSTEM, U("数据库迁移用 A 方案怎么做")]
    answer = "A 方案：先全量导出，再增量同步……"
    entry = remember(cache, ask, answer)
    assert cache.lookup(ask, session="s1").zone is Zone.HIT
    correction = ask + [A(answer), U("不对，A 方案不适用，改走 B 方案")]
    decision = cache.lookup(correction, session="s1")
    assert decision.zone is Zone.MISS and decision.has_reason("correction")
    assert cache.get(entry).state.value == "invalid"
    again = cache.lookup(ask, session="s1")
    assert again.zone is Zone.MISS and again.answer is None


def test_reference_hits_only_under_the_same_hotel(cache):
    def chat(hotel: str, question: str) -> list:
        return [SYSTEM, U("推荐一家西湖边的酒店"), A(f"推荐{hotel}：紧邻西湖，早餐是自助餐。"), U(question)]

    entry = remember(cache, chat("西湖国宾馆", "西湖国宾馆的早餐值得吃吗"), "国宾馆的早餐很丰富，值得。")
    same = cache.lookup(chat("西湖国宾馆", "那家酒店的早餐值不值得吃"), session="s1")
    assert same.zone is Zone.HIT and same.entry.cache_id == entry
    other = cache.lookup(chat("杭州香格里拉饭店", "那家酒店的早餐值不值得吃"), session="s1")
    assert other.zone is Zone.MISS and other.answer is None


def test_same_last_message_in_another_context_misses(cache):
    doc_a = [U("帮我总结这段话：公司第三季度营收增长 20%，主要来自海外市场。"), A("三季度营收增长 20%，海外驱动。")]
    doc_b = [U("帮我总结这段话：新版 App 修复了登录闪退，并加入深色模式。"), A("修复闪退，新增深色模式。")]
    remember(cache, doc_a + [U("翻译成英文")], "Q3 revenue grew 20%, driven by overseas markets.")
    decision = cache.lookup(doc_b + [U("翻译成英文")], session="s1")
    assert decision.zone is Zone.MISS
    assert decision.has_reason("context_mismatch") or decision.has_reason("context_entities")


def test_small_talk_in_the_history_does_not_block_a_hit(cache):
    ask = U("How do I rotate the API keys of my project?")
    entry = remember(cache, [ask], "Open Settings > Keys, create a new key, then revoke the old one.")
    decision = cache.lookup([U("hi"), A("Hello! How can I help?"), ask], session="s1")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == entry


def test_model_version_bump_makes_the_old_answer_unservable(cache):
    ask = [U("What is a context-aware cache?")]
    remember(cache, ask, "A cache that keys on the conversation.", versions={"model": "smollm2-135m@1"})
    assert cache.lookup(ask, session="s1", versions={"model": "smollm2-135m@1"}).zone is Zone.HIT
    bumped = cache.lookup(ask, session="s1", versions={"model": "smollm2-135m@2"})
    assert bumped.zone is Zone.MISS and bumped.answer is None
    assert cache.invalidate(versions={"model": "smollm2-135m@1"}) == 1
    assert cache.lookup(ask, session="s1", versions={"model": "smollm2-135m@1"}).zone is Zone.MISS


def test_system_prompt_change_is_a_version_change_but_its_timestamp_is_not(cache):
    ask = U("怎么申请退款")
    remember(cache, [S("你是客服。时间 2026-12-01 10:00"), ask], "在订单页点申请退款。")
    assert cache.lookup([S("你是客服。时间 2026-12-02 18:30"), ask], session="s1").zone is Zone.HIT
    assert cache.lookup([S("你是法务助手。时间 2026-12-02 18:30"), ask], session="s1").zone is Zone.MISS


@pytest.mark.parametrize("text", ["今天杭州天气怎么样", "现在美元汇率是多少", "What is the current price of bitcoin?",
                                  "What's the weather in Paris today?"])
def test_time_sensitive_is_never_cached(cache, text):
    result = cache.store([U(text)], "晴", session="s1")
    assert not result.stored and result.reason == "time_sensitive"
    decision = cache.lookup([U(text)], session="s1")
    assert decision.zone is Zone.MISS and not decision.cacheable


@pytest.mark.parametrize("text", ["翻译成英文：明天几点开会？", "把这句话翻译成日语：我今天请假。",
                                  "Rewrite this more politely: the meeting moved to today.",
                                  "Translate into French: see you tomorrow at 5"])
def test_material_to_translate_or_rewrite_is_not_a_question_about_now(cache, text):
    """After an instruction that only transforms its material, the material's "today" is text
    to work on: the answer is the same whenever it is asked."""
    assert cache.store([U(text)], "…", session="s1").stored


@pytest.mark.parametrize("text", ["查一下：明天杭州天气怎么样", "Tell me: what's the weather in Paris today?",
                                  "翻译一下今天的新闻", "总结一下：今天的新闻", "Summarize: today's news",
                                  "要点：今天股市行情", "Tell me: the weather in Paris today",
                                  "Summarize the 8:00 news today",
                                  "Is the store open at 9:00 tomorrow morning in the city centre?"])
def test_a_question_about_now_after_a_colon_is_still_time_sensitive(cache, text):
    assert cache.store([U(text)], "…", session="s1").reason == "time_sensitive"


HIGH_RISK = [("这个药一天吃几次", "这个药每天吃几次比较好", "这个药一天吃几次呢"),
             ("合同违约金一般怎么算", "合同的违约金通常是如何计算的", "合同违约金一般怎么算？"),
             ("What dosage of ibuprofen is safe?", "What is a safe dosage of ibuprofen?",
              "What dosage of ibuprofen is safe")]


@pytest.mark.parametrize("asked, reworded, again", HIGH_RISK, ids=lambda v: v[:12])
def test_high_risk_domains_serve_a_repeat_and_never_a_paraphrase(cache, asked, reworded, again):
    """Medical, legal and financial answers are stored and served again to the same request
    (word for word, or but for punctuation and courtesy, after the same history); a rewording
    is a miss that says why, whatever the rules and the verifier would make of it."""
    cached = remember(cache, [U(asked)], "…")
    hit = cache.lookup([U(again)], session="s1")
    assert hit.zone is Zone.HIT and hit.entry.cache_id == cached, hit.reasons
    assert hit.has_reason("exact_match") or hit.has_reason("near_exact_match"), hit.reasons
    refused = cache.lookup([U(reworded)], session="s1")
    assert refused.zone is Zone.MISS and refused.answer is None and refused.has_reason("repeats_only"), refused.reasons


def test_a_high_risk_answer_is_no_candidate_for_a_request_tagged_otherwise(cache):
    """A rewording the tags read as another domain ("general" reads every domain's entries)
    is not offered the high-risk entry at all."""
    assert cache.fingerprint([U("How much ibuprofen can I safely take?")])[0].signature.domain == "general"
    remember(cache, [U("What dosage of ibuprofen is safe?")], "…")
    decision = cache.lookup([U("How much ibuprofen can I safely take?")], session="s1")
    assert decision.zone is Zone.MISS and decision.answer is None
    assert decision.has_reason("no_candidate"), decision.reasons


def test_a_first_high_risk_request_has_no_candidate_not_a_refused_one(cache):
    assert cache.lookup([U("这个药一天吃几次")], session="s1").has_reason("no_candidate")


@pytest.mark.parametrize("history, other", [
    (["我在吃降压药", "好的，请问是哪一种？"], ["我在吃降糖药", "好的，请问是哪一种？"]),
    (["I'm 8 weeks pregnant", "Congratulations! How can I help?"], ["I'm 40 years old", "Sure, how can I help?"]),
])
def test_a_high_risk_repeat_after_another_history_is_no_repeat(cache, history, other):
    """The same words after a history that differs are another request: no high-risk answer."""
    turn = U("这个药一天吃几次" if history[0][0] == "我" else "What dosage of ibuprofen is safe?")
    messages = [U(history[0]), A(history[1]), turn]
    remember(cache, messages, "…")
    assert cache.lookup(messages, session="s1").zone is Zone.HIT
    refused = cache.lookup([U(other[0]), A(other[1]), turn], session="s1")
    assert refused.zone is not Zone.HIT and refused.answer is None, refused.reasons


def test_a_high_risk_answer_expires_within_a_day_in_finance(cache, clock):
    """A rule or a fee changes: finance answers live a day (medical and legal three). (Today's
    mortgage rate is time-sensitive and never stored at all: tests/test_timely.py.)"""
    ask_ = [U("What is the early repayment fee on a mortgage loan?")]
    remember(cache, ask_, "Often 1-2 % of the amount repaid early; your loan agreement says.")
    assert cache.lookup(ask_, session="s1").zone is Zone.HIT
    clock.advance(2 * 86400)
    assert cache.lookup(ask_, session="s1").zone is Zone.MISS


def test_high_risk_answers_are_never_shared_across_users(make_cache):
    """Proven sharing puts a question's answer in the global pool once three sessions got it;
    never a high-risk one, which another user sees only through an admin's promotion."""
    from conftest import ask
    cache = make_cache()
    for session in "abcdef":
        ask(cache, "What dosage of ibuprofen is safe?", session, "Adults: 200-400 mg every 4-6 hours.")
        ask(cache, "How do I reset my password?", session, "Open Settings, then Security, then Reset password.")
    assert cache.lookup([U("How do I reset my password?")], session="z").zone is Zone.HIT
    assert cache.lookup([U("What dosage of ibuprofen is safe?")], session="z").zone is Zone.MISS


def test_repeat_only_domains_are_the_operators_list(make_cache):
    """Here on the rules-only path, which serves this paraphrase (see above)."""
    ask = [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    reworded = [SYSTEM, U("周末去杭州玩3天，预算5000以内，帮我排一下行程")]
    plain, strict = make_cache(use_verifier=False), make_cache(use_verifier=False, repeat_only_domains=["travel"])
    for cache in (plain, strict):
        remember(cache, ask, "…")
        assert cache.lookup(ask, session="s1").zone is Zone.HIT
    assert plain.lookup(reworded, session="s1").zone is Zone.HIT
    assert strict.lookup(reworded, session="s1").has_reason("repeats_only")


@pytest.mark.parametrize("text", ["这个药一天吃几次", "What dosage of ibuprofen is safe?"])
def test_a_disabled_domain_is_neither_stored_nor_served(make_cache, text):
    cache = make_cache(disabled_domains=["medical"])
    assert cache.store([U(text)], "…", session="s1").reason == "domain_disabled"
    assert cache.lookup([U(text)], session="s1").has_reason("domain_disabled")


def test_another_sessions_personal_answer_is_never_served(cache):
    ask = [U("我的订单 48213 什么时候发货")]
    remember(cache, ask, "您的订单预计明早发货。", session="alice")
    decision = cache.lookup(ask, session="bob")
    assert decision.zone is Zone.MISS and decision.answer is None


def test_global_faq_is_shared_across_sessions_after_promotion(cache):
    ask = [U("退款一般多久到账")]
    result = cache.store(ask, "原路退回，1-3 个工作日到账。", session="alice")
    cache.promote(result.cache_id, to_global=True)
    # The same question from another session (its paraphrase "退款多久能到账" is judged on its words
    # alone since issue 27, and refused at p(same) below the operating point).
    decision = cache.lookup([U("退款一般多久到账？")], session="bob")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == result.cache_id


def test_topic_switch_misses_without_vector_scoring(cache):
    history = [U("推荐一家西湖边的酒店"), A("推荐西湖国宾馆。")]
    remember(cache, [U("推荐一家上海的酒店"), A("推荐和平饭店。"), U("换个话题，Python 怎么读取 CSV 文件")],
             "用 csv 模块或 pandas.read_csv。")
    decision = cache.lookup(history + [U("换个话题，Python 怎么读取 CSV 文件")], session="s1")
    assert decision.zone is Zone.MISS and decision.has_reason("topic_switch")


def test_a_word_for_word_repeat_of_a_topic_switch_is_its_own_answer(cache):
    """The whole conversation again, byte for byte: the answer was given to exactly this."""
    asked = [U("推荐一家西湖边的酒店"), A("推荐西湖国宾馆。"), U("换个话题，Python 怎么读取 CSV 文件")]
    entry = remember(cache, asked, "用 csv 模块或 pandas.read_csv。")
    decision = cache.lookup(asked, session="s1")
    assert decision.zone is Zone.HIT and decision.has_reason("exact_match") and decision.entry.cache_id == entry


def test_reset_invalidates_and_misses(cache):
    ask = [U("帮我写一首关于秋天的诗")]
    entry = remember(cache, ask, "秋风起……")
    decision = cache.lookup(ask + [A("秋风起……"), U("重新开始吧，我们聊点别的")], session="s1")
    assert decision.zone is Zone.MISS and decision.has_reason("reset")
    assert cache.get(entry).state.value == "invalid"


def test_validation_downgrades_a_hit_whose_facts_break_the_budget(cache):
    ask = [U("推荐杭州的酒店，预算 500 元以内")]
    entry = remember(cache, ask, "推荐西湖国宾馆，每晚 1800 元。")
    decision = cache.lookup([U("推荐杭州的酒店，预算500元以内")], session="s1")
    assert decision.zone is Zone.HALF_HIT
    assert decision.has_reason("validation_failed")
    assert cache.get(entry).feedback_score < 1.0


def test_every_decision_carries_its_reasons(cache):
    remember(cache, [U("怎么部署")], "用 docker compose up。")
    for probe in ("怎么部署", "怎么迁移", "今天天气如何", "完全无关的问题：猫为什么喜欢纸箱"):
        decision = cache.lookup([U(probe)], session="s1")
        assert decision.reasons and all(r.code for r in decision.reasons)
        assert decision.to_json()["reasons"]
