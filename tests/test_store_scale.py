"""Restart at scale: the saved HNSW graph is reused only when it matches, vectors keep their precision."""

from __future__ import annotations

import shutil
import sqlite3
import uuid

import numpy as np
import pytest

from smartcache.errors import StoreError
from smartcache.fingerprint import Signature
from smartcache.fingerprint.tags import ChangeFlag
from smartcache.store import Answer, Entry, EntryId, EntryState, MemoryStore, Scope, SearchFilter, VersionKeyHash
from smartcache.store import codec
from smartcache.store.sqlite import SqliteStore

DIM = 32
POOL = ("t", "v", "\x00global")
ANN = 150      # pools above this get a graph


def make_entry(rng, i: int, *, scope=Scope.GLOBAL, session="", context=True) -> Entry:
    sig = Signature(text=f"周末去杭州玩{i}天 plan {i}", domain="travel", skeleton="plan", entities=(f"num:{i}",),
                    flags=frozenset({ChangeFlag.ADDITION}), negations=0, sides=(1,),
                    context_entities=frozenset({"name:西湖", f"num:{i % 5}"}), history_hash=f"h{i}",
                    has_context=context, history_turns=("user: 去杭州",), actions=("plan",), nouns=("行程",))
    turn, ctx = rng.standard_normal((2, DIM)).astype(np.float32)
    return Entry(cache_id=EntryId(uuid.uuid4().hex), scope=scope, tenant="t", session_id=session,
                 version_key=VersionKeyHash("v"), context_fingerprint=f"cf{i}", signature=sig,
                 turn_vector=turn / np.linalg.norm(turn), context_vector=ctx / np.linalg.norm(ctx) if context else None,
                 prefix_hash=f"h{i}", conversation_hash=f"c{i}", answer=Answer(f"第{i}天：西湖 answer {i}", ("num:3",)),
                 state=EntryState.READY, created_at=float(i), expires_at=float("inf"), domain="travel")


def flt(session=None) -> SearchFilter:
    return SearchFilter(tenant="t", version_key=VersionKeyHash("v"), session_id=session, now=1.0)


def results(store, queries) -> list[list[tuple[str, float]]]:
    return [[(r.entry.cache_id, round(r.similarity, 5)) for r in store.search(flt("s1"), q, 8)] for q in queries]


def filled(tmp_path, n=400, seed=0) -> tuple[SqliteStore, list[Entry], np.ndarray]:
    rng = np.random.default_rng(seed)
    store = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    entries = [make_entry(rng, i) for i in range(n)] + [make_entry(rng, n + i, scope=Scope.SESSION, session="s1")
                                                        for i in range(5)]
    for e in entries:
        store.put(e)
    store.delete(entries[3].cache_id)          # a removed label must stay out of the saved graph
    queries = rng.standard_normal((20, DIM)).astype(np.float32)
    return store, entries, queries / np.linalg.norm(queries, axis=1, keepdims=True)


def test_a_reopened_store_reuses_its_saved_graph_and_finds_the_same(tmp_path):
    store, entries, queries = filled(tmp_path)
    before = results(store, queries)
    store.close()
    assert (tmp_path / "c.db.hnsw").is_dir()
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.graph_status[POOL].startswith("reused"), again.graph_status
    assert again._index._partitions[POOL].graph is not None
    assert results(again, queries) == before
    # The entries read back lazily are the entries that were put (a graph pool's vectors in half precision).
    got, want = again.get(entries[10].cache_id), entries[10]
    assert got.with_changes(turn_vector=None, context_vector=None) == want.with_changes(turn_vector=None,
                                                                                         context_vector=None)
    assert float(got.turn_vector @ want.turn_vector) > 1 - 1e-3
    # Labels stay unique after the reload: a new row and a delete keep the graph consistent.
    extra = make_entry(np.random.default_rng(9), 999)
    again.put(extra)
    assert again.search(flt(), extra.turn_vector, 1)[0].entry.cache_id == extra.cache_id
    again.delete(entries[20].cache_id)
    assert entries[20].cache_id not in {r.entry.cache_id for q in queries for r in again.search(flt(), q, 8)}
    again.close()
    third = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert third.graph_status[POOL].startswith("reused")
    assert third.search(flt(), extra.turn_vector, 1)[0].entry.cache_id == extra.cache_id


def _stale_by_rows_added(db: sqlite3.Connection, entries: list[Entry]) -> None:
    extra = make_entry(np.random.default_rng(5), 5000)
    db.execute("INSERT INTO entries (cache_id, tenant, session_id, state, expires_at, fields, turn, context) "
               "VALUES (?, 't', '', 'ready', NULL, ?, ?, NULL)",
               (extra.cache_id, codec.dumps(codec.entry_fields(extra)), codec.vector_bytes(extra.turn_vector)))


def _stale_by_rows_deleted(db: sqlite3.Connection, entries: list[Entry]) -> None:
    db.execute("DELETE FROM entries WHERE cache_id = ?", (entries[7].cache_id,))


def _stale_by_a_replaced_vector(db: sqlite3.Connection, entries: list[Entry]) -> None:
    db.execute("UPDATE entries SET turn = ? WHERE cache_id = ?",
               (codec.vector_bytes(entries[8].turn_vector[::-1].copy()), entries[8].cache_id))


def _stale_by_one_row_swapped(db: sqlite3.Connection, entries: list[Entry]) -> None:
    # Same count, another id: the count alone would not tell.
    _stale_by_rows_deleted(db, entries)
    _stale_by_rows_added(db, entries)


@pytest.mark.integration
@pytest.mark.parametrize("change, reason", [
    (_stale_by_rows_added, "stale"), (_stale_by_rows_deleted, "stale"), (_stale_by_a_replaced_vector, "stale"),
    (_stale_by_one_row_swapped, "stale"), (None, "corrupt"),
], ids=["rows-added", "rows-deleted", "vector-replaced", "row-swapped", "truncated"])
def test_a_graph_that_no_longer_matches_is_rebuilt(tmp_path, change, reason):
    store, entries, queries = filled(tmp_path)
    store.close()
    # Without the index snapshot (lost, or unusable): the rows are read and the graph checked.
    shutil.rmtree(tmp_path / "c.db.index")
    if change is None:
        path = next((tmp_path / "c.db.hnsw").glob("*.usearch"))
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        with sqlite3.connect(tmp_path / "c.db") as db:   # as a process killed before its next save would
            change(db, entries)
    again = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    assert again.graph_status[POOL].startswith(f"rebuilt: {reason}"), again.graph_status
    # Rebuilt from the rows: the same answers as a store that never had a graph file.
    exact = MemoryStore(DIM, ann_above=10**9)
    for e in again:
        exact.put(e)
    # HNSW is approximate (a rebuilt graph may miss one of the exact top 8 now and then), so the
    # check is recall: a graph whose labels pointed at the wrong rows would score near 0.
    found = sum(len({r.entry.cache_id for r in again.search(flt(), q, 8)}
                    & {r.entry.cache_id for r in exact.search(flt(), q, 8)}) for q in queries)
    assert found >= 0.95 * 8 * len(queries), found
    again.close()   # and the rebuilt graph is saved: the next open reuses it
    shutil.rmtree(tmp_path / "c.db.index")
    assert SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN).graph_status[POOL].startswith("reused: loaded")


def test_a_missing_graph_is_rebuilt(tmp_path):
    store, _, _ = filled(tmp_path)
    store.close()
    shutil.rmtree(tmp_path / "c.db.index")
    for path in (tmp_path / "c.db.hnsw").iterdir():
        path.unlink()
    assert SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN).graph_status[POOL].startswith("rebuilt: no saved")


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_context_vectors_round_trip_within_1e3_cosine(tmp_path, backend):
    rng = np.random.default_rng(3)
    entries = [make_entry(rng, i, context=i % 4 != 0) for i in range(300)]
    store = MemoryStore(DIM, ann_above=ANN) if backend == "memory" else SqliteStore(tmp_path / "c.db", DIM,
                                                                                    ann_above=ANN)
    for e in entries:
        store.put(e)
    if backend == "sqlite":
        store.close()
        store = SqliteStore(tmp_path / "c.db", DIM, ann_above=ANN)
    for e in entries:
        got = store.get(e.cache_id).context_vector
        if e.context_vector is None:
            assert got is None
        else:
            assert got.dtype == np.float32 and abs(float(got @ e.context_vector) - 1.0) < 1e-3


def test_an_old_float32_context_row_still_loads(tmp_path):
    store, entries, _ = filled(tmp_path, n=10)
    store.close()
    old = entries[5]
    with sqlite3.connect(tmp_path / "c.db") as db:      # written as before: float32 context bytes
        db.execute("UPDATE entries SET context = ? WHERE cache_id = ?",
                   (codec.vector_bytes(old.context_vector), old.cache_id))
        assert len(db.execute("SELECT context FROM entries WHERE cache_id = ?", (old.cache_id,)).fetchone()[0]) \
            == 4 * DIM
    again = SqliteStore(tmp_path / "c.db", DIM)
    assert again.corrupt == 0
    assert abs(float(again.get(old.cache_id).context_vector @ old.context_vector) - 1.0) < 1e-3
    assert again.get(entries[6].cache_id).signature == entries[6].signature


@pytest.mark.parametrize("opened_from", ["snapshot", "rows"])
def test_sweeps_over_every_entry_read_no_row_back(tmp_path, opened_from):
    """Purge, eviction and counts read index fields only: a million lazy entries stay lazy,
    whether the index was restored cold from its snapshot or read from the rows."""
    store, entries, _ = filled(tmp_path, n=50)
    store.close()
    if opened_from == "rows":
        shutil.rmtree(tmp_path / "c.db.index")
    again = SqliteStore(tmp_path / "c.db", DIM)
    assert again.snapshot_status.startswith("snapshot" if opened_from == "snapshot" else "rows read"), \
        again.snapshot_status
    again._reader.close()          # from here any read of a signature, answer or context fails
    swept = [(e.state, e.expires_at, e.created_at, e.hit_count, e.conversation_hash) for e in again]
    assert len(swept) == len(again) and again.count_by_state()["ready"] == len(again)
    assert again.find(conversation_hash=entries[0].conversation_hash)[0].cache_id == entries[0].cache_id
    with pytest.raises(StoreError):
        again.get(entries[0].cache_id).signature
