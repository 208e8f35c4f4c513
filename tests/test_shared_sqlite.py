"""One SQLite file shared by several processes (``serve --workers N``): every store sees the
others' writes, compare-and-set and hit counts are exact across them, markers are shared,
and the lifecycle lease lets one of them tick.

Two ``SqliteStore``s on one file are two connections with two indexes, as two processes
have; then real processes, and the lease on Redis."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from smartcache import load_config
from smartcache.lifecycle import Lifecycle
from smartcache.lifecycle.lease import ALWAYS, StoreLease
from smartcache.store import EntryState
from smartcache.store import sqlite as sqlite_module
from smartcache.store.memory import MemoryStore
from smartcache.store.sqlite import SqliteStore
from conftest import FakeClock
from test_store_backends import DIM, entry, flt, unit


@pytest.fixture
def pair(tmp_path):
    """Two stores on one file, on one fake clock (the markers' expiry)."""
    clock = FakeClock()
    a, b = SqliteStore(tmp_path / "c.db", DIM), SqliteStore(tmp_path / "c.db", DIM)
    a.clock = b.clock = clock
    yield a, b, clock
    a.close()
    b.close()


def test_each_store_sees_the_others_writes(pair):
    a, b, _ = pair
    rng = np.random.default_rng(0)
    first = entry(unit(rng)[0])
    a.put(first)
    seen = b.get(first.cache_id)
    assert seen.answer == first.answer and np.array_equal(seen.turn_vector, first.turn_vector)
    assert [s.entry.cache_id for s in b.search(flt(), first.turn_vector, 1)] == [first.cache_id]
    b.update(first.cache_id, feedback_score=0.5)
    assert a.get(first.cache_id).feedback_score == 0.5
    assert b.delete(first.cache_id)
    assert a.get(first.cache_id) is None and len(a) == 0 and a.search(flt(), first.turn_vector, 1) == []


def test_promotion_is_a_compare_and_set_across_stores(pair):
    a, b, _ = pair
    pending = entry(unit(np.random.default_rng(1))[0], state=EntryState.PENDING)
    a.put(pending)
    assert b.transition(pending.cache_id, EntryState.PENDING, state=EntryState.READY) is not None
    assert a.transition(pending.cache_id, EntryState.PENDING, state=EntryState.INVALID) is None
    assert a.get(pending.cache_id).state is EntryState.READY


def test_hits_from_both_stores_all_count(pair):
    a, b, _ = pair
    e = entry(unit(np.random.default_rng(2))[0])
    a.put(e)
    threads = [threading.Thread(target=lambda s=s: [s.add_hit(e.cache_id, 5.0) for _ in range(50)])
               for s in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.get(e.cache_id).hit_count == b.get(e.cache_id).hit_count == 200


def test_hits_go_in_one_write_a_second_and_every_process_counts_them(pair, monkeypatch):
    # A hit written alone was a write transaction per served answer on the shared file.
    a, b, clock = pair
    e = entry(unit(np.random.default_rng(3))[0])
    a.put(e)
    writes = []
    real = a.add_hits
    monkeypatch.setattr(a, "add_hits", lambda hits: (writes.append(dict(hits)), real(hits)))
    life = Lifecycle(a, load_config().lifecycle, clock)
    for _ in range(30):
        life.record_hit(e.cache_id)
        clock.advance(0.01)
    assert writes == [] and b.get(e.cache_id).hit_count == 0     # counted, not written yet
    clock.advance(1.0)
    life.record_hit(e.cache_id)                                  # a second on: the batch goes
    assert len(writes) == 1 and writes[0][e.cache_id][0] == 31
    assert a.get(e.cache_id).hit_count == b.get(e.cache_id).hit_count == 31
    assert b.get(e.cache_id).last_hit_at == clock()
    life.record_hit(e.cache_id)
    life.tick()                                                  # a tick writes what is counted
    assert b.get(e.cache_id).hit_count == 32 and len(writes) == 2


def test_a_batch_the_store_refused_is_written_with_the_next(pair, monkeypatch):
    from smartcache.errors import StoreError

    a, b, clock = pair
    e = entry(unit(np.random.default_rng(4))[0])
    a.put(e)
    life = Lifecycle(a, load_config(lifecycle={"hit_flush_s": 0.0}).lifecycle, clock)
    real = a.add_hits

    def down(hits):
        raise StoreError("the disk is full")

    monkeypatch.setattr(a, "add_hits", down)
    for _ in range(3):
        with pytest.raises(StoreError):
            life.record_hit(e.cache_id)
    monkeypatch.setattr(a, "add_hits", real)
    life.record_hit(e.cache_id)
    assert b.get(e.cache_id).hit_count == 4


def test_version_bumps_from_both_stores_all_count(pair):
    a, b, _ = pair
    assert [a.bump_generation("t"), b.bump_generation("t"), a.bump_generation("t")] == [1, 2, 3]
    assert b.generation("t") == 3


def test_a_remembered_generation_follows_a_bump_from_any_store(pair):
    # Generations are remembered between writes to the file (read twice a request).
    a, b, _ = pair
    assert a.generation("u") == b.generation("u") == 0
    b.bump_generation("u")
    assert a.generation("u") == b.generation("u") == 1
    a.bump_generation("u")
    assert a.generation("u") == b.generation("u") == 2


def test_markers_are_shared_and_taken_once(pair):
    a, b, clock = pair
    a.set_marker("answered:k", "v", 2.0)
    assert b.get_marker("answered:k") == "v"
    assert b.take_marker("answered:k") == "v" and a.take_marker("answered:k") is None
    a.set_marker("answered:k", "w", 2.0)
    clock.advance(2.5)
    assert b.get_marker("answered:k") is None and b.take_marker("answered:k") is None


def test_an_unreadable_markers_file_is_started_afresh(tmp_path):
    # Never synced: a power cut may leave it garbage. It holds seconds of markers, no entry.
    first = SqliteStore(tmp_path / "c.db", DIM)
    kept = entry(unit(np.random.default_rng(5))[0])
    first.put(kept)
    first.close()
    (tmp_path / "c.db.markers").write_bytes(b"not a database " * 100)
    again = SqliteStore(tmp_path / "c.db", DIM)
    assert again.get(kept.cache_id) is not None
    again.set_marker("answered:k", "1", 60)
    assert again.get_marker("answered:k") == "1"
    again.close()


def test_markers_are_a_file_of_their_own_and_never_move_the_stores(pair, tmp_path):
    # A served hit leaves two markers: written in the store's file, each sent every other
    # process to the change log before its next lookup.
    a, b, _ = pair
    version = lambda: b._poll.execute("PRAGMA data_version").fetchone()[0]     # noqa: E731
    before = version()
    a.set_markers({"answered:k": "1", "last-hit:s": "2"}, 60)
    assert version() == before
    assert b.get_marker("answered:k") == "1" and b.get_marker("last-hit:s") == "2"
    assert (tmp_path / "c.db.markers").is_file()


@pytest.mark.parametrize("make", [lambda tmp: MemoryStore(DIM), None], ids=["memory", "sqlite"])
def test_a_claimed_marker_has_one_holder_until_it_expires(pair, make, tmp_path):
    a, b, clock = pair
    if make is not None:        # one in-process store (the default markers) claimed by two holders
        a = b = make(tmp_path)
        a.clock = clock
    assert a.claim_marker("lease", "A", 5.0)
    assert not b.claim_marker("lease", "B", 5.0)
    clock.advance(4.0)
    assert a.claim_marker("lease", "A", 5.0)           # renewed by its holder
    clock.advance(4.0)
    assert not b.claim_marker("lease", "B", 5.0)       # still A's: renewed 4 s ago
    clock.advance(1.5)                                  # A died: nobody renewed it
    assert b.claim_marker("lease", "B", 5.0)
    assert not a.claim_marker("lease", "A", 5.0)


def test_only_the_lease_holder_ticks_and_another_takes_over(pair):
    a, b, clock = pair
    config = load_config().lifecycle
    lifecycles = []
    for store, name in ((a, "A"), (b, "B")):
        life = Lifecycle(store, config, clock)
        life.lease = StoreLease(store, ttl_s=5.0, holder=name, clock=clock)
        lifecycles.append(life)
    first, second = lifecycles
    rng = np.random.default_rng(3)
    for vector in unit(rng, 4):             # written long ago (created_at 1.0): due at once
        a.put(entry(vector, state=EntryState.PENDING))
    assert first.tick() == 4 and second.tick() == 0         # A took the lease; B only asked
    assert first.lease.mine() and not second.lease.mine()
    a.put(entry(unit(rng)[0], state=EntryState.PENDING))    # written by A's store, not B's lifecycle
    clock.advance(2.0)
    assert second.tick() == 0                                # the holder's to sweep, not B's
    clock.advance(4.0)                                       # A stopped ticking: its lease ran out
    assert second.tick() == 1 and second.lease.mine()
    clock.advance(2.0)
    assert first.tick() == 0 and not first.lease.mine()


def test_a_process_promotes_its_own_write_when_it_falls_due_without_the_lease(pair):
    """As a single process does on its lookup path: no wait for the holder's next sweep."""
    a, b, clock = pair
    holder, other = Lifecycle(a, load_config().lifecycle, clock), Lifecycle(b, load_config().lifecycle, clock)
    holder.lease = StoreLease(a, ttl_s=100.0, holder="A", clock=clock)     # outlasts the window
    other.lease = StoreLease(b, ttl_s=100.0, holder="B", clock=clock)
    assert holder.tick() == 0 and holder.lease.mine()
    mine = entry(unit(np.random.default_rng(5))[0], state=EntryState.PENDING).with_changes(created_at=clock.now)
    other.admit(mine)
    assert other.maybe_tick() == 0                          # not due yet
    clock.advance(other.config.promotion_window_s)
    assert other.maybe_tick() == 1 and not other.lease.mine()
    assert a.get(mine.cache_id).state is EntryState.READY


def test_the_single_process_lifecycle_needs_no_lease(tmp_path):
    store = SqliteStore(tmp_path / "c.db", DIM)
    life = Lifecycle(store, load_config().lifecycle, FakeClock())
    assert life.lease is ALWAYS and life.lease.acquire()
    assert store.get_marker("lease:lifecycle") is None       # nothing asked of the store
    store.close()


def test_a_store_behind_the_trimmed_log_reloads_everything(pair, monkeypatch):
    a, b, _ = pair
    rng = np.random.default_rng(4)
    kept = entry(unit(rng)[0])
    a.put(kept)
    assert b.get(kept.cache_id) is not None
    monkeypatch.setattr(sqlite_module, "_TRIM_EVERY", 1)
    monkeypatch.setattr(sqlite_module, "CHANGES_KEPT_S", -1.0)     # every write trims all before it
    gone = entry(unit(rng)[0])
    a.put(gone)
    a.delete(gone.cache_id)
    added = [entry(v) for v in unit(rng, 3)]
    for e in added:
        a.put(e)
    assert sorted(e.cache_id for e in b) == sorted([kept.cache_id] + [e.cache_id for e in added])
    assert b.get(gone.cache_id) is None


class _InsertAfterCount:
    """A connection that lets another store insert a row just after the open counted the rows:
    the race two workers starting at once met."""

    def __init__(self, db, writer, row) -> None:
        self._db, self._writer, self._row = db, writer, row

    def execute(self, sql, *args):
        cursor = self._db.execute(sql, *args)
        if sql.startswith("SELECT count(*) FROM entries") and self._row is not None:
            row, self._row = self._row, None
            cursor = _Prefetched(cursor.fetchall())
            self._writer.put(row)
        return cursor

    def __getattr__(self, name):
        return getattr(self._db, name)


class _Prefetched:
    def __init__(self, rows) -> None:
        self._rows = rows

    def fetchone(self):
        return self._rows[0]


def test_a_store_opening_while_another_writes_reads_one_snapshot(tmp_path, monkeypatch):
    rng = np.random.default_rng(12)
    path = tmp_path / "c.db"
    writer = SqliteStore(path, DIM)
    for vector in unit(rng, 3):
        writer.put(entry(vector))
    late = entry(unit(rng)[0])
    load_rows = SqliteStore._load_rows

    def racing(self, index):
        real, self._db = self._db, _InsertAfterCount(self._db, writer, late)
        try:
            return load_rows(self, index)
        finally:
            self._db = real

    monkeypatch.setattr(SqliteStore, "_load_rows", racing)
    opened = SqliteStore(path, DIM)
    monkeypatch.setattr(SqliteStore, "_load_rows", load_rows)
    # The open read the three rows of its snapshot, and the late one follows from the log.
    assert len(opened) == 4 and opened.get(late.cache_id) is not None
    opened.close()
    writer.close()


def _writer(path: str, n: int, seed: int) -> None:
    store = SqliteStore(path, DIM)
    for vector in unit(np.random.default_rng(seed), n):
        e = entry(vector, state=EntryState.PENDING)
        store.put(e)
        store.add_hit(e.cache_id, 2.0)
    store.close()


def test_processes_writing_one_file_see_every_row(tmp_path):
    path = str(tmp_path / "c.db")
    reader = SqliteStore(path, DIM)
    spawn = multiprocessing.get_context("spawn")
    writers = [spawn.Process(target=_writer, args=(path, 25, seed)) for seed in (10, 11)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(timeout=120)
        assert p.exitcode == 0
    entries = list(reader)
    assert len(entries) == 50 and all(e.hit_count == 1 for e in entries)
    assert reader.pending_due(10.0, 100) and len(reader.pending_due(10.0, 100)) == 50
    reader.close()


def test_a_claimed_marker_on_redis_has_one_holder(redis_url):
    """Redis markers were shared already; the claim is one Lua step (two clients, as two workers)."""
    import uuid

    from smartcache.store.redis import RedisStore

    prefix = f"lease{uuid.uuid4().hex[:8]}:"
    a, b = RedisStore(redis_url, DIM, prefix=prefix), RedisStore(redis_url, DIM, prefix=prefix)
    assert a.claim_marker("lease", "A", 30.0) and not b.claim_marker("lease", "B", 30.0)
    assert a.claim_marker("lease", "A", 30.0)           # renewed by its holder
    assert a.take_marker("lease") == "A"                 # gone (as when it expires)
    assert b.claim_marker("lease", "B", 30.0) and not a.claim_marker("lease", "A", 30.0)


@pytest.mark.parametrize("path", [":memory:", "file:c.db?mode=memory&cache=shared"])
def test_an_in_memory_or_uri_path_is_refused_and_leaves_no_file(path, tmp_path, monkeypatch):
    # The store's readers and its markers open the file again by name: ":memory:" would give each
    # an empty database of its own (and a ":memory:.markers" file on disk).
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="needs a file path"):
        SqliteStore(path, DIM)
    assert list(tmp_path.iterdir()) == []
