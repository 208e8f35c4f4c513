"""The fake engine: deterministic, honestly counted, reusing prefixes as a prefix cache would,
failing on demand; and the gateway branches it lets a test reach in milliseconds (hit, error
before and after the first token, truncation, tool calls)."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from smartcache import SmartCache, load_config
from smartcache.engine import EngineError, EngineRequest, FakeEngine, Finished, GenerationParams, TextDelta
from smartcache.engine.fake import MESSAGE_FRAMING, count_text_tokens, prompt_pieces, split_tokens
from smartcache.gateway import create_app


def ask(text: str, **params) -> EngineRequest:
    return EngineRequest("fake-engine", [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": text}], GenerationParams(**params))


def events(engine: FakeEngine, request: EngineRequest) -> list:
    async def run() -> list:
        return [e async for e in engine.stream(request)]
    return asyncio.run(run())


def answer(engine: FakeEngine, request: EngineRequest) -> tuple[str, Finished]:
    return asyncio.run(engine.complete(request))


# -- the engine -----------------------------------------------------------------------------


def test_the_same_question_gets_the_same_answer_and_another_question_another():
    engine = FakeEngine()
    first, again, other = answer(engine, ask("How do I reset my password?")), \
        answer(engine, ask("How do I reset my password?")), answer(engine, ask("How do I delete my account?"))
    assert first[0] == again[0] != other[0]
    assert first[0].startswith("Fake answer ") and engine.calls == 3 and len(engine.requests) == 3


@pytest.mark.parametrize("text, tokens", [("", 0), ("hi there", 2), ("你好 ok", 3), ("  a\tb\n", 2),
                                          ("预算8000元", 4), ("e-mail, please!", 2)])
def test_the_token_rule(text, tokens):
    assert count_text_tokens(text) == tokens
    assert "".join(split_tokens(text)) == text
    assert len(split_tokens(text)) == max(tokens, 1 if text else 0)


def test_usage_is_honest_one_delta_per_completion_token():
    engine = FakeEngine()
    request = ask("What is the capital of France?")
    out = events(engine, request)
    deltas, final = out[:-1], out[-1]
    assert all(isinstance(d, TextDelta) and d.raw is None for d in deltas) and len(deltas) > 2
    assert isinstance(final, Finished) and final.finish_reason == "stop"
    assert final.usage.completion_tokens == len(deltas) == count_text_tokens("".join(d.text for d in deltas))
    assert final.usage.prompt_tokens == engine.count_tokens(request.messages) == (4 + 2) + (4 + 6)


def test_content_parts_and_tool_calls_are_counted_and_odd_content_is_tolerated():
    engine = FakeEngine()
    messages = [{"role": "user", "content": [{"type": "text", "text": "two words"}, "three more words",
                                             {"type": "image_url"}, 7]},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]},
                {"role": "user", "content": {"odd": True}}]
    assert engine.count_tokens(messages) == 4 + 5 + 4 + count_text_tokens(json.dumps([{"id": "x"}])) + 4
    text, final = answer(engine, EngineRequest("m", messages))
    assert text and final.finish_reason == "stop"


@pytest.mark.parametrize("messages, content_tokens", [
    ([{"role": "user", "content": "hi there"}], 2),
    ([{"role": "system", "content": "  "}, {"role": "user", "content": "你好 ok\n"}], 0 + 3),     # whitespace: none
    ([{"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}, {"role": "user", "content": [7]}],
     count_text_tokens(json.dumps([{"id": "x"}])) + 0),                          # [7]: no text
], ids=["plain", "whitespace-and-cjk", "tool-calls-and-odd-content"])
def test_the_prompt_pieces_are_the_counted_tokens(messages, content_tokens):
    pieces = prompt_pieces(messages)
    assert len(pieces) == FakeEngine().count_tokens(messages) == MESSAGE_FRAMING * len(messages) + content_tokens
    assert pieces.count("<|im_start|>") == pieces.count("<|im_end|>") == len(messages)


def follow_up(first: EngineRequest, answer_text: str, text: str) -> EngineRequest:
    return EngineRequest(first.model, first.messages + [{"role": "assistant", "content": answer_text},
                                                        {"role": "user", "content": text}])


def test_a_re_sent_answer_reuses_the_conversation_as_a_prefix_cache_would():
    engine = FakeEngine()
    first = ask("How do I reset my password?")
    text, done = answer(engine, first)
    assert done.usage.cached_tokens == 0                            # nothing seen yet
    # The follow-up shares the first prompt, the assistant's frame and the answer's tokens.
    exact = answer(engine, follow_up(first, text, "And my e-mail?"))[1].usage
    assert exact.cached_tokens == done.usage.prompt_tokens + 3 + done.usage.completion_tokens
    # Re-spaced, the answer differs from its first token on: only the prompt and the frame are reused.
    respaced = answer(engine, follow_up(first, "  " + text.replace(" ", "  "), "And my phone?"))[1].usage
    assert respaced.cached_tokens == done.usage.prompt_tokens + 3
    # The same prompt again: all but its last token, whose logits an engine must compute.
    assert answer(engine, first)[1].usage.cached_tokens == done.usage.prompt_tokens - 1
    # Another question shares the system message and the user's frame.
    assert answer(engine, ask("What is a cache?"))[1].usage.cached_tokens == (4 + 2) + 3


def test_a_broken_stream_keeps_what_it_generated_and_the_kept_sequences_are_bounded():
    engine = FakeEngine(error_after=2, history=3)
    with pytest.raises(EngineError):
        answer(engine, ask("q"))
    assert engine.kept[-1][-2:] == ("Fake", " answer")
    engine.error_after = None
    for i in range(5):
        answer(engine, ask(f"question number {i}"))
    assert len(engine.kept) == 3


def test_a_prompt_past_the_context_length_is_refused_with_400():
    engine = FakeEngine(context_length=20)
    assert answer(engine, ask("short"))[1].finish_reason == "stop"
    with pytest.raises(EngineError) as info:
        events(engine, ask("word " * 20))
    assert info.value.status == 400 and info.value.code == "context_length_exceeded"


def test_max_tokens_cuts_the_answer_and_finishes_with_length():
    text, final = answer(FakeEngine(), ask("anything", max_tokens=2))
    assert final.finish_reason == "length" and final.usage.completion_tokens == 2
    assert text == "Fake answer"


def test_a_stop_string_cuts_the_answer_before_it():
    text, final = answer(FakeEngine(answer="One. Two. Three."), ask("q", stop=(" Two",)))
    assert text == "One." and final.finish_reason == "stop" and final.usage.completion_tokens == 1


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_a_forced_finish_reason(finish):
    assert answer(FakeEngine(finish=finish), ask("q"))[1].finish_reason == finish


def test_failing_before_the_first_token():
    engine = FakeEngine(fail_status=503)
    with pytest.raises(EngineError) as info:
        events(engine, ask("q"))
    assert info.value.status == 503 and info.value.code == "fake_failure"
    engine.fail_status = None                  # behaviour is changeable between requests
    assert answer(engine, ask("q"))[1].finish_reason == "stop"


def test_failing_mid_stream_after_some_tokens():
    engine, seen = FakeEngine(error_after=2), []

    async def run() -> None:
        async for event in engine.stream(ask("q")):
            seen.append(event)
    with pytest.raises(EngineError) as info:
        asyncio.run(run())
    assert len(seen) == 2 and info.value.code == "fake_midstream"


def test_ending_mid_stream_without_finishing():
    out = events(FakeEngine(end_after=1), ask("q"))
    assert len(out) == 1 and isinstance(out[0], TextDelta)
    with pytest.raises(EngineError):
        answer(FakeEngine(end_after=1), ask("q"))


def test_tool_calls_come_as_an_openai_server_streams_them():
    out = events(FakeEngine(tool_calls=True), ask("look it up"))
    final = out[-1]
    assert isinstance(final, Finished) and final.tool_calls and final.finish_reason == "tool_calls"
    call = out[0].raw["choices"][0]["delta"]["tool_calls"][0]
    assert call["function"]["name"] == "lookup" and json.loads(call["function"]["arguments"])["query"]
    assert out[1].raw["choices"][0]["finish_reason"] == "tool_calls"


def test_a_closed_engine_refuses():
    engine = FakeEngine()
    asyncio.run(engine.aclose())
    with pytest.raises(EngineError) as info:
        events(engine, ask("q"))
    assert info.value.status == 503


def test_a_lone_surrogate_in_the_question_still_gets_an_answer():
    assert answer(FakeEngine(), ask("bad \ud800 text"))[0].startswith("Fake answer ")


# -- the gateway branches it reaches --------------------------------------------------------


@pytest.fixture
def fake_gateway(encoder):
    """``make(engine)``: the gateway on a fake engine and the real encoder, promotion window 0 s."""
    def make(engine: FakeEngine) -> TestClient:
        cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
        return TestClient(create_app(cache, engine, close_engine=False))
    return make


def post(client: TestClient, text: str, *, session: str | None = "s1", **body):
    headers = {"x-session-id": session} if session else {}
    payload = {"model": "fake-engine", "messages": [{"role": "user", "content": text}], **body}
    return client.post("/v1/chat/completions", json=payload, headers=headers)


def data_lines(response) -> list[str]:
    return [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]


def test_gateway_miss_then_hit_without_touching_the_engine(fake_gateway):
    engine = FakeEngine()
    with fake_gateway(engine) as client:
        first = post(client, "How do I reset my password?")
        assert first.status_code == 200 and first.headers["x-smartcache-status"] == "miss"
        usage = first.json()["usage"]
        assert usage["prompt_tokens"] == 4 + 6 and usage["completion_tokens"] == 6
        second = post(client, "How do I reset my password?", session="s2")
        assert second.headers["x-smartcache-status"] == "miss", "another session: its own entry"
        hit = post(client, "How can I reset my password", stream=True)
        assert hit.headers["x-smartcache-status"] == "hit" and engine.calls == 2
        text = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for d in data_lines(hit)[:-1])
        assert text == first.json()["choices"][0]["message"]["content"]


def test_gateway_error_before_the_first_token_is_an_openai_error_with_its_status(fake_gateway):
    with fake_gateway(FakeEngine(fail_status=429)) as client:
        for stream in (False, True):
            r = post(client, "hello there", stream=stream)
            assert r.status_code == 429 and r.json()["error"]["code"] == "fake_failure"


def test_gateway_error_mid_stream_is_reported_in_band_and_nothing_is_stored(fake_gateway):
    engine = FakeEngine(error_after=2)
    with fake_gateway(engine) as client:
        r = post(client, "What is the capital of France?", stream=True)
        lines = data_lines(r)
        assert r.status_code == 200 and json.loads(lines[-2])["error"]["code"] == "fake_midstream"
        assert lines[-1] == "[DONE]"
        engine.error_after = None
        assert post(client, "What is the capital of France?").headers["x-smartcache-status"] == "miss"


@pytest.mark.parametrize("finish", ["length", "content_filter"])
def test_gateway_never_stores_a_cut_or_filtered_answer(fake_gateway, finish):
    engine = FakeEngine(finish=finish)
    with fake_gateway(engine) as client:
        assert post(client, "Tell me about Paris.").json()["choices"][0]["finish_reason"] == finish
        engine.finish = "stop"
        assert post(client, "Tell me about Paris.").headers["x-smartcache-status"] == "miss"


def test_gateway_relays_tool_calls_and_does_not_cache_them(fake_gateway):
    engine = FakeEngine(tool_calls=True)
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    with fake_gateway(engine) as client:
        r = post(client, "Find the weather in Paris.", stream=True, tools=tools)
        assert r.headers["x-smartcache-status"] == "bypass"
        chunks = [json.loads(d) for d in data_lines(r)[:-1]]
        assert chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "lookup"
        assert engine.requests[-1].extra["tools"] == tools


def test_gateway_engine_that_ends_early_in_a_plain_completion(fake_gateway):
    with fake_gateway(FakeEngine(end_after=1)) as client:
        r = post(client, "What is the capital of France?")
        assert r.status_code == 502 and r.json()["error"]["code"] == "engine_ended_early"


def test_gateway_engine_that_ends_early_in_a_stream(fake_gateway):
    """The stream says so in-band and ends with [DONE], as a cut upstream does; nothing is stored."""
    engine = FakeEngine(end_after=2)
    with fake_gateway(engine) as client:
        r = post(client, "What is the capital of France?", stream=True)
        lines = data_lines(r)
        assert r.status_code == 200 and json.loads(lines[-2])["error"]["code"] == "engine_ended_early"
        assert lines[-1] == "[DONE]"
        metrics = client.get("/metrics").text
        assert 'smartcache_engine_errors_total{code="engine_ended_early"} 1.0' in metrics
        engine.end_after = None
        assert post(client, "What is the capital of France?").headers["x-smartcache-status"] == "miss"


def test_gateway_assembles_tool_calls_in_a_plain_completion(fake_gateway):
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    with fake_gateway(FakeEngine(tool_calls=True)) as client:
        body = post(client, "Find the weather in Paris.", tools=tools).json()
        choice = body["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        call = choice["message"]["tool_calls"][0]
        assert call["function"]["name"] == "lookup" and call["id"]
        json.loads(call["function"]["arguments"])


def test_gateway_refuses_hostile_bodies_with_400(fake_gateway):
    with fake_gateway(FakeEngine()) as client:
        deep = '{"model": "m", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
        r = client.post("/v1/chat/completions", content=deep, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["message"]
        lone = '{"model": "%s", "messages": [{"role": "user", "content": "hi \\ud800"}]}' % "fake-engine"
        r = client.post("/v1/chat/completions", content=lone, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["message"]
