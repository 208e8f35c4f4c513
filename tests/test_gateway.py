"""The gateway in process (Starlette's TestClient) on the FakeEngine and the real encoder; the
checks whose meaning is the engine's own (real generation, the bundled engine's reuse of a
half-hit's KV prefix) run on the bundled engine too, as integration tests."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from conftest import MODEL, chat
from smartcache import SmartCache, load_config
from smartcache.engine import FakeEngine
from smartcache.gateway import AuthPolicy, KeyRegistry, RequestControls, create_app, dock_history

SYSTEM = {"role": "system", "content": "You are a concise assistant."}


def U(text):
    return {"role": "user", "content": text}


@pytest.fixture
def client(gateway):
    with gateway() as c:
        yield c


@pytest.fixture(params=["fake", pytest.param("bundled", marks=pytest.mark.integration)])
def any_client(request):
    """``client`` on the FakeEngine, and on the bundled engine as an integration test."""
    make = request.getfixturevalue("gateway" if request.param == "fake" else "real_gateway")
    with make() as c:
        yield c


def engine_work(engine) -> int:
    """How often the engine was asked: streams the fake began, or the bundled engine's KV lookups."""
    return engine.calls if isinstance(engine, FakeEngine) else engine.kv.stats().lookups


def sse_events(response):
    events = []
    for line in response.text.splitlines():
        if line.startswith("data: "):
            events.append(line[6:] if line[6:] == "[DONE]" else json.loads(line[6:]))
    return events


def test_miss_then_paraphrase_hit_without_the_engine(any_client):
    client, engine = any_client, any_client.app.state.service.engine
    first = chat(client, [SYSTEM, U("How do I reset my password?")])
    assert first.status_code == 200 and first.headers["x-smartcache-status"] == "miss"
    answer = first.json()["choices"][0]["message"]["content"]
    work_before = engine_work(engine)
    # a paraphrase the verifier serves ("How can I …" is near-exact: another form of the question)
    second = chat(client, [SYSTEM, U("How would I reset my password?")])
    assert second.headers["x-smartcache-status"] == "hit", second.headers
    assert second.json()["choices"][0]["message"]["content"] == answer
    assert engine_work(engine) == work_before                           # the engine was not touched
    assert float(second.headers["x-smartcache-similarity"]) >= 0.8
    usage = second.json()["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] > 0
    assert second.json()["id"] != first.json()["id"]
    assert "semantic_match" in second.headers["x-smartcache-reason"]


def test_hit_replayed_as_a_stream(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    r = chat(client, [SYSTEM, U("How can I reset my password")], stream=True,
             stream_options={"include_usage": True})
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["x-smartcache-status"] == "hit"
    events = sse_events(r)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens_details"]["cached_tokens"] > 0
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text.strip()


def test_condition_change_is_a_half_hit_reusing_the_kv_prefix(any_client):
    client = any_client
    first = [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    r1 = chat(client, first)
    answer = r1.json()["choices"][0]["message"]["content"]
    follow = first + [{"role": "assistant", "content": answer}, U("预算提高到一万")]
    r2 = chat(client, follow, max_tokens=16)
    assert r2.headers["x-smartcache-status"] == "half-hit", r2.headers
    usage = r2.json()["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] > 0.7 * usage["prompt_tokens"]


def test_half_hit_docks_a_reformatted_answer_back_to_its_bytes(any_client):
    client = any_client
    first = [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    r1 = chat(client, first)
    answer = r1.json()["choices"][0]["message"]["content"]
    trimmed = "  " + answer.replace(" ", "  ") + "\n"
    r2 = chat(client, first + [{"role": "assistant", "content": trimmed}, U("预算提高到一万")], max_tokens=8)
    assert r2.headers["x-smartcache-status"] == "half-hit"
    if trimmed != answer:
        assert r2.headers["x-smartcache-docked"] == "1"
    usage = r2.json()["usage"]
    assert usage["prompt_tokens_details"]["cached_tokens"] > 0.7 * usage["prompt_tokens"]


def test_a_docked_half_hit_sends_the_cached_bytes_and_reuses_all_before_the_new_turn(client):
    engine = client.app.state.service.engine
    first = [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")]
    r1 = chat(client, first)
    answer = r1.json()["choices"][0]["message"]["content"]
    respaced = "  " + answer.replace(" ", "  ") + "\n"
    r2 = chat(client, first + [{"role": "assistant", "content": respaced}, U("预算提高到一万")])
    assert r2.headers["x-smartcache-status"] == "half-hit" and r2.headers["x-smartcache-docked"] == "1"
    assert engine.requests[-1].messages[2]["content"] == answer
    # Reused: the first prompt, the assistant's frame (3 tokens) and the answer; not the new turn.
    before = r1.json()["usage"]
    assert r2.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == \
        before["prompt_tokens"] + 3 + before["completion_tokens"]


def test_dock_history_repairs_whitespace_only():
    msgs = [U("q"), {"role": "assistant", "content": "a  b\n", "reasoning_content": "r"}, U("next")]
    docked, n = dock_history(msgs, "a b")
    assert n == 1 and docked[1] == {"role": "assistant", "content": "a b", "reasoning_content": "r"}
    assert msgs[1]["content"] == "a  b\n"                     # the caller's list is untouched
    assert dock_history(msgs, "a c") == (msgs, 0)


def test_entity_change_is_not_served(client):
    chat(client, [SYSTEM, U("周末去杭州玩三天，预算五千以内，帮我排个行程")])
    r = chat(client, [SYSTEM, U("周末去苏州玩三天，预算五千以内，帮我排个行程")])
    assert r.headers["x-smartcache-status"] == "miss"
    assert "entity_change" in r.headers["x-smartcache-reason"]


TWO_TENANTS = KeyRegistry.from_mapping({"keys": [{"key": "sk-acme", "tenant": "acme"},
                                                  {"key": "sk-other", "tenant": "other-co"}]})


def test_sessions_and_tenants_are_isolated(gateway):
    acme, other = {"authorization": "Bearer sk-acme"}, {"authorization": "Bearer sk-other"}
    paraphrase = [SYSTEM, U("How can I reset my password")]
    with gateway(auth=AuthPolicy(TWO_TENANTS)) as client:
        chat(client, [SYSTEM, U("How do I reset my password?")], session="alice", headers=acme)
        assert chat(client, paraphrase, session="bob", headers=acme).headers["x-smartcache-status"] == "miss"
        keyed = chat(client, paraphrase, session="alice", headers=other)
        assert keyed.headers["x-smartcache-status"] == "miss"
        assert chat(client, paraphrase, session="alice", headers=acme).headers["x-smartcache-status"] == "hit"
    # Behind a proxy that authenticates, x-tenant-id names the tenant.
    with gateway(auth=AuthPolicy(trust_tenant_header=True)) as client:
        chat(client, [SYSTEM, U("How do I reset my password?")], session="alice")
        tenant = chat(client, paraphrase, session="alice", headers={"x-tenant-id": "other-co"})
        assert tenant.headers["x-smartcache-status"] == "miss"


def test_version_key_follows_system_prompt_and_kb_version(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    changed = chat(client, [{"role": "system", "content": "You are a pirate."}, U("How can I reset my password")])
    assert changed.headers["x-smartcache-status"] == "miss"
    kb = chat(client, [SYSTEM, U("How can I reset my password")], headers={"x-kb-version": "2026-12"})
    assert kb.headers["x-smartcache-status"] == "miss"


def test_cache_control_headers(client):
    r = chat(client, [SYSTEM, U("How do I reset my password?")], headers={"cache-control": "no-store"})
    assert r.headers["x-smartcache-status"] == "miss"
    assert client.get("/admin/entries").json()["total"] == 0
    chat(client, [SYSTEM, U("How do I reset my password?")], headers={"x-smartcache-ttl": "3600"})
    entry = client.get("/admin/entries").json()["data"][0]
    assert entry["expires_at"] - entry["created_at"] == pytest.approx(3600)
    r = chat(client, [SYSTEM, U("How can I reset my password")], headers={"cache-control": "no-cache"})
    assert r.headers["x-smartcache-status"] == "bypass"


def test_repeat_counts_as_regenerate_and_kills_the_pending_answer(encoder):
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 30.0}), encoder=encoder)
    with TestClient(create_app(cache, FakeEngine(model_id=MODEL))) as c:
        msgs = [SYSTEM, U("How do I reset my password?")]
        chat(c, msgs)
        first_id = c.get("/admin/entries").json()["data"][0]["id"]
        again = chat(c, msgs)
        assert again.headers["x-smartcache-status"] == "miss"
        assert "regenerate" in again.headers["x-smartcache-reason"]
        assert c.get(f"/admin/entries/{first_id}").json()["state"] == "invalid"
        explicit = chat(c, [SYSTEM, U("How can I reset my password")], headers={"x-smartcache-regenerate": "1"})
        assert "regenerate" in explicit.headers["x-smartcache-reason"]


def test_regenerating_a_served_hit_counts_as_pollution(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    probe = [SYSTEM, U("How can I reset my password")]
    hit = chat(client, probe)
    assert hit.headers["x-smartcache-status"] == "hit"
    entry = hit.headers["x-smartcache-entry"]
    chat(client, probe)                                           # the user asks again: regenerate
    stats = client.get("/admin/stats").json()
    assert stats["pollution"] == 1
    assert client.get(f"/admin/entries/{entry}").json()["feedback_score"] < 1.0
    assert "smartcache_cache_pollution_total 1.0" in client.get("/metrics").text


def test_correction_invalidates_the_session(client):
    first = [SYSTEM, U("Deploy the service with plan A")]
    r1 = chat(client, first)
    follow = first + [{"role": "assistant", "content": r1.json()["choices"][0]["message"]["content"]},
                      U("No, that's wrong, use plan B instead")]
    r2 = chat(client, follow)
    assert r2.headers["x-smartcache-status"] == "miss" and "correction" in r2.headers["x-smartcache-reason"]
    states = {e["state"] for e in client.get("/admin/entries?session=s1").json()["data"]}
    assert "invalid" in states


def test_never_stored_tools_and_time_sensitive(client):
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    r = chat(client, [SYSTEM, U("How do I reset my password?")], tools=tools)
    assert r.headers["x-smartcache-status"] == "bypass" and "tools" in r.headers["x-smartcache-reason"]
    r = chat(client, [SYSTEM, U("What is the weather in Paris today?")])
    assert r.headers["x-smartcache-status"] == "miss"
    assert client.get("/admin/entries").json()["total"] == 0
    # An answer cut by max_tokens is kept with its limit (tests/test_cut_answers.py).
    r = chat(client, [SYSTEM, U("Explain how the tides work")], max_tokens=2)
    assert r.json()["choices"][0]["finish_reason"] == "length"
    assert client.get("/admin/entries").json()["total"] == 1


def test_bad_input_gets_openai_style_4xx(client):
    cases = [
        (client.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"}), 400),
        (client.post("/v1/chat/completions", json=[1, 2]), 400),
        (client.post("/v1/chat/completions", json={"model": MODEL}), 400),
        (client.post("/v1/chat/completions", json={"model": MODEL, "messages": []}), 400),
        (client.post("/v1/chat/completions", json={"model": MODEL, "messages": [{"role": "wizard", "content": "x"}]}),
         400),
        (client.post("/v1/chat/completions", json={"model": MODEL, "messages": [U("x")], "temperature": 7}), 400),
        (chat(client, [U("x")], headers={"x-smartcache-ttl": "soon"}), 400),
        (chat(client, [U("x")], headers={"x-smartcache-ttl": "-5"}), 400),
        (client.post("/v1/chat/completions", json={"model": "gpt-9", "messages": [U("x")]}), 404),
        (chat(client, [U("word " * 9000)]), 400),
        (client.get("/admin/entries/nope"), 404),
        (client.post("/admin/entries/nope/feedback", json={"kind": "negative"}), 404),
        (client.post("/admin/entries/nope/feedback", json={"kind": "meh"}), 400),
        (client.get("/admin/entries?state=bogus"), 400),
    ]
    for response, status in cases:
        assert response.status_code == status, response.text
        error = response.json()["error"]
        assert error["message"] and error["type"]
    assert client.get("/health").json()["status"] == "ok"


def test_admin_api_lists_inspects_promotes_and_drops(client):
    chat(client, [SYSTEM, U("How do I reset my password?")], session="s9")
    listed = client.get("/admin/entries?session=s9").json()
    assert listed["total"] == 1
    entry_id = listed["data"][0]["id"]
    full = client.get(f"/admin/entries/{entry_id}").json()
    assert full["signature"]["text"] and full["version_key"]
    promoted = client.post(f"/admin/entries/{entry_id}/promote", json={"to_global": True}).json()
    assert promoted["scope"] == "global"
    # A global FAQ entry is served to another session of the tenant.
    other = chat(client, [SYSTEM, U("How can I reset my password")], session="s10")
    assert other.headers["x-smartcache-status"] == "hit"
    fb = client.post(f"/admin/entries/{entry_id}/feedback", json={"kind": "negative"}).json()
    assert fb["score"] < 1.0
    assert client.delete(f"/admin/entries/{entry_id}").json()["deleted"] is True
    assert client.get(f"/admin/entries/{entry_id}").status_code == 404


def test_admin_invalidation_and_version_bump(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    n = client.post("/admin/sessions/s1/invalidate?tenant=default").json()["invalidated"]
    assert n == 1
    assert chat(client, [SYSTEM, U("How can I reset my password")]).headers["x-smartcache-status"] == "miss"
    chat(client, [SYSTEM, U("How do I install docker on ubuntu?")], session="s2")
    bumped = client.post("/admin/versions/bump", json={"tenant": "default"}).json()
    assert bumped["invalidated"] >= 1
    r = chat(client, [SYSTEM, U("How can I install docker on ubuntu")], session="s2")
    assert r.headers["x-smartcache-status"] == "miss"


def test_client_feedback_endpoint_is_scoped_to_the_tenant(gateway):
    with gateway(auth=AuthPolicy(trust_tenant_header=True)) as client:
        r = chat(client, [SYSTEM, U("How do I reset my password?")])
        entry = client.get("/admin/entries").json()["data"][0]["id"]
        denied = client.post("/v1/smartcache/feedback", json={"entry": entry, "kind": "negative"},
                             headers={"x-tenant-id": "intruder"})
        assert denied.status_code == 404
        ok = client.post("/v1/smartcache/feedback", json={"entry": entry, "kind": "negative"})
        # Negative feedback kills a pending entry, and demotes a ready one (this app's window is 0 s,
        # so its background tick may have promoted it already).
        assert ok.status_code == 200 and ok.json()["state"] in ("invalid", "suspect")
        assert r.status_code == 200


def test_admin_token(gateway):
    with gateway() as c:
        pass
    from smartcache.gateway.app import create_app as make
    app = make(c.app.state.service.cache, c.app.state.service.engine, admin_token="s3cret", close_engine=False)
    with TestClient(app) as c2:
        assert c2.get("/admin/stats").status_code == 401
        assert c2.get("/admin/stats", headers={"authorization": "Bearer s3cret"}).status_code == 200


def test_metrics_and_models(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    chat(client, [SYSTEM, U("How can I reset my password")])
    text = client.get("/metrics").text
    for name in ("smartcache_lookups_total{zone=\"hit\"} 1.0", "smartcache_hit_rate",
                 "smartcache_saved_prompt_tokens_total{kind=\"hit\"}", "smartcache_request_seconds_bucket",
                 "smartcache_time_to_first_token_seconds", "smartcache_entries{state=\"ready\"}",
                 "smartcache_cache_pollution_total"):
        assert name in text, name
    models = client.get("/v1/models").json()
    assert models["data"][0]["id"] == MODEL


def test_shadow_drops_a_suspect_entry_the_engine_contradicts(client):
    service = client.app.state.service
    cache = service.cache
    versions = service.versions(MODEL, RequestControls(tenant="default", session="s1"))
    stored = cache.store([SYSTEM, U("How do I reset my password?")], "Bananas are yellow and rich in potassium.",
                         session="s1", versions=versions)
    cache.promote(stored.cache_id)
    cache.feedback(stored.cache_id, "negative")       # 0.5: suspect, still recalled, served with verification
    assert cache.get(stored.cache_id).state.value == "suspect"
    service.engine.answer = "Open Settings, choose Security, then Reset password and follow the e-mailed link."
    r = chat(client, [SYSTEM, U("How can I reset my password")])
    assert r.headers["x-smartcache-status"] == "hit", r.headers
    client.portal.call(client.app.state.service.shadow.drain)
    verdicts = client.app.state.service.shadow.verdicts
    assert verdicts and verdicts[-1][0] == stored.cache_id and verdicts[-1][1].outcome == "drop"
    assert cache.get(stored.cache_id).state.value == "invalid"
    assert 'smartcache_shadow_total{outcome="drop"} 1.0' in client.get("/metrics").text


def test_anonymous_repeats_are_not_regenerates(client):
    msgs = [SYSTEM, U("How do I reset my password?")]
    chat(client, msgs, session=None)
    again = chat(client, msgs, session=None)
    assert "regenerate" not in again.headers["x-smartcache-reason"]
    assert client.get("/admin/entries").json()["total"] == 0        # no session: nothing is written


def test_admin_stats_carry_the_dashboards_plots(client):
    chat(client, [SYSTEM, U("How do I reset my password?")])
    assert chat(client, [SYSTEM, U("How can I reset my password")]).headers["x-smartcache-status"] == "hit"
    chat(client, [SYSTEM, U("How do I reset my password?")], session="s2")
    stats = client.get("/admin/stats").json()
    rows = stats["timeline"]
    assert sum(r["lookups"] for r in rows) == 3
    assert all(r["lookup_p50_ms"] > 0 and r["lookup_p99_ms"] >= r["lookup_p50_ms"] for r in rows if r["lookups"])
    assert sum(r["prompt_tokens"] for r in rows) == stats["prompt_tokens"] > 0
    assert 0 < sum(r["saved_tokens"] for r in rows) == stats["saved_tokens"] <= stats["prompt_tokens"]
    (tenant,) = stats["by_tenant"]
    assert tenant["tenant"] == "default" and tenant["hit"] == 1 and tenant["hit"] + tenant["miss"] == 3


def test_an_unexpected_failure_on_the_chat_path_is_an_openai_500_and_the_gateway_goes_on(client, monkeypatch):
    # The chat endpoint has a lane of its own (gateway.app.Gateway): errors FastAPI's handlers
    # would have written must still leave as OpenAI error bodies, the unforeseen ones too.
    service = client.app.state.service
    real = service.handle

    async def broken(req, controls):
        raise RuntimeError("a bug")

    monkeypatch.setattr(service, "handle", broken)
    response = chat(client, [U("What is a cache?")])
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "api_error" and response.json()["error"]["code"] == "internal_error"
    monkeypatch.setattr(service, "handle", real)
    assert chat(client, [U("What is a cache?")]).status_code == 200


def test_the_chat_lane_refuses_a_body_over_the_limit_and_answers_other_paths_through_fastapi(gateway):
    with gateway(max_body_bytes=2000) as client:
        big = client.post("/v1/chat/completions", json={"model": MODEL, "messages": [U("x" * 5000)]})
        assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
        assert client.get("/v1/models").status_code == 200
        schema = client.get("/openapi.json").json()
        assert "/v1/chat/completions" in schema["paths"]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_only_a_store_in_memory_is_looked_up_on_the_event_loop_and_then_on_one_thread(backend, encoder, tmp_path):
    # On SQLite (or Redis) a store call may wait on another process: on the event loop it would
    # stall every request. In memory there is nothing to wait for, and the thread hop cost more.
    import threading

    from fastapi.testclient import TestClient

    from smartcache.gateway import GatewaySettings

    store = {"backend": backend} | ({"path": str(tmp_path / "c.db")} if backend == "sqlite" else {})
    cache = SmartCache(load_config(store=store, lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    seen = {"exact": [], "whole": []}
    for name, method in (("exact", "lookup_exact"), ("whole", "lookup")):
        real = getattr(cache, method)
        setattr(cache, method, lambda *a, real=real, name=name, **k: (seen[name].append(threading.current_thread()),
                                                                      real(*a, **k))[1])
    with TestClient(create_app(cache, FakeEngine(model_id=MODEL), GatewaySettings(regenerate_window_s=0))) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread())
        assert chat(client, [U("What is a cache?")]).headers["x-smartcache-status"] == "miss"
        for _ in range(2):      # the first promotes the answer (a tick: the whole lookup), the second not
            assert chat(client, [U("What is a cache?")]).headers["x-smartcache-status"] == "hit"
        assert chat(client, [U("What is a cache made of?")]).status_code == 200
    # In memory the exact path runs on the loop, and the second repeat ends there; the encoder never does.
    assert all(t is not loop_thread for t in seen["whole"])
    # The whole lookup: in memory, always the one lookup thread (lookups take turns under the GIL
    # anyway); on SQLite, the shared pool, where one lookup's wait on a lock holds up no other.
    lookup_threads = {t.name.startswith("smartcache-lookup") for t in seen["whole"]}
    assert lookup_threads == {backend == "memory"}
    assert backend == "sqlite" or len(set(seen["whole"])) == 1
    assert len(seen["whole"]) == (3 if backend == "memory" else 4)
    assert seen["exact"] == ([loop_thread] * 4 if backend == "memory" else [])


def test_an_app_started_again_looks_up_again(encoder):
    # Its shutdown lets the lookup thread go; a second start must make another, not fail a lookup.
    from fastapi.testclient import TestClient

    from smartcache.gateway import GatewaySettings

    cache = SmartCache(load_config(store={"backend": "memory"}, lifecycle={"promotion_window_s": 0.0}),
                       encoder=encoder)
    app = create_app(cache, FakeEngine(model_id=MODEL), GatewaySettings(regenerate_window_s=0), close_engine=False)
    for asked in ("What is a cache?", "What is a queue?"):
        with TestClient(app) as client:
            assert chat(client, [U(asked)]).headers["x-smartcache-status"] == "miss"
            assert chat(client, [U(asked + " Explain briefly.")]).status_code == 200   # the whole lookup


def test_a_store_in_memory_held_by_another_thread_is_not_free_now():
    # A put builds a pool's graph under the store's lock (seconds): the event loop must not wait.
    import threading

    from smartcache.store import MemoryStore

    store = MemoryStore(4)
    held, release = threading.Event(), threading.Event()

    def hold():
        with store._lock:
            held.set()
            release.wait(5)

    assert store.free_now()
    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    assert not store.free_now()
    release.set()
    holder.join()
    assert store.free_now()


def test_the_event_loop_never_runs_the_encoder_for_an_exact_hit_on_another_sessions_global_answer(encoder):
    # The learning cache samples such hits for a check, and its key is read from the fingerprint.
    import threading

    from smartcache.gateway import GatewaySettings

    calls = []

    class Spy:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def encode(self, texts):
            calls.append(threading.current_thread())
            return self.inner.encode(texts)

    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=Spy(encoder))
    with TestClient(create_app(cache, FakeEngine(model_id=MODEL), GatewaySettings())) as client:
        loop_thread = client.portal.call(lambda: threading.current_thread())
        assert chat(client, [U("How do I reset my password?")], headers={"x-session-id": "alice"}).status_code == 200
        [entry] = cache.entries()
        cache.promote(entry.cache_id, to_global=True)
        calls.clear()
        repeat = chat(client, [U("how do I reset my password")], headers={"x-session-id": "bob"})
        assert repeat.headers["x-smartcache-status"] == "hit"
    assert calls and loop_thread not in calls
