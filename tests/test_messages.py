"""Bad input gets a typed error, never a crash."""

from __future__ import annotations

import pytest

from smartcache import InvalidRequest
from smartcache.context import parse_messages
from conftest import U


@pytest.mark.parametrize("messages, fragment", [
    (None, "non-empty list"), ([], "non-empty list"), ("hi", "non-empty list"),
    ([{"role": "robot", "content": "x"}], "role"), ([{"content": "x"}], "role"),
    ([{"role": "user", "content": 5}], "content"), ([{"role": "user", "content": [{"type": "text", "text": 3}]}], "text"),
    ([{"role": "assistant", "content": "x"}], "last message"), ([{"role": "user", "content": "   "}], "empty"),
    ([["user", "x"]], "object"),
])
def test_malformed_messages_raise_invalid_request(messages, fragment):
    with pytest.raises(InvalidRequest, match=fragment):
        parse_messages(messages)


def test_text_parts_and_images_are_read():
    conv = parse_messages([{"role": "user", "content": [{"type": "text", "text": "这张图是什么"},
                                                          {"type": "image_url", "image_url": {"url": "data:a"}}]}])
    other = parse_messages([{"role": "user", "content": [{"type": "text", "text": "这张图是什么"},
                                                           {"type": "image_url", "image_url": {"url": "data:b"}}]}])
    assert conv.current.startswith("这张图是什么") and conv.current != other.current


def test_cache_rejects_bad_ids_and_scopes(cache):
    with pytest.raises(InvalidRequest):
        cache.lookup([U("hi")], session="")
    with pytest.raises(InvalidRequest):
        cache.lookup([U("hi")], tenant=None)
    with pytest.raises(InvalidRequest):
        cache.store([U("hi")], "x", session="s", scope="everyone")
    with pytest.raises(InvalidRequest):
        cache.store([U("hi")], "x")          # session scope needs a session
    with pytest.raises(InvalidRequest):
        cache.store([U("hi")], 42, session="s")
    with pytest.raises(InvalidRequest):
        cache.store([U("hi")], "x", session="s", ttl=-1)
    with pytest.raises(InvalidRequest):
        cache.lookup([U("hi")], session="s", versions={"colour": "red"})
    assert len(cache.backend) == 0
