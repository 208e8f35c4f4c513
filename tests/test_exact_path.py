"""The exact path (issue 29): a word-for-word repeat after the same history is found by its key,
before any model runs, in every backend; everything a gate or a scope says still holds."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from smartcache import SmartCache, Zone, load_config
from smartcache.context import parse_messages, read_key
from smartcache.store import Answer, Entry, EntryId, EntryState, MemoryStore, Scope, SearchFilter, VersionKeyHash
from smartcache.store.sqlite import SqliteStore

from conftest import A, U, remember
from test_store_backends import SIG, unit

ASK = [U("How do I reset my password?")]
ANSWER = "Open Settings, choose Security, then Reset password."


def counting(cache: SmartCache) -> list[int]:
    """Counts the requests the cache fingerprints (the encoder and the rules)."""
    calls: list[int] = []
    real = cache.fingerprinter.fingerprint

    def fingerprint(view):
        calls.append(1)
        return real(view)
    cache.fingerprinter.fingerprint = fingerprint     # type: ignore[method-assign]
    return calls


def test_a_repeat_is_served_by_its_key_without_a_model(cache):
    entry = remember(cache, ASK, ANSWER)
    calls = counting(cache)
    for again in ("How do I reset my password?", "how do I reset my password", "How do I reset my  password ?!"):
        found = cache.lookup([U(again)], session="s1")
        assert found.zone is Zone.HIT and found.answer == ANSWER and found.entry.cache_id == entry
        assert found.has_reason("exact_match") and found.scores.turn == 1.0
    assert calls == [] and cache.stats().exact_hits == 3
    assert cache.get(entry).hit_count == 3


def test_the_key_reads_words_not_punctuation_but_keeps_digits_apart():
    def key(text, history=()):
        return read_key(parse_messages([*history, U(text)])).digest
    assert key("杭州三天怎么玩?") == key("杭州三天怎么玩") == key("杭州 三天 怎么玩！")
    assert key("3.5 kg") != key("35 kg") and key("Budget 500") != key("Budget 800")
    assert key("How do I reset my password?") != key("How do I reset my password?", [U("hi"), A("Hello!")])
    assert key("和他说") != key("和她说")
    # Symbols are words here: an operator, a sign, a currency, an emoji, a flag (found by a review).
    for a, b in [("a // b", "a % b"), ("x != y", "x == y"), ("-5 degrees", "5 degrees"), ("$100", "€100"),
                 ("C++", "C#"), ("git reset --hard", "git reset hard"), ("👍", "👎"), (":)", ":("), ("?", "!")]:
        assert key(a) != key(b), (a, b)


@pytest.mark.parametrize("probe, why", [
    ([U("Hi"), A("Hello!"), U("How do I reset my password?")], "another history"),
    ([{"role": "system", "content": "You are terse."}, U("How do I reset my password?")], "another system prompt"),
    ([U("How do I reset my email password?")], "another request"),
])
def test_only_the_same_conversation_takes_the_exact_path(cache, probe, why):
    remember(cache, ASK, ANSWER)
    found = cache.lookup(probe, session="s1")
    assert not found.has_reason("exact_match"), why


def test_scope_tenant_version_and_state_still_hold(make_cache, clock):
    cache = make_cache()
    entry = remember(cache, ASK, ANSWER)
    assert not cache.lookup(ASK, session="s2").has_reason("exact_match")                  # another session
    assert not cache.lookup(ASK, session="s1", tenant="other").has_reason("exact_match")  # another tenant
    assert not cache.lookup(ASK, session="s1", versions={"model": "m2"}).has_reason("exact_match")
    pending = cache.store(ASK, "a second answer", session="s3")
    assert not cache.lookup(ASK, session="s3").has_reason("exact_match")                  # not yet promoted
    cache.promote(entry, to_global=True)
    shared = cache.lookup(ASK, session="s9")                            # the global pool serves every session
    assert shared.has_reason("exact_match") and shared.entry.cache_id == entry
    cache.invalidate(cache_id=entry)
    assert not cache.lookup(ASK, session="s9").has_reason("exact_match")
    assert pending.stored


def test_an_expired_entry_is_not_served(make_cache, clock):
    cache = make_cache()
    stored = cache.store(ASK, ANSWER, session="s1", ttl=60)
    cache.promote(stored.cache_id)
    assert cache.lookup(ASK, session="s1").has_reason("exact_match")
    clock.advance(61)
    assert cache.lookup(ASK, session="s1").zone is Zone.MISS


def test_a_suspect_entry_asks_to_be_verified(cache):
    entry = remember(cache, ASK, ANSWER)
    cache.backend.update(entry, state=EntryState.SUSPECT)
    found = cache.lookup(ASK, session="s1")
    assert found.has_reason("exact_match") and found.verify


def test_what_a_gate_settles_goes_the_whole_way(cache):
    """A reset repeated word for word still resets; a time-sensitive request is never served."""
    first = remember(cache, [U("帮我写一首关于秋天的诗")], "秋风起……")
    reset = [U("帮我写一首关于秋天的诗"), A("秋风起……"), U("重新开始吧")]
    stored = cache.store(reset, "好的，我们重新开始。", session="s1")
    if stored.stored:
        cache.promote(stored.cache_id)
    found = cache.lookup(reset, session="s1")
    assert found.zone is Zone.MISS and found.has_reason("reset")
    assert cache.get(first).state is EntryState.INVALID


def test_an_answer_that_breaks_the_request_is_left_to_validation(cache):
    ask = [U("推荐杭州的酒店，预算 500 元以内")]
    remember(cache, ask, "推荐西湖国宾馆，每晚 1800 元。")
    found = cache.lookup(ask, session="s1")
    assert found.zone is Zone.HALF_HIT and found.has_reason("validation_failed")


def test_the_path_can_be_switched_off(make_cache):
    cache = make_cache(exact_path=False)
    remember(cache, ASK, ANSWER)
    calls = counting(cache)
    found = cache.lookup(ASK, session="s1")
    # The semantic path serves it too, having run the encoder and weighed it with the verifier.
    assert found.zone is Zone.HIT and found.scores.same is not None and calls == [1]
    assert cache.stats().exact_hits == 0


def test_a_miss_then_a_store_writes_the_key(cache):
    found = cache.lookup(ASK, session="s1")
    assert found.zone is Zone.MISS
    result = cache.store(found, ANSWER)
    assert cache.get(result.cache_id).request_key == found.request.key.digest


# -- the store's index, per backend ---------------------------------------------------------

def keyed(vector, key, *, session="s1", scope=Scope.SESSION, state=EntryState.READY, created=1.0):
    return Entry(cache_id=EntryId(uuid.uuid4().hex), scope=scope, tenant="t", session_id=session,
                 version_key=VersionKeyHash("v"), context_fingerprint="c", signature=SIG, turn_vector=vector,
                 context_vector=None, prefix_hash="p", conversation_hash=uuid.uuid4().hex,
                 answer=Answer("a"), state=state, created_at=created, expires_at=float("inf"), request_key=key)


def scope(session="s1"):
    return SearchFilter(tenant="t", version_key=VersionKeyHash("v"), session_id=session, now=10.0)


def check_index(store) -> None:
    rng = np.random.default_rng(0)
    mine, older = keyed(unit(rng)[0], "k1", created=2.0), keyed(unit(rng)[0], "k1", created=1.0)
    other_session = keyed(unit(rng)[0], "k1", session="s2")
    shared = keyed(unit(rng)[0], "k1", session="s3", scope=Scope.GLOBAL, created=0.5)
    pending = keyed(unit(rng)[0], "k1", state=EntryState.PENDING, created=3.0)
    other_key = keyed(unit(rng)[0], "k2")
    for e in (mine, older, other_session, shared, pending, other_key):
        store.put(e)
    assert [e.cache_id for e in store.exact(scope(), "k1", 4)] == [mine.cache_id, older.cache_id, shared.cache_id]
    assert [e.cache_id for e in store.exact(scope(), "k1", 1)] == [mine.cache_id]
    assert [e.cache_id for e in store.exact(scope("s2"), "k1", 4)] == [other_session.cache_id, shared.cache_id]
    store.update(pending.cache_id, state=EntryState.READY)
    assert store.exact(scope(), "k1", 1)[0].cache_id == pending.cache_id
    store.delete(pending.cache_id)
    store.update(mine.cache_id, state=EntryState.INVALID)
    assert [e.cache_id for e in store.exact(scope(), "k1", 4)] == [older.cache_id, shared.cache_id]
    store.update(older.cache_id, scope=Scope.GLOBAL)        # promoted to the global pool: the index follows
    assert [e.cache_id for e in store.exact(scope("s7"), "k1", 4)] == [older.cache_id, shared.cache_id]
    assert store.exact(scope(), "nothing", 4) == []


def test_the_memory_store_indexes_request_keys():
    check_index(MemoryStore(32))


def test_the_sqlite_store_indexes_request_keys_and_reads_them_back(tmp_path):
    store = SqliteStore(tmp_path / "c.db", 32)
    check_index(store)
    store.close()
    again = SqliteStore(tmp_path / "c.db", 32)
    visible = {e.cache_id for e in again if e.request_key == "k1" and scope("s7").admits(e)}
    assert visible and {e.cache_id for e in again.exact(scope("s7"), "k1", 4)} == visible
    again.close()


def test_the_redis_store_indexes_request_keys(redis_url):
    from smartcache.store.redis import RedisStore
    store = RedisStore(redis_url, 32, prefix=f"t{uuid.uuid4().hex[:8]}:")
    check_index(store)


def test_the_exact_path_survives_a_restart_on_the_same_file(encoder, clock, tmp_path):
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")})
    first = SmartCache(config, encoder=encoder, clock=clock)
    entry = remember(first, ASK, ANSWER)
    first.backend.inner.close()
    second = SmartCache(config, encoder=encoder, clock=clock)
    found = second.lookup(ASK, session="s1")
    assert found.has_reason("exact_match") and found.entry.cache_id == entry and found.answer == ANSWER


def test_a_sessions_entries_come_from_its_own_index():
    """Docking reads a session's entries on every follow-up turn: the memory store answers from
    an index by session, the same entries the scan gives, through moves and deletes."""
    store, rng = MemoryStore(32), np.random.default_rng(1)
    entries = [keyed(unit(rng)[0], f"k{i}", session=f"s{i % 3}") for i in range(9)]
    for e in entries:
        store.put(e)
    store.update(entries[0].cache_id, scope=Scope.GLOBAL)        # promoted: still s0's by its field
    store.delete(entries[3].cache_id)
    for session in ("s0", "s1", "s2", "s9"):
        scanned = {e.cache_id for e in store if e.session_id == session}
        assert {e.cache_id for e in store.find(session_id=session)} == scanned
        assert {e.cache_id for e in store.find(tenant="t", session_id=session)} == scanned
