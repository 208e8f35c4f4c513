"""Property tests of the pipeline on hostile input: parse -> normalise -> view -> fingerprint,
and the cache's lookup and store, with the real encoder.

Input: arbitrary Unicode (lone surrogates, NUL and control characters, RTL marks, combining
marks, emoji, full-width forms), odd numbers ("1e309", 10**400, "-0", "١٢٣", 一千万亿, runs of
亿), deep and wide content-part lists, and a wrong type in every field. Property: the only
exception is ``InvalidRequest`` (the caller's input is wrong), never a TypeError, ValueError,
RecursionError or an encoder failure, and every result is well-formed.
"""

from __future__ import annotations

import math
import re
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from smartcache import SmartCache, load_config
from smartcache.context import ContextSettings, build_view, convert_numerals, normalize_text, parse_messages
from smartcache.context.view import is_small_talk
from smartcache.decide import ReasonCode, Zone
from smartcache.errors import InvalidRequest
from smartcache.fingerprint import Fingerprinter, MemoEncoder, Signature

def fuzz(examples: int) -> settings:
    """Examples sized so the file runs in well under a minute on two shared cores."""
    return settings(max_examples=examples, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
HEX64 = re.compile(r"[0-9a-f]{64}")

SPECIAL = [
    "1e309", "-1e309", str(10**400), "-0", "0.0", "NaN", "Infinity", "١٢٣", "۱۲۳", "१२३", "一千万亿", "一千万亿元",
    "亿" * 40, "一" + "亿" * 30, "九" * 60, "百分之" + "九" * 40, "9" * 400 + "万", "1." + "5" * 30 + "k",
    "\x00", "a\x00b", "\x07\x1b[31m", "\u200f", "\u202e", "\u2066x\u2069", "e\u0301\u0301\u0301", "\u0301",
    "😀", "👩‍👩‍👧‍👦", "🇨🇳", "ＡＢＣ１２３！", "\u3000", "\ufeff", "\u200b", "\ud800", "\udfff", "x\ud83dy",
    "嗯" * 40 + "?", "哈" * 40 + "x", "user: ", "用户：", "$", "¥", "预算八千块", "改成三天两晚", "不", "don't",
]
nasty_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=40),        # every code point, surrogates too
    st.sampled_from(SPECIAL),
    st.lists(st.sampled_from(SPECIAL) | st.text(max_size=5), max_size=6).map(" ".join),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from([10**400, -(10**400)]),
                    st.floats(allow_nan=True, allow_infinity=True), nasty_text)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(nasty_text, inner, max_size=4), max_leaves=12)


def nested(depth: int) -> list:
    """``[[[...]]]`` ``depth`` deep, built without recursion (deeper than the interpreter allows)."""
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


parts = st.one_of(
    nasty_text,
    st.fixed_dictionaries({"type": st.just("text"), "text": nasty_text | json_values}),
    st.fixed_dictionaries({"type": st.sampled_from(["image_url", "input_audio", "file"]) | json_values},
                          optional={"image_url": json_values}),
    json_values,
)
deep_part = st.integers(50, 5000).map(lambda d: {"type": "image_url", "image_url": nested(d)})
content = st.one_of(
    nasty_text, st.none(), st.lists(parts, max_size=6), st.lists(st.just("w"), min_size=200, max_size=2000),
    st.lists(deep_part, min_size=1, max_size=2), json_values,
)
roles = st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"])
message = st.one_of(
    st.fixed_dictionaries({"role": roles, "content": content},
                          optional={"tool_calls": json_values | st.integers(50, 5000).map(nested),
                                    "name": json_values}),
    st.fixed_dictionaries({"role": json_values, "content": content}),
    json_values,
)
messages = st.one_of(st.lists(message, max_size=7), json_values)
# Mostly well-formed conversations ending in a user turn, so the later stages get exercised.
good_messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                                "content": nasty_text | st.lists(parts, max_size=3)}),
                         max_size=6).map(lambda ms: ms + [{"role": "user", "content": "q"}]) \
    | st.tuples(st.lists(st.fixed_dictionaries({"role": roles, "content": nasty_text}), max_size=5),
                nasty_text).map(lambda t: t[0] + [{"role": "user", "content": t[1]}])


def parse_or_none(raw):
    try:
        return parse_messages(raw)
    except InvalidRequest:
        return None


@pytest.fixture(scope="module")
def fingerprinter(encoder):
    fingerprinter = Fingerprinter(MemoEncoder(encoder, 4096))      # wrapped as SmartCache wraps it
    # jieba loads its dictionary on the first Chinese text (seconds): not part of any timing.
    fingerprinter.fingerprint(build_view(parse_messages([{"role": "user", "content": "推荐一家西湖边的酒店"}])))
    return fingerprinter


@pytest.fixture(scope="module")
def fuzz_cache(encoder):
    return SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)


# -- parse ------------------------------------------------------------------------------------


@pytest.mark.integration
@fuzz(150)
@given(st.one_of(messages, good_messages))
def test_parse_messages_raises_only_invalid_request_and_returns_a_well_formed_conversation(raw):
    conv = parse_or_none(raw)
    if conv is None:
        return
    assert isinstance(conv.system, str) and conv.turns and conv.turns[-1].role == "user"
    assert all(t.role in ("user", "assistant") and isinstance(t.text, str) for t in conv.turns)
    assert conv.current == conv.turns[-1].text and conv.current.strip()
    assert HEX64.fullmatch(conv.history_hash()) and HEX64.fullmatch(conv.conversation_hash("a"))
    for text in [conv.system, *(t.text for t in conv.turns)]:
        text.encode("utf-8")          # no lone surrogate gets through


# -- normalise and view -----------------------------------------------------------------------


@fuzz(250)
@given(nasty_text)
def test_normalize_text_and_numerals_never_raise(text):
    text = text.encode("utf-8", "replace").decode("utf-8")      # what parse_messages lets through
    for out in (normalize_text(text), normalize_text(text, lower=False), convert_numerals(text)):
        assert isinstance(out, str)
    assert convert_numerals(text).count("inf") <= text.count("inf"), "a huge number became 'inf'"


@pytest.mark.parametrize("text", ["嗯" * 60 + "x", "哈" * 60 + "x", "哦" * 60 + "?", "好" * 3000 + "x",
                                  "九" * 5000, "一" + "亿" * 2000, "百分之" + "九" * 5000, "1" * 4000 + "万",
                                  "1" * 4000 + "x", " " * 4000 + "x", "ok " * 2000 + "x", "\u0301" * 3000,
                                  "😀" * 2000])
def test_pathological_repeats_take_linear_time(text, fingerprinter):
    """Regression: 嗯+ inside a repeated group was exponential ('嗯'*24+'x' took 30 s); number
    and space patterns were quadratic ('1'*8000+'万' took 5 min); a run of 5000 Chinese digits
    raised ValueError (int -> str past 4300 digits)."""
    began = time.perf_counter()
    conv = parse_messages([{"role": "user", "content": text}, {"role": "assistant", "content": text},
                           {"role": "user", "content": text}])
    is_small_talk(text)
    fingerprinter.fingerprint(build_view(conv))
    assert time.perf_counter() - began < 10


@pytest.mark.parametrize("text, expected", [
    ("12345678901234567890千", "12345678901234567890千"),       # too long to be an amount: as written
    ("12345678901234567千", "12345678901234567000"),            # exact, not float-rounded
    ("1.2345k", "1234.5"), ("1.5万元", "15000元"), ("9" * 400 + "万", "9" * 400 + "万"),
    ("九" * 30, "九" * 30), ("一万亿", "1000000000000"), ("一千万亿", "一千万亿"),   # 千万: an idiom, as written
])
def test_numbers_are_converted_exactly_or_left_as_written(text, expected):
    assert convert_numerals(text) == expected


@fuzz(150)
@given(good_messages, st.integers(0, 8))
def test_build_view_is_well_formed(raw, max_turns):
    conv = parse_or_none(raw)
    if conv is None:
        return
    view = build_view(conv, ContextSettings(max_turns=max_turns))
    assert isinstance(view.current, str) and view.current == view.current_cased.lower()
    assert len(view.history) <= max_turns and view.prior_turns == len(conv.history)
    assert all(0 < t.weight <= 1 and isinstance(t.text, str) for t in view.history)
    assert HEX64.fullmatch(view.history_hash) and HEX64.fullmatch(view.system_hash)
    assert len(view.system_tail) <= ContextSettings().system_tail_chars


# -- fingerprint ------------------------------------------------------------------------------


@pytest.mark.integration
@fuzz(80)
@given(good_messages)
def test_fingerprint_is_well_formed(fingerprinter, raw):
    conv = parse_or_none(raw)
    if conv is None:
        return
    fp = fingerprinter.fingerprint(build_view(conv))
    dim = fingerprinter.encoder.dim
    assert fp.turn_vector.shape == (dim,) and np.isfinite(fp.turn_vector).all()
    assert (fp.context_vector is None) == (not fp.view.history)
    if fp.context_vector is not None:
        assert fp.context_vector.shape == (dim,) and np.isfinite(fp.context_vector).all()
        assert fp.topic_similarity is not None and math.isfinite(fp.topic_similarity)
    assert Signature.from_json(fp.signature.to_json()) == fp.signature
    assert HEX64.fullmatch(fp.context_key("v"))


# -- the cache --------------------------------------------------------------------------------


@pytest.mark.integration
@fuzz(80)
@given(st.one_of(good_messages, messages), nasty_text | json_values,
       st.one_of(st.just("s1"), st.none(), json_values), st.one_of(st.just("default"), json_values),
       st.one_of(st.none(), st.just({"model": "m"}), json_values))
def test_lookup_and_store_raise_only_invalid_request(fuzz_cache, raw, answer, session, tenant, versions):
    try:
        decision = fuzz_cache.lookup(raw, session=session, tenant=tenant, versions=versions)
    except InvalidRequest:
        decision = None
    if decision is not None:
        assert decision.zone in set(Zone) and all(isinstance(r.code, ReasonCode) for r in decision.reasons)
    try:
        result = fuzz_cache.store(raw, answer, session=session, tenant=tenant, versions=versions)
    except InvalidRequest:
        return
    assert (result.reason is None) == result.stored == (result.cache_id is not None)
    if result.stored:
        entry = fuzz_cache.get(result.cache_id)
        assert entry is not None and entry.answer.text == answer


def test_an_answer_with_a_lone_surrogate_is_an_invalid_request(fuzz_cache):
    """Found by the property above: the answer went unchecked into the conversation hash,
    whose UTF-8 encoding raised UnicodeEncodeError instead of a typed error."""
    with pytest.raises(InvalidRequest, match="lone surrogate"):
        fuzz_cache.store([{"role": "user", "content": "q"}], "\ud800", session="s1")


@fuzz(60)
@given(st.one_of(json_values, st.sampled_from([math.nan, -1.0, 0, math.inf, "10"])),
       st.one_of(json_values, st.sampled_from([math.nan, math.inf, -5, "7", 10**400])), json_values)
def test_store_options_of_the_wrong_type_are_invalid_requests(fuzz_cache, ttl, prompt_tokens, scope):
    msgs = [{"role": "user", "content": "How do I reset my password?"}]
    try:
        result = fuzz_cache.store(msgs, "Use the link.", session="s-opts", ttl=ttl, prompt_tokens=prompt_tokens,
                                  scope=scope)
    except InvalidRequest:
        return
    entry = fuzz_cache.get(result.cache_id) if result.stored else None
    if entry is not None:
        assert entry.expires_at > entry.created_at and entry.prompt_tokens >= 0


def test_regressions_from_fuzzing(fuzz_cache):
    """Each input once raised something other than InvalidRequest."""
    deep = {"type": "image_url", "image_url": nested(sys.getrecursionlimit() + 100)}
    cases = [
        [{"role": "user", "content": "\ud800"}],                                   # UnicodeEncodeError
        [{"role": "user", "content": [{"type": "text", "text": "x\udfff"}]}],
        [{"role": "user", "content": [deep, "hi"]}],                                # RecursionError
        [{"role": "assistant", "content": "a", "tool_calls": nested(5000)}, {"role": "user", "content": "q"}],
        [{"role": "user", "content": [{"type": "image_url", 1: "a", "b": 2}, "hi"]}],   # TypeError (mixed keys)
        [{"role": ["user"], "content": "hi"}],                                      # unhashable role
    ]
    for raw in cases:
        with pytest.raises(InvalidRequest):
            fuzz_cache.lookup(raw, session="s1")
    for versions in ([1, 2], "ab", {"model": 10**5000}):
        with pytest.raises(InvalidRequest):
            fuzz_cache.lookup([{"role": "user", "content": "hi"}], versions=versions)


def test_the_local_engine_reads_odd_parts_of_a_bypassed_request():
    """Regression: a request that bypasses the lookup (tools, no-cache) reaches the engine
    unparsed; a text part whose text is not a string raised TypeError in message_text."""
    from smartcache.engine.local import message_text

    parts = [{"type": "text", "text": 5}, {"type": "text", "text": "ok"}, 7, {"type": "text"}]
    assert message_text({"role": "user", "content": parts}) == "ok"
