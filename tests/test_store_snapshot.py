"""The index snapshot: a SQLite store reopens from it with cold rows, follows the writes made
since, and reads its rows instead whenever the snapshot cannot be trusted."""

from __future__ import annotations

import shutil
import sqlite3

import numpy as np
import pytest

from smartcache.store import EntryState, Scope, SearchFilter, VersionKeyHash, codec
from smartcache.store import snapshot as snapshot_module
from smartcache.store import sqlite as sqlite_module
from smartcache.store.sqlite import SqliteStore
from test_store_scale import ANN, DIM, POOL, flt, make_entry


def filled(path, n=300, seed=0):
    """A store of ``n`` global entries (a graph pool) and 6 in two sessions, some pending."""
    rng = np.random.default_rng(seed)
    store = SqliteStore(path, DIM, ann_above=ANN)
    entries = [make_entry(rng, i) for i in range(n)]
    entries += [make_entry(rng, n + i, scope=Scope.SESSION, session=f"s{i % 2}") for i in range(6)]
    entries[5] = entries[5].with_changes(state=EntryState.PENDING, created_at=5.0)
    entries[6] = entries[6].with_changes(request_key="rk-6", expires_at=0.5)
    entries[n] = entries[n].with_changes(request_key="rk-s0")
    for e in entries:
        store.put(e)
    return store, entries


def searched(store, vectors, session=None):
    return [[(r.entry.cache_id, round(r.similarity, 4)) for r in store.search(flt(session), v, 5)] for v in vectors]


def without_vectors(entry):
    return entry.with_changes(turn_vector=None, context_vector=None)


def test_a_reopened_store_is_restored_cold_and_answers_as_before(tmp_path):
    store, entries = filled(tmp_path / "c.db")
    store.add_hits({entries[1].cache_id: (3, 9.0)})
    queries = [e.turn_vector for e in entries[::40]] + [entries[-1].turn_vector]
    before = searched(store, queries), searched(store, [entries[-1].turn_vector], "s1")
    usage = sorted(store.usage())
    store.close()

    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.snapshot_status.startswith("snapshot"), again.snapshot_status
    assert again.graph_status[POOL].startswith("reused"), again.graph_status
    index = again._index
    assert not index._entries and index._cold.count == len(entries)      # nothing read yet
    assert len(again) == len(entries) and entries[7].cache_id in again
    assert sorted(again.usage()) == usage and not index._entries         # from the columns
    assert again.pending_due(10.0, 10) == [entries[5].cache_id]
    assert [d.cache_id for d in again.purgeable(1.0, 10)] == [entries[6].cache_id]
    assert (searched(again, queries), searched(again, [entries[-1].turn_vector], "s1")) == before
    assert len(index._entries) < len(entries) // 4                       # only what the searches named
    # Every field as it was put; the vectors of the graph pool in half precision.
    for e in entries[:3] + entries[-2:]:
        got = again.get(e.cache_id)
        want = e.with_changes(hit_count=3, last_hit_at=9.0) if e is entries[1] else e
        assert without_vectors(got) == without_vectors(want)
        assert float(got.turn_vector @ e.turn_vector) > 1 - 1e-3
    # The lookups that go by a key find cold rows too.
    probe = entries[150]
    assert [e.cache_id for e in again.find(conversation_hash=probe.conversation_hash)] == [probe.cache_id]
    assert {e.cache_id for e in again.find(session_id="s0")} == {e.cache_id for e in entries[-6::2]}
    assert [e.cache_id for e in again.exact(flt(), "rk-6")] == []                     # expired
    assert [e.cache_id for e in again.exact(SearchFilter(tenant="t", version_key=VersionKeyHash("v"),
                                                         session_id="s0", now=0.1), "rk-6")] == [entries[6].cache_id]
    assert [e.cache_id for e in again.exact(flt("s0"), "rk-s0")] == [entries[300].cache_id]
    assert again.exact(flt("s1"), "rk-s0") == []
    again.close()


def test_writes_after_the_snapshot_are_followed_from_the_log(tmp_path):
    store, entries = filled(tmp_path / "c.db")
    store.close()
    # A process that wrote after the snapshot and was killed before its next save.
    writer = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    extra = make_entry(np.random.default_rng(7), 900)
    writer.put(extra)
    writer.update(entries[10].cache_id, feedback_score=0.25)
    writer.delete(entries[11].cache_id)
    writer.add_hits({entries[12].cache_id: (2, 50.0)})      # two hits: a log entry each
    moved = entries[13].with_changes(turn_vector=entries[200].turn_vector)
    writer.put(moved)
    writer._closing.set()        # killed: no save at close
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.snapshot_status.startswith("snapshot") and "6 log entries followed" in again.snapshot_status, \
        again.snapshot_status
    assert again.get(extra.cache_id) is not None and again.get(entries[11].cache_id) is None
    assert again.get(entries[10].cache_id).feedback_score == 0.25
    assert again.get(entries[12].cache_id).hit_count == 2
    assert len(again) == len(entries)
    top = {r.entry.cache_id for r in again.search(flt(), entries[200].turn_vector, 2)}
    assert top == {entries[200].cache_id, entries[13].cache_id}
    assert again.search(flt(), extra.turn_vector, 1)[0].entry.cache_id == extra.cache_id
    again.close()
    writer.close()


@pytest.fixture
def two(tmp_path):
    """Two stores on one file (two processes), both restored cold from its snapshot."""
    store, entries = filled(tmp_path / "c.db", n=40)
    store.close()
    a = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    b = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    yield a, b, entries
    a.close()
    b.close()


def test_hits_counted_by_another_process_are_counted_once_on_a_cold_row(two):
    a, b, entries = two
    target = entries[3].cache_id
    b.add_hits({target: (4, 20.0)})
    # ``a`` reads the row cold (the file has the 4 hits) before it follows the log that logs them.
    a._index._entry(target)
    assert a.get(target).hit_count == 4
    b.add_hits({target: (1, 21.0)})
    assert a.get(target).hit_count == 5 and a.get(target).last_hit_at == 21.0


def test_a_cold_row_another_process_deleted_is_gone(two):
    a, b, entries = two
    assert b.delete(entries[4].cache_id)
    assert a._index._entry(entries[4].cache_id) is None      # not in the file: never made up
    assert a.get(entries[4].cache_id) is None and entries[4].cache_id not in a
    assert entries[4].cache_id not in {r.entry.cache_id for r in a.search(flt(), entries[4].turn_vector, 3)}


def _trim_past(path):
    # Writes after the snapshot, then the log trimmed past them (as after ten minutes of writes).
    writer = SqliteStore(path, DIM, ann_above=ANN)
    writer.put(make_entry(np.random.default_rng(3), 800))
    writer._closing.set()
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO meta (key, value) SELECT 'changes_trimmed', max(seq) FROM changes")


def _another_files_snapshot(path):
    other, _ = filled(path.with_name("other.db"), n=10)
    other.close()
    shutil.rmtree(path.with_name(path.name + ".index"))
    shutil.copytree(path.with_name("other.db.index"), path.with_name(path.name + ".index"))


def _truncated_vectors(path):
    folder = next(p for p in path.with_name(path.name + ".index").iterdir() if p.is_dir())
    vectors = folder / "vectors16.npy"
    vectors.write_bytes(vectors.read_bytes()[:-100])


def _a_row_inserted_by_another_program(path):
    extra = make_entry(np.random.default_rng(5), 5000)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO entries (cache_id, tenant, session_id, state, expires_at, fields, turn, context) "
                   "VALUES (?, 't', '', 'ready', NULL, ?, ?, NULL)",
                   (extra.cache_id, codec.dumps(codec.entry_fields(extra)), codec.vector_bytes(extra.turn_vector)))


@pytest.mark.parametrize("spoil, reason", [
    (_trim_past, "older than the change log keeps"), (_another_files_snapshot, "another file"),
    (_truncated_vectors, "corrupt"), (_a_row_inserted_by_another_program, "the file has"),
], ids=["log-trimmed", "another-file", "truncated", "row-inserted-without-log"])
def test_a_snapshot_that_cannot_be_trusted_is_not_used(tmp_path, spoil, reason):
    path = tmp_path / "c.db"
    store, entries = filled(path, n=60)
    store.close()
    spoil(path)
    again = SqliteStore(path, DIM, ann_above=ANN)
    assert again.snapshot_status.startswith("rows read") and reason in again.snapshot_status, again.snapshot_status
    assert again.get(entries[9].cache_id).answer == entries[9].answer and again._index._cold is None
    assert len(again) >= len(entries)
    again.close()       # a good snapshot is written again: the next open uses it
    assert SqliteStore(path, DIM, ann_above=ANN).snapshot_status.startswith("snapshot")


def test_a_row_warmed_then_changed_is_saved_as_it_is_now(tmp_path):
    """A second snapshot mixes cold rows and warm ones; both come back as the file has them."""
    store, entries = filled(tmp_path / "c.db", n=40)
    store.close()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    again.update(entries[2].cache_id, state=EntryState.INVALID)
    again.add_hits({entries[8].cache_id: (1, 3.0)})
    again.get(entries[9].cache_id)
    again.close()
    third = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert third.snapshot_status.startswith("snapshot"), third.snapshot_status
    assert third.get(entries[2].cache_id).state is EntryState.INVALID
    assert entries[2].cache_id in {d.cache_id for d in third.purgeable(1.0, 10)}
    assert entries[2].cache_id not in {r.entry.cache_id for r in third.search(flt(), entries[2].turn_vector, 3)}
    assert third.get(entries[8].cache_id).hit_count == 1
    assert without_vectors(third.get(entries[9].cache_id)) == without_vectors(entries[9])
    third.close()


def test_processes_sharing_the_file_save_a_state_once(two, tmp_path):
    a, b, entries = two
    a.put(make_entry(np.random.default_rng(11), 700))
    a.save_snapshot()
    folder = tmp_path / "c.db.index"
    saved = sorted(p.name for p in folder.iterdir())
    len(b)                       # b follows the same log to the same position
    b.save_snapshot()
    assert sorted(p.name for p in folder.iterdir()) == saved     # the same state: not written twice
    b.delete(entries[0].cache_id)
    b.save_snapshot()
    assert sorted(p.name for p in folder.iterdir()) != saved


def test_after_a_snapshot_a_large_warm_index_is_made_cold_again(tmp_path, monkeypatch):
    """Rows read or put since the open go back to columns once a snapshot holds them; the
    store answers as before, takes writes, and other processes' writes still reach it."""
    monkeypatch.setattr(sqlite_module, "COOL_ABOVE", 10)
    store, entries = filled(tmp_path / "c.db", n=200)
    other = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    queries = [e.turn_vector for e in entries[::25]]
    before = searched(store, queries)
    assert store._index.warm_rows > 10
    store.put(make_entry(np.random.default_rng(4), 600))
    store.save_snapshot()
    assert store._index.warm_rows == 0 and len(store) == len(entries) + 1
    assert searched(store, queries) == before
    assert without_vectors(store.get(entries[40].cache_id)) == without_vectors(entries[40])
    extra = make_entry(np.random.default_rng(8), 601)
    store.put(extra)
    assert store.search(flt(), extra.turn_vector, 1)[0].entry.cache_id == extra.cache_id
    other.delete(entries[50].cache_id)
    other.add_hits({entries[51].cache_id: (2, 7.0)})
    assert store.get(entries[50].cache_id) is None and store.get(entries[51].cache_id).hit_count == 2
    store.close()
    other.close()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.snapshot_status.startswith("snapshot") and len(again) == len(entries) + 1
    assert again.search(flt(), extra.turn_vector, 1)[0].entry.cache_id == extra.cache_id
    again.close()


def test_sweeps_over_a_cold_store_keep_it_cold(tmp_path):
    """Counts by state (every metrics scrape), a tenant's or a state's entries (the admin list,
    a version bump) and iteration read cold rows in bulk and leave them cold."""
    store, entries = filled(tmp_path / "c.db", n=200)
    counts = store.count_by_state()
    store.close()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.count_by_state() == counts and counts["pending"] == 1
    assert len(again.find(tenant="t")) == len(entries) and not again._index._entries
    assert [e.cache_id for e in again.find(tenant="t", states=[EntryState.PENDING])] == [entries[5].cache_id]
    assert again.find(tenant="other") == [] and again.find(version_key="v2") == []
    listed = {e.cache_id: e for e in again}
    assert set(listed) == {e.cache_id for e in entries} and not again._index._entries
    assert without_vectors(listed[entries[7].cache_id]) == without_vectors(entries[7])
    assert again._index.warm_rows == 0
    again.close()


def test_a_snapshot_taken_before_following_another_process_still_counts_right(two, tmp_path):
    """Rows another process added that this one has not followed yet are followed before the
    save, not taken for unreadable ones (which would make the next open read every row)."""
    a, b, entries = two
    a.put(make_entry(np.random.default_rng(9), 1000))
    for i in range(3):
        b.put(make_entry(np.random.default_rng(10 + i), 2000 + i))
    a.save_snapshot()
    a._closing.set()
    b._closing.set()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.snapshot_status.startswith("snapshot") and again.corrupt == 0, again.snapshot_status
    assert len(again) == len(entries) + 4
    again.close()


def test_cooling_leaves_nothing_a_stale_reader_could_misread(tmp_path, monkeypatch):
    """The old index is emptied (a lookup still holding it misses), the new one keeps the old
    arrays' spare room and the graph's save count."""
    monkeypatch.setattr(sqlite_module, "COOL_ABOVE", 10)
    store, entries = filled(tmp_path / "c.db", n=200)
    old = store._index
    edits, capacity = old._partitions[POOL].edits, old._partitions[POOL].vectors.shape[0]
    store.save_snapshot()
    assert store._index is not old and len(old) == 0
    assert old.search(flt(), entries[0].turn_vector, 3) == [] and old.get(entries[0].cache_id) is None
    part = store._index._partitions[POOL]
    assert part.edits == edits and part.vectors.shape[0] == capacity > len(part.ids)
    store.delete(entries[0].cache_id)
    assert old.search(flt(), entries[1].turn_vector, 3) == []
    assert store.search(flt(), entries[1].turn_vector, 1)[0].entry.cache_id == entries[1].cache_id
    store.close()


def test_a_save_that_fails_leaves_no_file_and_close_still_closes(tmp_path, monkeypatch):
    store, entries = filled(tmp_path / "c.db", n=60)
    store.save_snapshot()
    folder = tmp_path / "c.db.index"
    before = sorted(p.name for p in folder.iterdir())
    store.put(make_entry(np.random.default_rng(3), 900))

    def disk_full(self, snap):
        raise RuntimeError("Failed to serialize into stream")      # what usearch raises on a full disk
    monkeypatch.setattr(snapshot_module.Saving, "write_live", disk_full)
    store.close()
    assert sorted(p.name for p in folder.iterdir()) == before
    with pytest.raises(sqlite3.ProgrammingError):
        store._db.execute("SELECT 1")
    monkeypatch.undo()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)     # the older snapshot, and the log since
    assert again.snapshot_status.startswith("snapshot") and len(again) == len(entries) + 1
    again.close()


def test_a_process_whose_save_another_made_goes_cold_too(two, monkeypatch):
    monkeypatch.setattr(sqlite_module, "COOL_ABOVE", 10)
    a, b, entries = two
    for e in entries[:30]:
        b.get(e.cache_id)
    a.put(make_entry(np.random.default_rng(6), 700))
    a.save_snapshot()
    assert b._index.warm_rows >= 30
    b.save_snapshot()           # the state is saved already: not written again, but b goes cold
    assert b._index.warm_rows == 0 and len(b) == len(entries) + 1


@pytest.mark.integration
def test_lookups_writes_hits_and_saves_at_once_keep_every_answer_right(tmp_path, monkeypatch):
    """Two stores on one file for a few seconds: three threads look up, one writes, deletes and
    counts hits, one saves snapshots (each making the index cold again). Every result is the
    entry that was put, with its own vector; afterwards the snapshot and its log give what
    reading every row gives."""
    import threading
    import time

    from smartcache.errors import StoreError
    monkeypatch.setattr(sqlite_module, "COOL_ABOVE", 20)
    store, first = filled(tmp_path / "c.db", n=300)
    store.close()
    entries = {e.cache_id: e for e in first}
    ids = list(entries)
    a = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    b = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    wrong: list[str] = []
    stop = time.monotonic() + 4.0
    lock = threading.Lock()

    def reader(store, seed):
        pick = np.random.default_rng(seed)
        while time.monotonic() < stop:
            probe = entries[ids[pick.integers(len(ids))]]
            try:
                for r in store.search(flt(), probe.turn_vector, 4):
                    want = entries[r.entry.cache_id]
                    if r.entry.answer != want.answer or float(r.entry.turn_vector @ want.turn_vector) < 0.99:
                        wrong.append(r.entry.cache_id)
                store.find(conversation_hash=probe.conversation_hash)
            except StoreError as exc:      # a lazy field of a row deleted meanwhile: a miss, as before
                assert "removed while it was being read" in str(exc)

    def writer():
        pick = np.random.default_rng(99)
        n = 10_000
        while time.monotonic() < stop:
            target = (a, b)[pick.integers(2)]
            if pick.random() < 0.5:
                n += 1
                e = make_entry(pick, n)
                with lock:
                    entries[e.cache_id] = e
                    ids.append(e.cache_id)
                target.put(e)
            else:
                target.delete(ids[pick.integers(len(ids))])
            target.add_hits({ids[pick.integers(len(ids))]: (1, 5.0)})

    def saver():
        while time.monotonic() < stop:
            (a, b)[int(time.monotonic() * 10) % 2].save_snapshot()
            time.sleep(0.05)

    failures: list[BaseException] = []

    def caught(run, *args):
        def body():
            try:
                run(*args)
            except BaseException as exc:   # a thread's failure fails the test
                failures.append(exc)
        return threading.Thread(target=body)

    threads = [caught(reader, a, 1), caught(reader, a, 2), caught(reader, b, 3), caught(writer), caught(saver)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a.close()
    b.close()
    assert not failures and not wrong, (failures, wrong)
    restored = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert restored.snapshot_status.startswith("snapshot")
    cold = sorted((e.cache_id, e.hit_count, e.state.value) for e in restored)
    restored.close()
    shutil.rmtree(tmp_path / "c.db.index")
    read = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert cold == sorted((e.cache_id, e.hit_count, e.state.value) for e in read)
    read.close()


def test_admin_stats_say_how_the_store_was_opened(tmp_path, encoder):
    """An operator sees whether a restart opened the file from its snapshot, and why not; the
    gateway's shutdown saved the snapshot the restart opens from."""
    from fastapi.testclient import TestClient

    from smartcache import SmartCache, load_config
    from smartcache.engine import FakeEngine
    from smartcache.gateway import AuthPolicy, GatewaySettings, create_app

    config = load_config(store={"backend": "sqlite", "path": str(tmp_path / "c.db")})

    def stats() -> dict:
        cache = SmartCache(config, encoder=encoder)
        app = create_app(cache, FakeEngine(), GatewaySettings(), auth=AuthPolicy(), close_engine=False,
                         close_store=True)
        with TestClient(app) as client:
            answered = client.post("/v1/chat/completions", headers={"x-session-id": "s"}, json={
                "model": "fake-engine", "messages": [{"role": "user", "content": "How do I boil an egg?"}]})
            assert answered.status_code == 200, answered.text
            return client.get("/admin/stats").json()["store"]

    first = stats()
    assert first["opened"].startswith("rows read: no snapshot") and first["unreadable_rows"] == 0
    assert stats()["opened"].startswith("snapshot: 1 rows cold")


def _fall_behind(path, reader, *, snapshot_after: bool):
    """Another process writes while ``reader`` reads nothing, and the log is trimmed past
    everything ``reader`` followed (as after ten idle minutes). ``snapshot_after``: that process
    saves a snapshot, then writes more (followed from the log); else no snapshot is left and the
    saved graph is older than the rows (so no saved graph matches)."""
    writer = SqliteStore(path, DIM, ann_above=ANN)
    rng = np.random.default_rng(11)
    added = [make_entry(rng, 900 + i) for i in range(40)]
    for e in added[:30]:
        writer.put(e)
    assert writer.delete(added[0].cache_id)
    if snapshot_after:
        writer.save_snapshot()
        trimmed = writer._snapshot_seq      # the log keeps every write since the snapshot
    else:
        shutil.rmtree(path.with_name(path.name + ".index"))
    for e in added[30:]:
        writer.put(e)
    assert writer.delete(added[30].cache_id)
    if not snapshot_after:
        trimmed = writer._seen
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('changes_trimmed', ?)", (str(trimmed),))
    writer._closing.set()
    writer._close_connections()
    assert reader._seen < trimmed
    return added


@pytest.mark.parametrize("snapshot_after", [True, False], ids=["from-the-snapshot", "rows-stale-graph"])
def test_a_process_that_fell_behind_the_log_reads_the_index_again(tmp_path, monkeypatch, snapshot_after):
    # Before, such a process read every row into the index it served from and kept no graph.
    # Now the index is read aside and put in place whole: from the newest snapshot and the log
    # after it, graphs included, or from the rows, a graph that no saved one matches being built
    # in the pool's next put, never inside the read (it may hold the file's write lock).
    path = tmp_path / "c.db"
    reader, entries = filled(path)
    reader.save_graphs()
    added = _fall_behind(path, reader, snapshot_after=snapshot_after)
    built_in_a_transaction = []
    original = sqlite_module.Partition.build_graph

    def build_graph(part, *args, **kwargs):
        if not args and not kwargs:             # a build, not a saved graph adopted
            built_in_a_transaction.append(reader._db.in_transaction)
        return original(part, *args, **kwargs)
    monkeypatch.setattr(sqlite_module.Partition, "build_graph", build_graph)
    probes = [e.turn_vector for e in entries[:5]] + [e.turn_vector for e in added[1:6] + added[31:36]]
    got = searched(reader, probes)
    status, graph = reader.snapshot_status, reader._index._partitions[POOL].graph
    assert built_in_a_transaction == []
    extra = make_entry(np.random.default_rng(12), 2000)
    reader.put(extra)                           # writes go on; the pool has its graph after it
    assert reader._index._partitions[POOL].graph is not None and not any(built_in_a_transaction)
    fresh = SqliteStore(path, DIM, ann_above=ANN)       # what the file holds, read anew
    if not snapshot_after:
        # ``got`` came from an exact scan (no graph yet): compare one. A graph built anew ranks
        # near ties in its own order (its build is multi-threaded), so it is no reference.
        for part in fresh._index._partitions.values():
            part.graph = None
    assert got == searched(fresh, probes)
    if snapshot_after:
        assert status.startswith("fell behind the change log, read again from the snapshot"), status
        assert "11 log entries followed" in status and graph is not None
        assert reader.graph_status[POOL].startswith("reused")
    else:
        assert status.startswith("fell behind the change log, read again every row (no snapshot)"), status
        assert reader.graph_status[POOL].startswith("built in the pool's next put: stale")
    for gone in (added[0], added[30]):
        assert reader.get(gone.cache_id) is None
    assert reader.get(added[1].cache_id) is not None and reader.get(added[31].cache_id) is not None
    assert len(reader) == len(fresh) and reader.corrupt == 0 and extra.cache_id in fresh
    fresh.close()
    reader.close()
