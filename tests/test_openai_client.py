"""The gateway as a user runs it (``smartcache serve``), driven by the official ``openai`` client."""

from __future__ import annotations

import uuid

import httpx
import openai
import pytest
from fastapi.testclient import TestClient

from smartcache import SmartCache, load_config
from smartcache.engine.upstream import UpstreamEngine
from smartcache.gateway import create_app

from conftest import wait_until_served

MODEL = "smollm2-135m-instruct"
SYSTEM = {"role": "system", "content": "You are a concise assistant."}
SHORT = {"max_tokens": 64, "stop": ["\n", "。"]}     # short, complete answers (cut ones are never cached)


@pytest.fixture(scope="module")
def client(gateway_server):
    return openai.OpenAI(base_url=gateway_server + "/v1", api_key="sk-test", max_retries=0, timeout=120)


def session_headers():
    return {"x-session-id": "oa-" + uuid.uuid4().hex[:8]}


def ask(client, messages, headers, **kw):
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=messages, extra_headers=headers,
                                                            **{**SHORT, **kw})
    return raw.headers, raw.parse()


def test_miss_store_then_hit_non_streaming(client, gateway_server):
    h = session_headers()
    headers, first = ask(client, [SYSTEM, {"role": "user", "content": "How do I reset my password?"}], h)
    assert headers["x-smartcache-status"] == "miss"
    assert first.choices[0].finish_reason == "stop" and first.choices[0].message.content
    wait_until_served(gateway_server, h["x-session-id"])      # the promotion window of this server
    headers, second = ask(client, [SYSTEM, {"role": "user", "content": "How can I reset my password"}], h)
    assert headers["x-smartcache-status"] == "hit"
    assert headers["x-smartcache-entry"]
    assert second.choices[0].message.content == first.choices[0].message.content
    assert second.id != first.id
    assert second.usage.prompt_tokens_details.cached_tokens == second.usage.prompt_tokens


def test_miss_store_then_hit_streaming(client, gateway_server):
    h = session_headers()
    msgs = [SYSTEM, {"role": "user", "content": "How do I reset my password?"}]
    stream = client.chat.completions.create(model=MODEL, messages=msgs, stream=True, extra_headers=h,
                                            stream_options={"include_usage": True}, **SHORT)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text and chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    wait_until_served(gateway_server, h["x-session-id"])
    with client.chat.completions.with_streaming_response.create(
            model=MODEL, messages=[SYSTEM, {"role": "user", "content": "How can I reset my password"}],
            stream=True,
            extra_headers=h, stream_options={"include_usage": True}, **SHORT) as response:
        assert response.headers["x-smartcache-status"] == "hit"
        replay = list(response.parse())
    assert "".join(c.choices[0].delta.content or "" for c in replay if c.choices) == text
    assert replay[-1].usage.prompt_tokens_details.cached_tokens > 0


def test_half_hit_reports_cached_tokens(client):
    h = session_headers()
    first = [SYSTEM, {"role": "user", "content": "周末去杭州玩三天，预算五千以内，帮我排个行程"}]
    _, r1 = ask(client, first, h)
    follow = first + [{"role": "assistant", "content": r1.choices[0].message.content},
                      {"role": "user", "content": "预算提高到一万"}]
    headers, r2 = ask(client, follow, h, max_tokens=16)
    assert headers["x-smartcache-status"] == "half-hit"
    assert r2.usage.prompt_tokens_details.cached_tokens > 0
    stream = client.chat.completions.create(
        model=MODEL, messages=follow[:-1] + [{"role": "user", "content": "预算提高到八千"}], stream=True,
        extra_headers=h, stream_options={"include_usage": True}, max_tokens=8)
    usage = [c.usage for c in stream if c.usage is not None][-1]
    assert usage.prompt_tokens_details.cached_tokens > 0.7 * usage.prompt_tokens


def test_errors_reach_the_client_as_openai_errors(client):
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-nope", messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], temperature=9)


def test_upstream_mode_forwards_to_any_openai_compatible_server(gateway_server, encoder):
    """A second gateway, in upstream mode, in front of the first (an OpenAI-compatible server)."""
    upstream = UpstreamEngine(gateway_server + "/v1", model=MODEL, tokenizer="smollm2")
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    with TestClient(create_app(cache, upstream)) as front:
        h = {"x-session-id": "up-" + uuid.uuid4().hex[:8]}
        body = {"model": MODEL, "messages": [SYSTEM, {"role": "user", "content": "How do I install docker on ubuntu?"}],
                "stream": True, "stream_options": {"include_usage": True}, **SHORT}
        r = front.post("/v1/chat/completions", json=body, headers=h)
        assert r.headers["x-smartcache-status"] == "miss"
        lines = [l for l in r.text.splitlines() if l.startswith("data: ")]
        assert lines[-1] == "data: [DONE]" and any('"usage"' in l for l in lines)
        # The same question (its paraphrase "How can I …" sits at p(same) 0.687, just below the point).
        hit = front.post("/v1/chat/completions", headers=h, json={
            **body, "stream": False,
            "messages": [SYSTEM, {"role": "user", "content": "How do I install docker on ubuntu"}]})
        assert hit.headers["x-smartcache-status"] == "hit"
        missing = front.post("/v1/chat/completions", json={**body, "model": "gpt-nope", "stream": False}, headers=h)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "model_not_found"
    dead = UpstreamEngine("http://127.0.0.1:9/v1", connect_timeout_s=1)
    with TestClient(create_app(SmartCache(load_config(), encoder=encoder), dead)) as front:
        r = front.post("/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_unreachable"


def test_metrics_endpoint_is_prometheus_text(gateway_server):
    text = httpx.get(gateway_server + "/metrics").text
    assert "# TYPE smartcache_lookups_total counter" in text
    assert "smartcache_entries{state=" in text
