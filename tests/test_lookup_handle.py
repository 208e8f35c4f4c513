"""One reading per request: ``lookup`` returns a handle that ``store`` takes.

The handle carries the parsed conversation, fingerprint, version key and gate, so a
miss that is answered and stored reads its request once. These tests count the
fingerprints and gates a request costs, and check that a handle writes exactly the
entry the messages would.
"""

from __future__ import annotations

import dataclasses

import pytest
from fastapi.testclient import TestClient

from conftest import A, U
from smartcache import InvalidRequest, SmartCache, Zone, load_config
from smartcache.decide import Decision, ReasonCode
from smartcache.engine.fake import FakeEngine
from smartcache.gateway import GatewaySettings, create_app
from smartcache.lookup import CacheRequest, Lookup

ASK = [U("杭州三天怎么玩？")]
CORRECTED = [U("去杭州怎么走？"), A("坐高铁到杭州东站。"), U("不对，我是从上海出发，改走高速")]


def counting(obj, name: str) -> list:
    """Wrap ``obj.name`` so each call is recorded; returns the list of calls."""
    calls: list = []
    original = getattr(obj, name)

    def wrapper(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)
    setattr(obj, name, wrapper)
    return calls


def test_a_miss_stored_through_its_lookup_is_read_once(cache) -> None:
    fingerprints = counting(cache.fingerprinter, "fingerprint")
    gates = counting(cache.decider, "gate")
    found = cache.lookup(ASK, session="s1")
    assert isinstance(found, Lookup) and found.zone is Zone.MISS
    result = cache.store(found, "西湖、灵隐寺、龙井村各一天。")
    assert result.stored and result.reason is None
    assert len(fingerprints) == 1 and len(gates) == 1


def test_a_handle_writes_the_entry_the_messages_would(make_cache) -> None:
    by_messages, by_handle = make_cache(), make_cache()
    versions = {"model": "m", "kb": "7"}
    a = by_messages.store(ASK, "答案", session="s1", tenant="t", versions=versions)
    b = by_handle.store(by_handle.lookup(ASK, session="s1", tenant="t", versions=versions), "答案")
    ea, eb = by_messages.get(a.cache_id), by_handle.get(b.cache_id)
    for field in ("tenant", "session_id", "version_key", "context_fingerprint", "prefix_hash",
                  "conversation_hash", "domain", "expires_at", "scope", "state"):
        assert getattr(ea, field) == getattr(eb, field), field
    assert ea.signature == eb.signature
    assert (ea.turn_vector == eb.turn_vector).all()


def test_a_handle_brings_its_own_session_tenant_and_versions(cache) -> None:
    found = cache.lookup(ASK, session="s1")
    for extra in ({"session": "s2"}, {"tenant": "other"}, {"versions": {"model": "x"}}):
        with pytest.raises(InvalidRequest):
            cache.store(found, "答案", **extra)


def test_prepare_serves_a_request_that_was_never_looked_up(cache) -> None:
    request = cache.prepare(ASK, session="s1", tenant="t")
    assert isinstance(request, CacheRequest) and request.gate is None
    result = cache.store(request, "答案")
    assert result.stored and cache.get(result.cache_id).tenant == "t"


def test_a_correction_is_cacheable_only_with_the_history_it_corrects(cache) -> None:
    with_history = cache.lookup(CORRECTED, session="s1")
    assert with_history.has_reason(ReasonCode.CORRECTION) and with_history.cacheable
    assert cache.store(with_history, "从上海走沪杭高速，约两小时。").stored
    bare = cache.lookup([U("不对，改走 B 方案")], session="s1")
    assert bare.has_reason(ReasonCode.CORRECTION) and not bare.cacheable
    refused = cache.store(bare, "好的。")
    assert not refused.stored and refused.reason is ReasonCode.CORRECTION


@pytest.mark.parametrize("text", ["发票抬头写错了，还能改吗？", "我把快递地址填错了，怎么改", "身份证号填错了会影响报名吗",
                                  "I made a mistake in my tax return, how do I amend it?", "更正发票抬头需要什么材料"])
def test_a_first_turn_that_tells_of_a_mistake_is_a_question_not_a_correction(cache, text) -> None:
    """With no earlier answer only a turn that opens with the correction corrects anything."""
    found = cache.lookup([U(text)], session="s1")
    assert not found.has_reason(ReasonCode.CORRECTION) and found.cacheable
    assert cache.store(found, "可以，在订单页申请修改。").stored


@pytest.mark.parametrize("text", ["不对，改走 B 方案", "错了，我要的是靠窗的座位", "No wait, I meant Lisbon",
                                  "That's wrong, use the metric units", "No, I meant Paris", "Sorry, I meant Paris",
                                  "Hmm that's not right", "嗯，不对，改走B方案", "不不不，我是说上海",
                                  "抱歉，我说错了，是上海", "对不起我搞错了，是周三"])
def test_a_first_turn_that_opens_with_a_correction_is_still_one(cache, text) -> None:
    found = cache.lookup([U(text)], session="s1")
    assert found.has_reason(ReasonCode.CORRECTION) and not found.cacheable


def test_refusals_are_reason_codes(cache) -> None:
    assert cache.store(ASK, "  ", session="s1").reason is ReasonCode.EMPTY_ANSWER
    assert cache.store([U("现在几点了？")], "十点", session="s1").reason is ReasonCode.TIME_SENSITIVE


def test_the_gateway_fingerprints_a_request_once(encoder) -> None:
    """Miss and store, then a hit, then a regenerate: one fingerprint each at most; the word-for-
    word repeat is found by its key and never fingerprinted."""
    gateway_cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    fingerprints = counting(gateway_cache.fingerprinter, "fingerprint")
    app = create_app(gateway_cache, FakeEngine(), GatewaySettings(), close_engine=False)
    body = {"model": "fake-engine", "messages": ASK}
    with TestClient(app) as client:
        first = client.post("/v1/chat/completions", json=body, headers={"x-session-id": "s1"})
        assert first.status_code == 200 and first.headers["x-smartcache-status"] == "miss"
        assert len(fingerprints) == 1
        second = client.post("/v1/chat/completions", json={**body, "messages": [U("杭州三天怎么玩")]},
                             headers={"x-session-id": "s1"})
        assert second.headers["x-smartcache-status"] == "hit"
        assert second.headers["x-smartcache-reason"].startswith("exact_match")
        assert len(fingerprints) == 1
        again = client.post("/v1/chat/completions", json={**body, "messages": [U("杭州三天怎么玩")]},
                            headers={"x-session-id": "s1"})
        assert "regenerate" in again.headers["x-smartcache-reason"]
        assert len(fingerprints) == 2


def test_a_bare_correction_is_refused_whatever_settled_its_lookup(make_cache) -> None:
    """Beside a reset, or with change detection off (an ablation), it still means nothing alone."""
    cache = make_cache()
    both = cache.lookup([U("错了，重新开始吧，帮我订去北京的机票")], session="s1")
    assert both.has_reason(ReasonCode.RESET) and not both.cacheable
    assert cache.store(both, "好的。").reason is ReasonCode.CORRECTION
    ablated = make_cache(use_change_detection=False)
    for text in ("不对", "不对，改走B方案"):
        assert ablated.store([U(text)], "好的。", session="s1").reason is ReasonCode.CORRECTION


def test_a_handle_is_stored_only_by_the_cache_that_read_it(make_cache) -> None:
    one, other = make_cache(), make_cache()
    found = one.lookup(ASK, session="s1")
    with pytest.raises(InvalidRequest, match="another SmartCache"):
        other.store(found, "答案")
    with pytest.raises(InvalidRequest):
        one.store(dataclasses.replace(found.request, tenant=""), "答案")
    with pytest.raises(InvalidRequest):
        one.store(dataclasses.replace(found.request, session="x" * 1000), "答案")
    plain = Decision(found.zone, found.reasons)
    with pytest.raises(InvalidRequest, match="no request"):
        one.store(plain, "答案")
    assert one.store(messages=ASK, answer="答案", session="s1").stored    # the keyword names of before


def test_bad_arguments_are_refused_before_the_request_is_read(cache) -> None:
    fingerprints = counting(cache.fingerprinter, "fingerprint")
    for bad in ({"ttl": -1}, {"scope": "everyone"}, {"prompt_tokens": 7.5}):
        with pytest.raises(InvalidRequest):
            cache.store(ASK, "答案", session="s1", **bad)
    with pytest.raises(InvalidRequest):
        cache.store(ASK, 42, session="s1")
    assert fingerprints == []
