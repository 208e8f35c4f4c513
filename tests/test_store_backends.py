"""The persistent SQLite store, the HNSW partitions, and a kill -9 crash test (SQLite and Redis)."""

from __future__ import annotations

import sqlite3
import uuid

import numpy as np
import pytest

from smartcache import SmartCache, Zone, load_config
from smartcache.errors import StoreError
from smartcache.fingerprint import Signature
from smartcache.store import Answer, Entry, EntryId, EntryState, MemoryStore, Scope, SearchFilter, VersionKeyHash
from smartcache.store.sqlite import SqliteStore

from crash import WRITER_QUESTION, WriterBurst, kill_mid_burst, writer_session

DIM = 32
SIG = Signature(text="q", domain="general", skeleton="other", entities=(), flags=frozenset(), negations=0,
                sides=(), context_entities=frozenset(), history_hash="h", has_context=False)


def unit(rng, n=1, dim=DIM):
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def entry(vector, *, session="s1", scope=Scope.SESSION, state=EntryState.READY, tenant="t", **kw):
    return Entry(cache_id=EntryId(uuid.uuid4().hex), scope=scope, tenant=tenant, session_id=session,
                 version_key=VersionKeyHash("v"), context_fingerprint="c", signature=SIG, turn_vector=vector,
                 context_vector=kw.pop("context_vector", None), prefix_hash="p", conversation_hash=uuid.uuid4().hex,
                 answer=Answer("答案 answer", ("num:3",)), state=state, created_at=1.0,
                 expires_at=kw.pop("expires_at", float("inf")), **kw)


def flt(session="s1", **kw):
    return SearchFilter(tenant="t", version_key=VersionKeyHash("v"), session_id=session, now=10.0, **kw)


def test_sqlite_round_trip_updates_and_deletes_survive_reopen(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "c.db"
    store = SqliteStore(path, DIM)
    a = entry(unit(rng)[0], context_vector=unit(rng)[0], expires_at=99.0, domain="travel", cut_at=64,
              stop=("\n", "。"), answer_tokens=12, personal="own name")
    b = entry(unit(rng)[0], scope=Scope.GLOBAL, session="")
    c = entry(unit(rng)[0])
    for e in (a, b, c):
        store.put(e)
    store.update(a.cache_id, hit_count=3, feedback_score=0.75, state=EntryState.SUSPECT)
    assert store.delete(c.cache_id)
    store.close()

    again = SqliteStore(path, DIM)
    assert len(again) == 2 and again.corrupt == 0 and again.integrity() == "ok"
    got = again.get(a.cache_id)
    assert (got.hit_count, got.feedback_score, got.state, got.expires_at, got.domain) == (
        3, 0.75, EntryState.SUSPECT, 99.0, "travel")
    assert (got.cut_at, got.stop, got.answer_tokens, got.personal) == (64, ("\n", "。"), 12, "own name")
    assert again.get(b.cache_id).stop == () and again.get(b.cache_id).personal is None
    # The turn vector is kept exactly; the context vector in half precision (within 1e-3 cosine).
    assert np.array_equal(got.turn_vector, a.turn_vector) and got.context_vector.dtype == np.float32
    assert abs(float(got.context_vector @ a.context_vector) - 1.0) < 1e-3
    assert got.signature == a.signature and got.answer == a.answer
    assert again.get(b.cache_id).expires_at == float("inf") and again.get(c.cache_id) is None
    # Search goes through the same scoping as the memory store.
    assert {r.entry.cache_id for r in again.search(flt(), a.turn_vector, 5)} == {a.cache_id, b.cache_id}
    assert {r.entry.cache_id for r in again.search(flt("other"), a.turn_vector, 5)} == {b.cache_id}


def test_sqlite_refuses_another_dimension_and_skips_corrupt_rows(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "c.db"
    store = SqliteStore(path, DIM)
    good = entry(unit(rng)[0])
    store.put(good)
    store.close()
    with pytest.raises(StoreError, match="32-d"):
        SqliteStore(path, 64)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO entries (cache_id, tenant, session_id, state, expires_at, fields, turn, context) "
                   "VALUES ('broken', 't', 's1', 'ready', NULL, '{not json', x'00', NULL)")
    again = SqliteStore(path, DIM)
    assert again.corrupt == 1 and len(again) == 1 and again.get("broken") is None


def test_a_cache_on_sqlite_serves_after_restart(tmp_path, encoder):
    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")},
                         lifecycle={"promotion_window_s": 0.0})
    messages = [{"role": "user", "content": "周末去杭州玩三天，帮我排个行程"}]
    plan = "第1天：西湖\n第2天：灵隐寺\n第3天：河坊街"
    first = SmartCache(config, encoder=encoder)
    first.promote(first.store(messages, plan, session="s").cache_id)
    first.backend.close()
    second = SmartCache(config, encoder=encoder)
    decision = second.lookup([{"role": "user", "content": "周末去杭州玩3天，帮我排一下行程"}], session="s")
    assert decision.zone is Zone.HIT and decision.answer == plan


@pytest.mark.integration
def test_hnsw_partition_recall_against_exact_search():
    rng = np.random.default_rng(2)
    centres = unit(rng, 40)
    vectors = centres[rng.integers(0, 40, 4000)] + 0.35 * unit(rng, 4000)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    exact, ann = MemoryStore(DIM, ann_above=10**9), MemoryStore(DIM, ann_above=1000)
    entries = [entry(v.astype(np.float32), scope=Scope.GLOBAL, session="") for v in vectors]
    for e in entries:
        exact.put(e)
        ann.put(e)
    # Deleted and unservable entries must never come back from the graph.
    for e in entries[:200]:
        exact.delete(e.cache_id)
        ann.delete(e.cache_id)
    for e in entries[200:400]:
        exact.update(e.cache_id, state=EntryState.INVALID)
        ann.update(e.cache_id, state=EntryState.INVALID)
    assert ann._partitions[("t", "v", "\x00global")].graph is not None
    queries = unit(rng, 100)
    found = total = 0
    gone = {e.cache_id for e in entries[:400]}
    for q in queries:
        truth = {r.entry.cache_id for r in exact.search(flt(None), q, 8)}
        got = [r.entry.cache_id for r in ann.search(flt(None), q, 8)]
        assert len(got) == 8 and not gone & set(got)
        found += len(truth & set(got))
        total += len(truth)
    assert found / total >= 0.95


@pytest.fixture(params=["sqlite", "redis"])
def crash_store(request, tmp_path, encoder):
    """(the writer's store table, a function that reopens that store here, acknowledgements to wait for)."""
    if request.param == "sqlite":
        path = tmp_path / "crash.db"

        def reopen():
            store = SqliteStore(path, encoder.dim)
            assert store.integrity() == "ok" and store.corrupt == 0
            return store
        return {"backend": "sqlite", "path": str(path)}, reopen, 60
    from smartcache.store.redis import RedisStore

    url, prefix = request.getfixturevalue("redis_url"), f"crash{uuid.uuid4().hex[:8]}:"
    return {"backend": "redis", "url": url, "prefix": prefix}, lambda: RedisStore(url, encoder.dim, prefix=prefix), 40


@pytest.mark.integration
def test_kill_minus_nine_during_a_burst_of_writes_loses_nothing_ready(crash_store, encoder):
    table, reopen, after = crash_store
    burst = WriterBurst(table, size=2000)
    kill_mid_burst(burst.proc, burst, after=after)   # fails unless the kill landed inside the burst
    store = reopen()
    for cache_id in burst.ready:
        got = store.get(cache_id)
        assert got is not None and got.state is EntryState.READY, cache_id
    for cache_id in burst.pending:
        got = store.get(cache_id)
        assert got is None or got.state is EntryState.PENDING
    # And the survivors are servable through a cache opened on the same store.
    cache = SmartCache(load_config(store=table), store=store, encoder=encoder)
    some_id, i = next(iter(burst.ready.items()))
    decision = cache.lookup([{"role": "user", "content": WRITER_QUESTION.format(i=i)}], session=writer_session(i))
    assert decision.zone is Zone.HIT and decision.entry.cache_id == some_id


@pytest.mark.parametrize("backend", ["memory", "sqlite", pytest.param("redis", marks=pytest.mark.integration)])
def test_learned_state_is_one_durable_value_per_name(backend, tmp_path, request):
    """What the cache learned is kept by the store; a reopened SQLite file or another client of
    the same Redis reads it back, and each name is its own value."""
    if backend == "memory":
        store, reopen = MemoryStore(DIM), None
    elif backend == "sqlite":
        store, reopen = SqliteStore(tmp_path / "s.db", DIM), lambda: SqliteStore(tmp_path / "s.db", DIM)
    else:
        from smartcache.store.redis import RedisStore
        url, prefix = request.getfixturevalue("redis_url"), f"state{uuid.uuid4().hex[:8]}:"
        store, reopen = RedisStore(url, DIM, prefix=prefix), lambda: RedisStore(url, DIM, prefix=prefix)
    assert store.load_state("learned:t1") is None
    store.save_state("learned:t1", '{"a": 1}')
    store.save_state("learned:t2", "二")
    store.save_state("learned:t1", '{"a": 2}')
    again = reopen() if reopen else store
    assert again.load_state("learned:t1") == '{"a": 2}' and again.load_state("learned:t2") == "二"
