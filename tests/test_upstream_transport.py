"""The upstream engine against ``httpx.MockTransport``: what it makes of good, failing and
malformed servers, with no network and no model."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Callable

import httpx
import pytest

from smartcache.engine import EngineError, EngineRequest, Finished, TextDelta
from smartcache.engine.upstream import UpstreamEngine

REQUEST = EngineRequest("m", [{"role": "user", "content": "hi"}], extra={"tools": [{"type": "function"}]})


def sse(*events: Any, done: bool = True) -> bytes:
    """An SSE body: each event a ``data:`` line (str as is, anything else as JSON)."""
    lines = [f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    if content is not None:
        delta["content"] = content
    return {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                        "finish_reason": finish}]}


def make_engine(handler: Callable[[httpx.Request], httpx.Response]) -> tuple[UpstreamEngine, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return handler(request)

    return UpstreamEngine("http://upstream.test/v1", api_key="sk-up", transport=httpx.MockTransport(record)), seen


def collect(engine: UpstreamEngine, request: EngineRequest = REQUEST) -> list:
    async def run() -> list:
        try:
            return [e async for e in engine.stream(request)]
        finally:
            await engine.aclose()
    return asyncio.run(run())


def test_a_normal_stream_is_relayed_chunk_for_chunk_with_the_usage_asked_for():
    usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2,
                                      "prompt_tokens_details": {"cached_tokens": 5}}}
    body = sse(chunk("", role="assistant"), chunk("Hel"), chunk("lo"), chunk(finish="stop"), usage)
    engine, seen = make_engine(lambda r: httpx.Response(200, content=body,
                                                       headers={"content-type": "text/event-stream"}))
    events = collect(engine)
    sent = json.loads(seen[0].content)
    assert seen[0].url.path == "/v1/chat/completions" and seen[0].headers["authorization"] == "Bearer sk-up"
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert sent["tools"] == [{"type": "function"}], "fields the gateway does not read go upstream unchanged"
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert "".join(d.text for d in deltas) == "Hello" and all(d.raw is not None for d in deltas)
    final = events[-1]
    assert isinstance(final, Finished) and final.finish_reason == "stop"
    assert (final.usage.prompt_tokens, final.usage.completion_tokens, final.usage.cached_tokens) == (7, 2, 5)


def test_a_500_becomes_a_502_engine_error_with_the_upstream_message():
    engine, _ = make_engine(lambda r: httpx.Response(500, json={"error": {"message": "GPU on fire"}}))
    with pytest.raises(EngineError) as info:
        collect(engine)
    assert info.value.status == 502 and info.value.code == "upstream_error" and "GPU on fire" in str(info.value)


def test_an_upstream_4xx_keeps_its_status_and_body():
    error = {"error": {"message": "context too long", "type": "invalid_request_error", "code": "ctx"}}
    engine, _ = make_engine(lambda r: httpx.Response(400, json=error))
    with pytest.raises(EngineError) as info:
        collect(engine)
    assert info.value.status == 400 and info.value.body == error


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"error": "a string"}', b'{"error": {"message": 7}}',
                                  b'"just a string"', b""],
                         ids=["text", "list", "error-string", "message-int", "json-string", "empty"])
def test_an_odd_error_body_still_gives_an_engine_error(body):
    engine, _ = make_engine(lambda r: httpx.Response(503, content=body))
    with pytest.raises(EngineError) as info:
        collect(engine)
    assert info.value.status == 502 and (info.value.body is None or isinstance(info.value.body, dict))


@pytest.mark.parametrize("bad", ["{not json", "[1, 2]", '"a string"', "null", '{"choices": "abc"}',
                                 '{"choices": [7]}', '{"choices": [{"delta": "x"}]}',
                                 '{"choices": [{"delta": {"content": 5}}]}',
                                 '{"choices": [{"delta": {"content": ["a"]}}]}'],
                         ids=["truncated", "list", "string", "null", "choices-string", "choice-int",
                              "delta-string", "content-int", "content-list"])
def test_a_malformed_chunk_is_an_engine_error_not_a_crash(bad):
    body = sse(chunk("partial"), bad)
    engine, _ = make_engine(lambda r: httpx.Response(200, content=body))
    with pytest.raises(EngineError) as info:
        collect(engine)
    assert info.value.status == 502 and "malformed" in str(info.value)


@pytest.mark.parametrize("usage", [{"prompt_tokens": "many"}, {"prompt_tokens": 1e400}, {"prompt_tokens": -3},
                                   {"prompt_tokens_details": "none"}, "usage", [1]],
                         ids=["string", "inf", "negative", "details-string", "usage-string", "usage-list"])
def test_an_odd_usage_counts_as_zero_tokens(usage):
    body = sse(chunk("ok"), chunk(finish="stop"), {"choices": [], "usage": usage})
    engine, _ = make_engine(lambda r: httpx.Response(200, content=body))
    final = collect(engine)[-1]
    assert isinstance(final, Finished) and final.usage.prompt_tokens >= 0 and final.usage.cached_tokens == 0


def test_a_dropped_connection_is_a_502_and_a_timeout_a_504():
    def drop(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    for handler, status in ((drop, 502), (slow, 504)):
        engine, _ = make_engine(handler)
        with pytest.raises(EngineError) as info:
            collect(engine)
        assert info.value.status == status


def test_a_stream_without_done_still_finishes():
    engine, _ = make_engine(lambda r: httpx.Response(200, content=sse(chunk("a"), chunk(finish="length"),
                                                                      done=False)))
    final = collect(engine)[-1]
    assert isinstance(final, Finished) and final.finish_reason == "length" and final.usage.prompt_tokens == 0


def test_list_models_falls_back_when_the_upstream_answers_nonsense():
    engine, _ = make_engine(lambda r: httpx.Response(200, json=["not", "an", "object"]))

    async def run() -> list:
        try:
            return await engine.list_models()
        finally:
            await engine.aclose()
    assert asyncio.run(run()) == [{"id": "upstream", "object": "model", "owned_by": "upstream"}]
