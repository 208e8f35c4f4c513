"""Bad input gets a clear 4xx, never a 5xx: body size, message count and length, n > 1, and
a last turn longer than the rules compare (answered, neither served nor stored)."""

from __future__ import annotations

import json
import time

from conftest import MODEL, U, chat
from smartcache.context import build_view, parse_messages
from smartcache.errors import InvalidRequest
from smartcache.gateway.limits import check_messages, message_chars

import pytest


def _error(r, status: int, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["message"] and error["type"] == "invalid_request_error"
    if code is not None:
        assert error["code"] == code
    return error


def test_a_30_mb_body_is_refused_with_413_before_it_is_read(gateway):
    with gateway(max_body_bytes=1 << 20) as client:
        huge = json.dumps({"model": MODEL, "messages": [U("x" * (30 << 20))]})
        began = time.perf_counter()
        r = client.post("/v1/chat/completions", content=huge, headers={"content-type": "application/json"})
        _error(r, 413, "request_too_large")
        assert time.perf_counter() - began < 30      # refused, not encoded (it took 50 s and a 500)


def test_a_chunked_body_is_counted_as_it_arrives(gateway):
    with gateway(max_body_bytes=4096) as client:
        def body():
            yield b'{"model": "' + MODEL.encode() + b'", "messages": [{"role": "user", "content": "'
            for _ in range(100):
                yield b"y" * 100
            yield b'"}]}'
        _error(client.post("/v1/chat/completions", content=body(),
                           headers={"content-type": "application/json"}), 413, "request_too_large")
        # Within the limit, the same route still works.
        assert chat(client, [U("What is a cache?")], session=None).status_code == 200


def test_message_count_and_length_limits(gateway):
    with gateway(max_messages=8, max_message_chars=1000) as client:
        many = [U("hi"), {"role": "assistant", "content": "hello"}] * 5
        error = _error(chat(client, many), 400, "too_many_messages")
        assert error["param"] == "messages"
        error = _error(chat(client, [U("a" * 1001)]), 400, "message_too_long")
        assert error["param"] == "messages[0].content"
        parts = [{"type": "text", "text": "b" * 600}, {"type": "text", "text": "c" * 600}]
        _error(chat(client, [{"role": "user", "content": parts}]), 400, "message_too_long")


def test_n_greater_than_one_is_a_400_not_one_choice(gateway):
    with gateway() as client:
        error = _error(chat(client, [U("What is a cache?")], n=3), 400, "unsupported_n")
        assert error["param"] == "n"
        assert chat(client, [U("What is a cache?")], n=1).status_code == 200


def test_a_turn_longer_than_the_rules_compare_is_answered_but_never_cached(gateway):
    long_turn = "Please review this log and tell me what failed. " + "line ok; " * 600
    with gateway() as client:
        first = chat(client, [U(long_turn)])
        assert first.status_code == 200
        assert "turn_too_long" in first.headers["x-smartcache-reason"]
        again = chat(client, [U(long_turn + " ")])
        assert again.headers["x-smartcache-status"] == "miss"
        assert "turn_too_long" in again.headers["x-smartcache-reason"]


def test_the_view_reads_the_head_and_tail_of_a_long_turn():
    text = "START " + "middle " * 5000 + " END?"
    view = build_view(parse_messages([U(text)]))
    assert view.oversized
    assert view.current.startswith("start") and view.current.endswith("end?")
    assert len(view.current) < 2000
    short = build_view(parse_messages([U("How do I reset my password?")]))
    assert not short.oversized


def test_check_messages_counts_text_parts_only():
    assert message_chars([{"type": "text", "text": "abc"}, {"type": "image_url", "image_url": {"url": "x" * 99}}]) == 3
    assert message_chars(None) == 0
    with pytest.raises(InvalidRequest) as info:
        check_messages([U("x" * 11)], max_messages=5, max_message_chars=10)
    assert info.value.code == "message_too_long"
