"""What shapes an answer beyond the messages (a response format, a schema, a grammar) is part of
its version: a plain-text answer never reaches a request for JSON, nor one schema's answer a
request with another. What a cached answer cannot give (log-probabilities, audio) is never
looked up."""

from __future__ import annotations

import hashlib
import json

import pytest

from smartcache.store.base import VersionKey

from conftest import MODEL, U

ASK = [U("List three facts about the moon")]
JSON = {"type": "json_object"}


def schema(name):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": {"type": "object",
            "properties": {name: {"type": "string"}}, "required": [name]}}}


def ask(client, **extra):
    body = {"model": MODEL, "messages": ASK, **extra}
    return client.post("/v1/chat/completions", json=body, headers={"x-session-id": "s1"})


@pytest.fixture
def client(gateway):
    with gateway(regenerate_window_s=0.0) as c:     # a repeat is a lookup, not a regenerate
        yield c


def status(r):
    return r.headers["x-smartcache-status"]


def test_an_answer_serves_only_requests_for_its_own_format(client):
    assert status(ask(client)) == "miss"
    assert status(ask(client)) == "hit"
    assert status(ask(client, response_format={"type": "text"})) == "hit"     # the default, said aloud
    assert status(ask(client, response_format=JSON)) == "miss"
    assert status(ask(client, response_format=JSON)) == "hit"
    assert status(ask(client, response_format=schema("fact"))) == "miss"
    assert status(ask(client, response_format=schema("facts"))) == "miss"
    assert status(ask(client, response_format=schema("fact"))) == "hit"
    for other in ({"logit_bias": {"1234": -100}}, {"guided_regex": "[0-9]+"}, {"reasoning_effort": "high"}):
        assert status(ask(client, **other)) == "miss", other
    # The plain answer is still there for plain requests, and an empty logit_bias changes nothing.
    assert status(ask(client, logit_bias={})) == "hit"


def test_what_a_cached_answer_cannot_give_is_never_looked_up_nor_stored(client):
    ask(client)
    for extra, reason in (({"logprobs": True}, "logprobs"), ({"logprobs": False, "top_logprobs": 2}, "logprobs"),
                          ({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}}, "audio")):
        r = ask(client, **extra)
        assert status(r) == "bypass" and reason in r.headers["x-smartcache-reason"], extra
    assert len(client.app.state.service.cache.entries()) == 1
    assert status(ask(client, logprobs=False)) == "hit"


def test_the_key_of_entries_without_a_shape_is_the_key_they_were_written_with():
    key = VersionKey(model="m", tokenizer="t", system_prompt="s", knowledge_base="k")
    assert key.digest() == hashlib.sha256(json.dumps(["m", "t", "s", "k"]).encode()).hexdigest()
    assert VersionKey.from_mapping({"model": "m", "output": "abc"}, system_prompt="s").digest() != \
        VersionKey.from_mapping({"model": "m"}, system_prompt="s").digest()


def test_the_library_takes_the_shape_in_its_versions(cache, clock):
    plain = cache.versions("default", "m")
    shaped = cache.versions("default", "m", output="json")
    assert "output" not in plain and shaped["output"] == "json"
    cache.store(ASK, "The moon has no air.", session="s1", versions=plain)
    clock.advance(cache.config.lifecycle.promotion_window_s + 1)
    assert cache.lookup(ASK, session="s1", versions=plain).zone.value == "hit"
    assert cache.lookup(ASK, session="s1", versions=shaped).zone.value == "miss"


def test_the_same_messages_in_another_shape_are_no_regenerate(gateway):
    """A repeat within the regenerate window is a regenerate only in the same shape: asking the
    same thing for JSON, or with other stop strings or limit, is another request."""
    with gateway() as client:                   # the default window: a repeat is a regenerate
        assert status(ask(client)) == "miss"
        for other in ({"response_format": JSON}, {"stop": ["\n"]}, {"max_tokens": 7}):
            r = ask(client, **other)
            assert "regenerate" not in r.headers["x-smartcache-reason"], other
        again = ask(client)
        assert "regenerate" in again.headers["x-smartcache-reason"]
