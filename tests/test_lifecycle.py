"""Lifecycle: pending -> ready, feedback, TTL, invalidation, eviction, global promotion."""

from __future__ import annotations

import pytest

from smartcache import EntryNotFound, EntryState, InvalidRequest, Zone
from conftest import A, U, remember

ASK = [U("How do I rotate the API keys of my project?")]
ANSWER = "Open Settings > Keys, create a new key, then revoke the old one."


def test_pending_is_never_served_until_the_window_passes(cache, clock):
    result = cache.store(ASK, ANSWER, session="s1")
    assert result.state is EntryState.PENDING
    assert cache.lookup(ASK, session="s1").zone is Zone.MISS
    clock.advance(cache.config.lifecycle.promotion_window_s + 1)
    decision = cache.lookup(ASK, session="s1")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == result.cache_id


def test_the_timer_wakes_when_an_own_write_falls_due(cache, clock):
    """Another worker's lookup cannot promote this process's write, so its timer must not sleep
    past the write's window (it would serve up to an interval late)."""
    window = cache.config.lifecycle.promotion_window_s
    interval = min(1.0, max(window / 2, 0.05))
    assert cache.next_tick_in() == interval
    cache.store(ASK, ANSWER, session="s1")
    clock.advance(window - 0.01)
    assert cache.next_tick_in() == pytest.approx(0.01)
    clock.advance(0.01)
    assert cache.next_tick_in() == 0.0 and cache.tick() == 1
    assert cache.next_tick_in() == interval


def test_promotion_window_default_is_short(cache):
    assert cache.config.lifecycle.promotion_window_s <= 30


def test_regenerate_during_the_window_kills_the_entry(cache, clock):
    result = cache.store(ASK, ANSWER, session="s1")
    assert cache.feedback(result.cache_id, "regenerate").state is EntryState.INVALID
    clock.advance(3600)
    assert cache.lookup(ASK, session="s1").zone is Zone.MISS


def test_negative_feedback_lowers_the_score_until_it_is_no_longer_recalled(cache):
    entry = remember(cache, ASK, ANSWER)
    first = cache.feedback(entry, "negative")
    assert first.state is EntryState.SUSPECT and first.feedback_score == pytest.approx(0.5)
    suspect = cache.lookup(ASK, session="s1")
    assert suspect.zone is Zone.HIT and suspect.verify        # served, but to be verified in the background
    assert cache.feedback(entry, "negative").state is EntryState.INVALID
    assert cache.lookup(ASK, session="s1").zone is Zone.MISS


def test_feedback_kind_and_id_are_checked(cache):
    entry = remember(cache, ASK, ANSWER)
    with pytest.raises(InvalidRequest):
        cache.feedback(entry, "meh")
    with pytest.raises(EntryNotFound):
        cache.feedback("nope", "positive")


def test_ttl_per_domain_and_explicit(cache, clock):
    travel = remember(cache, [U("推荐杭州西湖边的酒店")], "推荐西湖国宾馆。")
    code = remember(cache, [U("How do I deploy with docker compose?")], "docker compose up -d", session="s2")
    short = remember(cache, [U("写一段产品介绍文案")], "……", session="s3", ttl=60)
    lc = cache.config.lifecycle
    assert cache.get(travel).expires_at - cache.get(travel).created_at == lc.ttl_for("travel")
    assert lc.ttl_for("travel") < lc.ttl_for("code")
    clock.advance(61)
    assert cache.lookup([U("写一段产品介绍文案")], session="s3").zone is Zone.MISS
    clock.advance(lc.ttl_for("travel"))
    assert cache.lookup([U("推荐杭州西湖边的酒店")], session="s1").zone is Zone.MISS
    assert cache.lookup([U("How do I deploy with docker compose?")], session="s2").zone is Zone.HIT
    assert cache.lifecycle.purge() == 2 and cache.get(short) is None and cache.get(code) is not None


def test_frozen_entries_survive_expiry_and_eviction(make_cache, clock):
    cache = make_cache(lifecycle={"capacity": 3})
    pinned = remember(cache, [U("怎么联系人工客服")], "拨打 400-000-0000。")
    cache.backend.update(pinned, state=EntryState.FROZEN)
    for i in range(6):
        remember(cache, [U(f"第 {i} 个问题：怎么导出第 {i} 号报表")], f"答案 {i}", session=f"s{i}")
    assert len(cache.backend) <= 3 and cache.get(pinned) is not None
    clock.advance(10 ** 9)
    assert cache.lookup([U("怎么联系人工客服")], session="s1").zone is Zone.HIT


def test_eviction_keeps_the_hit_entries(make_cache, clock):
    cache = make_cache(lifecycle={"capacity": 4})
    popular = remember(cache, [U("退款多久到账")], "1-3 个工作日。")
    for _ in range(5):
        assert cache.lookup([U("退款多久到账")], session="s1").zone is Zone.HIT
    for i in range(8):
        clock.advance(1)
        remember(cache, [U(f"订单 {1000 + i} 的物流到哪了")], f"在路上 {i}", session=f"x{i}")
    assert len(cache.backend) <= 4
    assert cache.get(popular) is not None and cache.get(popular).hit_count == 5
    assert cache.stats().evicted > 0


def test_invalidate_session_leaves_other_sessions_and_global(cache):
    mine = remember(cache, ASK, ANSWER, session="s1")
    theirs = remember(cache, ASK, ANSWER, session="s2")
    faq = cache.store([U("退款多久到账")], "1-3 个工作日。", session="s1")
    cache.promote(faq.cache_id, to_global=True)
    assert cache.invalidate(session="s1") == 1
    assert cache.get(mine).state is EntryState.INVALID
    assert cache.get(theirs).state is EntryState.READY and cache.get(faq.cache_id).state is EntryState.READY


def test_tenants_are_isolated(cache):
    remember(cache, ASK, ANSWER, session="s1", tenant="acme")
    assert cache.lookup(ASK, session="s1", tenant="globex").zone is Zone.MISS
    faq = cache.store([U("退款多久到账")], "1-3 个工作日。", session="s1", tenant="acme")
    cache.promote(faq.cache_id, to_global=True)
    assert cache.lookup([U("退款多久到账")], session="s9", tenant="globex").zone is Zone.MISS
    assert cache.lookup([U("退款多久到账")], session="s9", tenant="acme").zone is Zone.HIT


def test_session_entries_enter_the_global_pool_only_by_promotion(cache):
    remember(cache, [U("退款多久到账")], "1-3 个工作日。", session="alice")
    assert cache.lookup([U("退款多久到账")], session="bob").zone is Zone.MISS


def test_stats_count_zones_and_states(cache):
    remember(cache, ASK, ANSWER)
    cache.lookup(ASK, session="s1")
    cache.lookup([U("完全不同的问题：猫为什么喜欢纸箱")], session="s1")
    stats = cache.stats()
    assert stats.by_zone["hit"] == 1 and stats.by_zone["miss"] == 1 and stats.hit_rate == 0.5
    assert stats.by_state["ready"] == 1 and stats.entries == 1 and stats.stores == 1


def test_tool_calls_and_empty_answers_are_not_cached(cache):
    assert cache.store(ASK, "   ", session="s1").reason == "empty_answer"
    with_tools = ASK + [{"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
                        "function": {"name": "f", "arguments": "{}"}}]},
                        {"role": "tool", "content": "42"}, U("and then?")]
    assert cache.store(with_tools, "done", session="s1").reason == "tool_calls"


def test_follow_up_reuses_a_pending_previous_turn_as_prefix(cache):
    first = [U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    answer = "第1天：西湖\n第2天：灵隐寺\n第3天：河坊街"
    stored = cache.store(first, answer, session="s1")   # still pending: not servable, but its prefix holds
    decision = cache.lookup(first + [A(answer), U("预算提高到八千，酒店换成西湖边的")], session="s1")
    assert decision.zone is Zone.HALF_HIT and decision.entry.cache_id == stored.cache_id
