"""Promotion, purge and hit counting from the store's own state: across a restart, across
replicas, on a file of the old schema, and under concurrent hits."""

from __future__ import annotations

import sqlite3
import threading
import uuid

import numpy as np
import pytest

from smartcache import SmartCache, Zone, load_config
from smartcache.config import LifecycleConfig
from smartcache.errors import StoreError
from smartcache.lifecycle import Lifecycle
from smartcache.store import EntryState, MemoryStore, Store
from smartcache.store.sqlite import SqliteStore
from conftest import U, remember
from test_store_backends import DIM, entry, unit

WINDOW = 30.0
ASK = [U("周末去杭州玩三天，帮我排个行程")]
PARAPHRASE = [U("周末去杭州玩3天，帮我排一下行程")]       # one the verifier serves
PLAN = "第1天：西湖\n第2天：灵隐寺\n第3天：河坊街"
OTHERS = [([U("How do I rotate the API keys of my project?")], "Settings > Keys: create a new key, revoke the old."),
          ([U("退款一般多久到账？")], "1-7个工作日原路退回。")]

# The schema every file had before created_at: what the migration starts from.
OLD_SCHEMA = """
CREATE TABLE entries (cache_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, session_id TEXT NOT NULL,
    state TEXT NOT NULL, expires_at REAL, fields TEXT NOT NULL, turn BLOB NOT NULL, context BLOB);
CREATE INDEX entries_scope ON entries (tenant, session_id);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
OLD_COLUMNS = "cache_id, tenant, session_id, state, expires_at, fields, turn, context"


def sqlite_config(path) -> object:
    return load_config(store={"backend": "sqlite", "path": str(path)}, lifecycle={"promotion_window_s": WINDOW})


def redis_config(url: str, prefix: str) -> object:
    return load_config(store={"backend": "redis", "url": url, "prefix": prefix},
                       lifecycle={"promotion_window_s": WINDOW})


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.integration)])
def make_store(request, tmp_path):
    """``make()``: a store of the parametrised backend, holding the same entries at every call.
    On Redis each call is another client, as replicas are; a SQLite file has one owner, so
    its "replicas" are threads of that owner, sharing one store, as memory's are."""
    if request.param == "redis":
        from smartcache.store.redis import RedisStore

        url, prefix = request.getfixturevalue("redis_url"), f"d{uuid.uuid4().hex[:8]}:"
        return lambda: RedisStore(url, DIM, prefix=prefix)
    shared = MemoryStore(DIM) if request.param == "memory" else SqliteStore(tmp_path / "c.db", DIM)
    return lambda: shared


# -- a restart, a dead replica, an old file ---------------------------------------------------

def test_a_pending_entry_is_promoted_after_a_restart_on_the_same_file(tmp_path, encoder, clock):
    first = SmartCache(sqlite_config(tmp_path / "c.db"), encoder=encoder, clock=clock)
    written = first.store(ASK, PLAN, session="s")
    assert written.state is EntryState.PENDING
    first.backend.close()                     # the process goes away inside the window
    second = SmartCache(sqlite_config(tmp_path / "c.db"), encoder=encoder, clock=clock)
    assert second.lookup(PARAPHRASE, session="s").zone is Zone.MISS        # still pending: never served
    clock.advance(WINDOW + 1)
    decision = second.lookup(PARAPHRASE, session="s")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == written.cache_id
    assert second.get(written.cache_id).state is EntryState.READY


def test_a_dead_writers_pending_entries_are_promoted_and_served_by_another_replica(redis_url, encoder, clock):
    prefix = f"dead{uuid.uuid4().hex[:8]}:"
    a = SmartCache(redis_config(redis_url, prefix), encoder=encoder, clock=clock)
    written = a.store(ASK, PLAN, session="s").cache_id
    others = [a.store(m, answer, session=f"o{i}").cache_id for i, (m, answer) in enumerate(OTHERS)]
    del a                                      # replica A dies without ever having ticked
    b = SmartCache(redis_config(redis_url, prefix), encoder=encoder, clock=clock)
    assert b.lookup(PARAPHRASE, session="s").zone is Zone.MISS
    clock.advance(WINDOW + 1)
    decision = b.lookup(PARAPHRASE, session="s")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == written
    assert all(b.get(cache_id).state is EntryState.READY for cache_id in others)
    assert b.backend.r.zcard(b.backend.pending_key) == 0


def test_a_file_of_the_old_schema_opens_migrates_and_promotes(tmp_path, encoder, clock):
    new, old = tmp_path / "new.db", tmp_path / "old.db"
    writer = SmartCache(sqlite_config(new), encoder=encoder, clock=clock)
    written = writer.store(ASK, PLAN, session="s")
    created = writer.get(written.cache_id).created_at
    writer.backend.close()
    with sqlite3.connect(old) as db:           # the same rows, in a file of the schema before created_at
        db.executescript(OLD_SCHEMA)
        db.execute("ATTACH DATABASE ? AS new", (str(new),))
        db.execute(f"INSERT INTO entries SELECT {OLD_COLUMNS} FROM new.entries")
        db.execute("INSERT INTO meta SELECT * FROM new.meta")
    clock.advance(WINDOW + 1)
    cache = SmartCache(sqlite_config(old), encoder=encoder, clock=clock)
    decision = cache.lookup(PARAPHRASE, session="s")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == written.cache_id
    cache.backend.close()
    with sqlite3.connect(old) as db:
        assert db.execute("SELECT created_at, state FROM entries").fetchall() == [(created, "ready")]
        indexes = {row[1] for row in db.execute("PRAGMA index_list(entries)")}
    assert {"entries_due", "entries_expiry"} <= indexes
    SqliteStore(old, encoder.dim).close()      # a second open finds nothing left to migrate


# -- replicas ticking at once ---------------------------------------------------------------

def test_replicas_ticking_at_once_promote_each_due_entry_exactly_once(make_store, clock):
    config = LifecycleConfig(promotion_window_s=WINDOW)
    writer = make_store()
    due = [entry(v, state=EntryState.PENDING).with_changes(created_at=clock() + i * 0.01)
           for i, v in enumerate(unit(np.random.default_rng(0), 120))]
    late = entry(unit(np.random.default_rng(1))[0], state=EntryState.PENDING).with_changes(created_at=clock() + 20)
    for e in (*due, late):
        writer.put(e)
    clock.advance(WINDOW + 5)
    replicas = [Lifecycle(make_store(), config, clock) for _ in range(4)]
    start, counts = threading.Barrier(len(replicas)), []

    def run(lifecycle: Lifecycle) -> None:
        start.wait()
        counts.append(sum(lifecycle.tick() for _ in range(3)))

    threads = [threading.Thread(target=run, args=(r,)) for r in replicas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == len(due)
    assert all(writer.get(e.cache_id).state is EntryState.READY for e in due)
    assert writer.get(late.cache_id).state is EntryState.PENDING and writer.pending_due(clock() - WINDOW, 10) == []
    clock.advance(20)
    assert replicas[0].tick() == 1 and writer.pending_due(clock() - WINDOW, 10) == []


def test_the_lifecycle_never_reads_every_entry(make_store, clock, monkeypatch):
    store = make_store()
    config = LifecycleConfig(promotion_window_s=WINDOW, capacity=5, default_ttl_s=100)
    lifecycle = Lifecycle(store, config, clock)
    rng = np.random.default_rng(2)
    monkeypatch.setattr(type(store), "__iter__", lambda self: pytest.fail("iterated every entry"))
    dead = entry(unit(rng)[0], state=EntryState.INVALID)
    frozen = entry(unit(rng)[0], state=EntryState.FROZEN, expires_at=clock() + 1)
    old = entry(unit(rng)[0], expires_at=clock() + 1).with_changes(created_at=clock())
    for e in (dead, frozen, old):
        lifecycle.admit(e)
    clock.advance(2)
    assert sorted(store.purgeable(clock(), 10)) == sorted([(dead.cache_id, False), (old.cache_id, True)])
    assert lifecycle.purge() == 2 and store.get(dead.cache_id) is None and store.get(frozen.cache_id) is not None
    # Eviction: over capacity, the least recently used goes; the frozen one never does.
    fresh = [entry(v, state=EntryState.PENDING).with_changes(created_at=clock() + i) for i, v in enumerate(unit(rng, 6))]
    for e in fresh:
        lifecycle.admit(e)
    assert len(store) == 5 and store.get(frozen.cache_id) is not None and store.get(fresh[0].cache_id) is None
    clock.advance(WINDOW + 10)
    assert lifecycle.tick() == 4


# -- hits -------------------------------------------------------------------------------------

def test_hits_from_many_threads_are_all_counted(make_store):
    store = make_store()
    e = entry(unit(np.random.default_rng(3))[0])
    store.put(e)
    start = threading.Barrier(8)

    def hit() -> None:
        start.wait()
        for i in range(250):
            store.add_hit(e.cache_id, 100.0 + i)

    threads = [threading.Thread(target=hit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(e.cache_id).hit_count == 2000
    if isinstance(store, SqliteStore):         # and the file holds the same count
        store.close()
        assert SqliteStore(store.path, DIM).get(e.cache_id).hit_count == 2000


def test_a_hit_never_recreates_a_deleted_entry(make_store):
    store = make_store()
    rng = np.random.default_rng(4)
    gone = entry(unit(rng)[0])
    store.put(gone)
    assert store.delete(gone.cache_id)
    store.add_hit(gone.cache_id, 5.0)
    assert store.get(gone.cache_id) is None and len(store) == 0
    # Racing a delete: the hits before it count, none after it brings the entry back.
    for _ in range(10):
        e = entry(unit(rng)[0])
        store.put(e)
        first, stop = threading.Event(), threading.Event()

        def hit(cache_id: str = e.cache_id) -> None:
            while not stop.is_set():
                store.add_hit(cache_id, 5.0)
                first.set()

        t = threading.Thread(target=hit)
        t.start()
        first.wait()
        store.delete(e.cache_id)
        stop.set()
        t.join()
        assert store.get(e.cache_id) is None and len(store) == 0
        if hasattr(store, "r"):
            assert not store.r.exists(store._key(e.cache_id))


# -- throttled ticks on the lookup path --------------------------------------------------------

class CountingStore(MemoryStore):
    asked = 0

    def pending_due(self, created_before: float, limit: int) -> list[str]:
        self.asked += 1
        return super().pending_due(created_before, limit)


def test_lookups_tick_at_most_every_second_yet_promote_at_the_window(encoder, clock):
    store = CountingStore(encoder.dim)
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": WINDOW}), encoder=encoder, store=store,
                       clock=clock)
    written = cache.store(ASK, PLAN, session="s").cache_id
    for _ in range(5):
        assert cache.lookup(PARAPHRASE, session="s").zone is Zone.MISS
    assert store.asked == 1                    # five lookups in the same second: one query
    clock.advance(WINDOW - 0.5)
    assert cache.lookup(PARAPHRASE, session="s").zone is Zone.MISS and store.asked == 2
    clock.advance(0.6)                         # due now, though the last tick was 0.6 s ago
    decision = cache.lookup(PARAPHRASE, session="s")
    assert decision.zone is Zone.HIT and decision.entry.cache_id == written


def test_a_stale_member_of_the_redis_pending_set_is_dropped(redis_url):
    from smartcache.store.redis import RedisStore

    store = RedisStore(redis_url, DIM, prefix=f"stale{uuid.uuid4().hex[:8]}:")
    rng = np.random.default_rng(5)
    expired, kept, promoted = (entry(v, state=EntryState.PENDING) for v in unit(rng, 3))
    for e in (expired, kept, promoted):
        store.put(e)
    store.r.delete(store._key(expired.cache_id))          # what the key's own expiry does
    assert store.transition(promoted.cache_id, EntryState.PENDING, state=EntryState.READY) is not None
    assert store.r.zcard(store.pending_key) == 2          # the promotion left the set in its MULTI
    assert store.pending_due(10.0, 10) == [kept.cache_id]
    assert store.r.zrange(store.pending_key, 0, -1) == [kept.cache_id.encode()]
    assert store.delete(kept.cache_id) and store.r.zcard(store.pending_key) == 0
    # Pending entries a version without the set wrote join it when a replica starts.
    old = entry(unit(rng)[0], state=EntryState.PENDING)
    store.put(old)
    store.r.zrem(store.pending_key, old.cache_id)
    assert store.pending_due(10.0, 10) == []
    assert RedisStore(redis_url, DIM,
                      prefix=store.prefix).pending_due(10.0, 10) == [old.cache_id]


class BrokenQueries(MemoryStore):
    def pending_due(self, created_before: float, limit: int) -> list[str]:
        raise StoreError("connection reset")


def test_a_failing_promotion_query_fails_open(encoder, clock):
    cache = SmartCache(load_config(), encoder=encoder, store=BrokenQueries(encoder.dim), clock=clock)
    remember(cache, ASK, PLAN, session="s")
    assert cache.lookup(PARAPHRASE, session="s").zone is Zone.HIT
    assert cache.stats().store_errors == 1


def test_redis_usage_reads_created_at_from_hashes_written_before_the_field(redis_url):
    from smartcache.store.redis import RedisStore

    store = RedisStore(redis_url, DIM, prefix=f"usage{uuid.uuid4().hex[:8]}:")
    rng = np.random.default_rng(6)
    new, old = (entry(v).with_changes(created_at=50.0 + i) for i, v in enumerate(unit(rng, 2)))
    frozen = entry(unit(rng)[0], state=EntryState.FROZEN)
    for e in (new, old, frozen):
        store.put(e)
    store.r.hdel(store._key(old.cache_id), "created")
    store.add_hit(new.cache_id, 70.0)
    assert sorted(store.usage()) == sorted([(new.cache_id, 70.0, 1), (old.cache_id, 51.0, 0)])
