"""An answer cut by max_tokens (issue 29, item 6) is still an answer to that request: stored
with its limit, served to a request for as many tokens or fewer (cut again to that limit,
finish_reason "length"), never to one that asks for more. Stop strings likewise: an answer
that may have ended at one serves only requests that stop there too, and a request's own
stop strings and limit cut a whole answer as the engine would."""

from __future__ import annotations

import json

import pytest

from smartcache.errors import InvalidRequest

from conftest import MODEL, U

ASK = [U("Explain how the tides work")]


def ask(client, *, max_tokens=None, stream=False, session="s1", stop=None):
    body = {"model": MODEL, "messages": ASK, "stream": stream}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stop is not None:
        body["stop"] = stop
    return client.post("/v1/chat/completions", json=body, headers={"x-session-id": session})


def stored(client):
    return client.app.state.service.cache.entries()


@pytest.fixture
def client(gateway):
    with gateway(regenerate_window_s=0.0) as c:     # a repeat is a lookup, not a regenerate
        yield c


def test_a_cut_answer_is_stored_with_its_limit_and_served_at_that_limit(client):
    first = ask(client, max_tokens=3)
    assert first.json()["choices"][0]["finish_reason"] == "length"
    [entry] = stored(client)
    assert entry.cut_at == 3 and entry.answer.text == first.json()["choices"][0]["message"]["content"]
    again = ask(client, max_tokens=3)
    assert again.headers["x-smartcache-status"] == "hit"
    assert again.json()["choices"][0] == {**first.json()["choices"][0], "message": again.json()["choices"][0]["message"]}
    assert again.json()["choices"][0]["message"]["content"] == entry.answer.text
    assert again.json()["choices"][0]["finish_reason"] == "length"


def test_a_request_for_fewer_tokens_gets_the_answer_cut_to_its_limit(client):
    ask(client, max_tokens=3)
    full = stored(client)[0].answer.text
    shorter = ask(client, max_tokens=1)
    assert shorter.headers["x-smartcache-status"] == "hit"
    choice = shorter.json()["choices"][0]
    assert choice["finish_reason"] == "length" and full.startswith(choice["message"]["content"])
    assert 0 < len(choice["message"]["content"]) < len(full)
    assert shorter.json()["usage"]["completion_tokens"] == 1


def test_a_request_for_more_tokens_goes_to_the_engine(client):
    ask(client, max_tokens=3)
    longer = ask(client, max_tokens=200)
    assert longer.headers["x-smartcache-status"] == "miss"
    assert "cut_short" in longer.headers["x-smartcache-reason"]
    assert longer.json()["choices"][0]["finish_reason"] == "stop"
    # The complete answer is stored too, and serves the next request for any limit it fits.
    again = ask(client, max_tokens=200)
    assert again.headers["x-smartcache-status"] == "hit" and again.json()["choices"][0]["finish_reason"] == "stop"


def test_a_cut_answer_replays_as_a_stream_with_its_finish(client):
    ask(client, max_tokens=3)
    r = ask(client, max_tokens=3, stream=True)
    assert r.headers["x-smartcache-status"] == "hit"
    chunks = [json.loads(line[6:]) for line in r.text.splitlines() if line.startswith("data: {")]
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
    assert finishes[-1] == "length"


def test_the_server_default_limit_is_the_request_limit(gateway):
    with gateway(regenerate_window_s=0.0, default_max_tokens=3) as client:
        first = ask(client)
        assert first.json()["choices"][0]["finish_reason"] == "length"
        assert ask(client).headers["x-smartcache-status"] == "hit"
        assert ask(client, max_tokens=50).headers["x-smartcache-status"] == "miss"


LINES = "First, the moon pulls the sea.\nThen the earth turns under the bulge.\nSo each coast sees two tides a day."


def answered_with(client, text):
    client.app.state.service.engine.answer = text


def test_an_answer_that_stopped_at_a_stop_string_serves_only_requests_that_stop_there(client):
    answered_with(client, LINES)
    first = ask(client, stop=["\n"])
    assert first.json()["choices"][0]["message"]["content"] == "First, the moon pulls the sea."
    [entry] = stored(client)
    assert entry.stop == ("\n",)
    # Without the stop the engine would go on: the first line alone would be a cut answer.
    whole = ask(client)
    assert whole.headers["x-smartcache-status"] == "miss" and "stop_differs" in whole.headers["x-smartcache-reason"]
    assert whole.json()["choices"][0]["message"]["content"] == LINES
    same = ask(client, stop=["\n"])
    assert same.headers["x-smartcache-status"] == "hit"
    assert same.json()["choices"][0]["message"]["content"] == "First, the moon pulls the sea."
    more = ask(client, stop=["\n", "moon"])      # stops at each of the answer's stops, and earlier
    assert more.headers["x-smartcache-status"] == "hit"
    assert more.json()["choices"][0]["message"]["content"] == "First, the "


def test_a_whole_answer_is_cut_at_a_request_s_stop_and_limit_as_the_engine_cuts_it(client):
    answered_with(client, LINES)
    ask(client)
    [entry] = stored(client)
    assert entry.stop == () and entry.cut_at == 0 and entry.answer_tokens > 5
    engine = client.app.state.service.engine
    for kw in ({"stop": ["\n"]}, {"stop": ["earth", "\n"]}, {"max_tokens": 5}, {"stop": ["So each"], "max_tokens": 5}):
        calls = engine.calls
        served = ask(client, **kw)
        assert served.headers["x-smartcache-status"] == "hit" and engine.calls == calls, kw
        answered = ask(client, session="fresh-" + str(kw), **kw)     # what the engine itself gives
        assert answered.headers["x-smartcache-status"] == "miss"
        assert served.json()["choices"][0]["message"] == answered.json()["choices"][0]["message"], kw
        assert served.json()["choices"][0]["finish_reason"] == answered.json()["choices"][0]["finish_reason"], kw
        assert served.json()["usage"]["completion_tokens"] == answered.json()["usage"]["completion_tokens"], kw


def test_a_stop_string_that_could_begin_at_a_stored_answer_s_end_sends_it_to_the_engine(client):
    """Stored under stop "\n\n", the answer "Hello." went on as "Hello.\n\nMore": a request
    that also stops at ".\n" would have stopped at "Hello" (the engine sees what came after)."""
    answered_with(client, "Hello.\n\nMore text here.")
    assert ask(client, stop=["\n\n"]).json()["choices"][0]["message"]["content"] == "Hello."
    assert ask(client, stop=["\n\n", "More"]).headers["x-smartcache-status"] == "hit"   # no such overlap
    r = ask(client, stop=["\n\n", ".\n"])
    assert r.headers["x-smartcache-status"] == "miss"
    assert r.json()["choices"][0]["message"]["content"] == "Hello"


def test_the_library_checks_the_limit(cache):
    with pytest.raises(InvalidRequest):
        cache.store(ASK, "an answer", session="s1", cut_at=-1)
    with pytest.raises(InvalidRequest):
        cache.store(ASK, "an answer", session="s1", cut_at="3")      # type: ignore[arg-type]
    result = cache.store(ASK, "an answer", session="s1", cut_at=64)
    assert cache.get(result.cache_id).cut_at == 64
    for bad in ({"stop": "\n"}, {"stop": [""]}, {"stop": [3]}, {"stop": 3}, {"answer_tokens": -1},
                {"answer_tokens": True}):
        with pytest.raises(InvalidRequest):
            cache.store(ASK, "an answer", session="s1", **bad)
    result = cache.store(ASK, "an answer", session="s1", stop=["\n", "。", "\n"], answer_tokens=3)
    assert cache.get(result.cache_id).stop == ("\n", "。") and cache.get(result.cache_id).answer_tokens == 3


def test_a_cut_answer_survives_a_restart_on_the_same_file(encoder, clock, tmp_path):
    from smartcache import SmartCache, load_config
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")})
    first = SmartCache(config, encoder=encoder, clock=clock)
    result = first.store(ASK, "an answer", session="s1", cut_at=64, stop=["\n"], answer_tokens=3)
    first.backend.inner.close()
    second = SmartCache(config, encoder=encoder, clock=clock)
    entry = second.get(result.cache_id)
    assert (entry.cut_at, entry.stop, entry.answer_tokens) == (64, ("\n",), 3)


def test_the_readme_first_session_on_the_bundled_engine_is_a_hit(real_gateway):
    """With the bundled engine's defaults (no max_tokens, no stop), most first answers are cut
    at 256 tokens: the same question again after the promotion window is still a hit."""
    with real_gateway(regenerate_window_s=0.0) as client:
        body = {"model": MODEL, "messages": [U("What is the capital of France?")]}
        first = client.post("/v1/chat/completions", json=body, headers={"x-session-id": "readme"})
        assert first.status_code == 200 and first.headers["x-smartcache-status"] == "miss"
        again = client.post("/v1/chat/completions", json=body, headers={"x-session-id": "readme"})
        assert again.headers["x-smartcache-status"] == "hit"
        assert again.json()["choices"][0] == {**first.json()["choices"][0], "message": again.json()["choices"][0]["message"]}
        assert again.json()["choices"][0]["message"]["content"] == first.json()["choices"][0]["message"]["content"]


def test_a_repeat_asking_for_more_than_a_cut_answer_is_one_lookup(client):
    # On a store in memory the exact path runs first on the event loop; an answer it cannot
    # serve there is left to the whole lookup, and counted once.
    ask(client, max_tokens=3)
    cache = client.app.state.service.cache
    cache.tick()
    before = cache.stats()
    assert "cut_short" in ask(client, max_tokens=200).headers["x-smartcache-reason"]
    after = cache.stats()
    assert after.lookups - before.lookups == 1 and after.exact_hits - before.exact_hits == 1
    [cut] = [e for e in cache.entries() if e.cut_at]
    assert cut.hit_count == 1
