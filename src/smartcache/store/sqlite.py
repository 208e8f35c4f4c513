"""SQLite store: the embedded persistent default of ``smartcache serve``.

Every write goes to SQLite first, in its own transaction, and only then to the
in-process index (a MemoryStore), so what a lookup can find is always on disk.
The file is in WAL mode: a killed process (``kill -9``) loses nothing that was
committed, and readers never see half a write. ``synchronous`` is NORMAL by
default (durable across process crashes; a power cut may lose the last
commits); FULL makes every commit survive power loss too, at an fsync a write.

On open every row is read back into the index at once: the few fields an index
needs come out of SQLite's own JSON parser; signature, answer and context vector
are read back from the file (a second, read-only connection) the first time an
entry is looked at (``codec.lazy_entry``). A row that cannot be read is skipped,
counted in ``corrupt`` and logged, never served and never deleted.

Several processes may share a file (``serve --workers N``): each write is a
transaction under the file's write lock (``BEGIN IMMEDIATE``) that also appends the
entry's id to a change log (``changes``); before a read, a process whose
``PRAGMA data_version`` moved reads the log from where it stopped and reloads those
rows into its index, and a write does the same under the lock first, so a
compare-and-set (promotion) or a hit count is exact across processes. The log keeps
``CHANGES_KEPT_S`` of writes; a process that fell further behind reloads everything.
Markers (regenerate detection, the lifecycle lease) are a file beside it (``<db>.markers``),
so that their writes, one a served hit, never send the other processes to the change log.
Replicas on several machines share a Redis store, not a SQLite file.

An index snapshot (``snapshot``) is saved beside the file (``<db>.index/``) on close, every
``snapshot_save_s`` while the file changes, and after an open that read every row. An open
that finds one made for this file, with every write since still in the change log, restores
the index from it as cold rows (``cold``): columns and graphs, no row read until asked for;
then it follows the log from where the snapshot was taken. ``snapshot_status`` says which
open it was and why.

The HNSW graph of each pool above ``ann_above`` is saved beside the file
(``<db>.hnsw/``, see ``graph``): after a rebuild on open, every ``graph_save_s``
while it changes, and on close. Open reuses a saved graph only when it provably
matches the rows; ``graph_status`` says, per pool, which happened and why.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np

from smartcache.defaults import section
from smartcache.errors import StoreError
from smartcache.store import codec, graph, snapshot
from smartcache.store.base import Doomed, Entry, EntryState, ScoredEntry, SearchFilter, Store, Usage
from smartcache.store.memory import MemoryStore
from smartcache.store.partition import Partition

_EMPTY = np.zeros(0, np.float32)   # a stored entry's vector marker: its row holds the vector
_BATCH = 4096   # rows read at a time: small, so the freed blobs of a batch leave no large holes in the heap
CHANGES_KEPT_S = 600.0      # how long the change log keeps a write for processes that follow it
# After a snapshot, an index holding more entries than this is made cold again from it: rows
# read or put since cost about 1.6 KB each as entries, 0.2 KB as columns.
COOL_ABOVE = 20_000
_TRIM_EVERY = 1024          # log entries between two trims

log = logging.getLogger("smartcache.store")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    cache_id   TEXT PRIMARY KEY,
    tenant     TEXT NOT NULL,
    session_id TEXT NOT NULL,
    state      TEXT NOT NULL,
    expires_at REAL,
    fields     TEXT NOT NULL,
    turn       BLOB NOT NULL,
    context    BLOB,
    created_at REAL
);
CREATE INDEX IF NOT EXISTS entries_scope ON entries (tenant, session_id);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
# Created after the migration has added created_at to an older file. They answer the
# lifecycle's queries (pending entries due for promotion, entries to purge) without a table scan.
_INDEXES = """
CREATE INDEX IF NOT EXISTS entries_due ON entries (state, created_at);
CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at);
"""
# Sharing a file between processes: the change log every process's index follows (the markers
# every process must see are a file of their own, ``_Markers``).
_SHARED = """
CREATE TABLE IF NOT EXISTS changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, cache_id TEXT NOT NULL, at REAL NOT NULL,
                                    hit REAL);
CREATE INDEX IF NOT EXISTS changes_at ON changes (at);
"""


class SqliteStore(Store):
    """A MemoryStore index over a SQLite file; thread-safe, one writer at a time."""

    def __init__(self, path: str | Path, dim: int, *, synchronous: str = section("store")["synchronous"],
                 graph_save_s: float = 900.0, snapshot_save_s: float = CHANGES_KEPT_S / 2,
                 **index_options) -> None:
        if synchronous.upper() not in ("NORMAL", "FULL"):
            raise ValueError("synchronous must be NORMAL or FULL")
        if str(path).strip() == ":memory:" or str(path).startswith("file:"):
            # Lazy reads, the change poll and the markers open the file again by its name.
            raise ValueError(f"SqliteStore needs a file path, not {str(path)!r}: MemoryStore keeps a store in memory")
        self.path = Path(path)
        self.dim = dim
        self.corrupt = 0
        self.graph_status: dict[tuple[str, str, str], str] = {}
        self._graph_dir = self.path.with_name(self.path.name + ".hnsw")
        self._snapshot_dir = self.path.with_name(self.path.name + ".index")
        self.snapshot_status = ""
        self._snapshot_seq: int | None = None      # the log position of the last snapshot saved or used
        self._strings: dict[str, str] = {}          # shared by the entries read cold (``_fetch_entries``)
        self._saved_edits: dict[tuple[str, str, str], int] = {}
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
            self._migrate()
            self._db.executescript(_SHARED)
            if "hit" not in {row[1] for row in self._db.execute("PRAGMA table_info(changes)")}:
                self._db.execute("ALTER TABLE changes ADD COLUMN hit REAL")     # a log of the first shape
            self._check_dim()
            self._file_id = self._identity()
            # Read before the rows: a write in between is in the log after it, and read again.
            self._seen = int(self._db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0])
            # Lazy entries read through their own connection: a lookup holding the index's lock
            # never waits on the write lock (writers take it before the index's).
            self._reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._read_lock = threading.Lock()
            # Cold rows' index fields (``_fetch_entries``): a connection of their own, so making a row
            # warm never waits on a lazy field's read.
            self._cold_reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._cold_lock = threading.Lock()
            # Asked before every read whether another connection wrote (``_sync``): its own, so the
            # question never waits on a lazy read or a write.
            self._poll = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            self._poll_lock = threading.Lock()
            self._markers = _Markers(self.path.with_name(self.path.name + ".markers"))
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the SQLite store at {self.path}: {exc}") from exc
        self._data_version: int | None = None
        self._generations: tuple[int | None, dict[str, int]] = (None, {})
        self._index_options = index_options
        self._index = MemoryStore(dim, **index_options)
        self._closing = threading.Event()
        started = time.perf_counter()
        if not self._restore():
            self.corrupt = self._load(self._index)
        log.info("smartcache: opened %s in %.1f s (%s)", self.path, time.perf_counter() - started,
                 self.snapshot_status)
        self._index.adopt_graphs(self._adopt_graph)
        self.save_graphs()              # a graph rebuilt just now is saved at once
        if self._snapshot_seq is None:
            self.save_snapshot()        # and the rows read just now: the next open reads none
        self._saver = threading.Thread(target=self._save_every, args=(graph_save_s, snapshot_save_s), daemon=True,
                                       name="smartcache-graph-saver")
        self._saver.start()

    def _check_dim(self) -> None:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        if row is None:
            self._db.execute("INSERT INTO meta (key, value) VALUES ('dim', ?)", (str(self.dim),))
        elif int(row[0]) != self.dim:
            raise StoreError(f"{self.path} holds {row[0]}-d vectors; this encoder makes {self.dim}-d ones "
                             "(use another file per encoder)")

    def _identity(self) -> str:
        """The file's random token: a snapshot of another file (a copy restored over this one
        keeps its token, and then its log positions) is never taken for this one's."""
        self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('file_id', ?)", (uuid.uuid4().hex,))
        return str(self._db.execute("SELECT value FROM meta WHERE key = 'file_id'").fetchone()[0])

    def _migrate(self) -> None:
        """Bring a file of an older schema up to this one; a no-op on a current file."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(entries)")}
        if "created_at" not in columns:
            # Written before the lifecycle queries: add the column and backfill it from each row's
            # JSON, in one transaction. An unreadable row keeps NULL (it is never loaded anyway).
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("ALTER TABLE entries ADD COLUMN created_at REAL")
                self._db.execute("UPDATE entries SET created_at = json_extract(fields, '$.created_at') "
                                 "WHERE json_valid(fields)")
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise
            log.info("smartcache: migrated %s: added entries.created_at", self.path)
        self._db.executescript(_INDEXES)

    def _load(self, index: MemoryStore) -> int:
        """Every row at once into the empty ``index``: no JSON decoded in Python, turn vectors
        copied in batches, no put(); the number of unreadable rows skipped. One read transaction
        for the count and the rows: another process's insert between them would leave more rows
        than room for their vectors."""
        if self._db.in_transaction:         # following the log (``_follow``): its snapshot already
            return self._load_rows(index)
        self._db.execute("BEGIN")
        try:
            return self._load_rows(index)
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("COMMIT")

    def _load_rows(self, index: MemoryStore) -> int:
        count = self._db.execute("SELECT count(*) FROM entries").fetchone()[0]
        turns = np.empty((count, self.dim), np.float32)
        entries: list[Entry] = []
        strings: dict[str, str] = {}
        unreadable = 0
        paths = ", ".join(f"'{p}'" for p in codec.EAGER_PATHS)
        cursor = self._db.execute(
            "SELECT cache_id, tenant, session_id, state, expires_at, "
            f"CASE WHEN json_valid(fields) THEN json_extract(fields, {paths}) END, turn, length(context) "
            "FROM entries")
        while batch := cursor.fetchmany(_BATCH):
            start = len(entries)
            blobs: list[bytes] = []
            for cache_id, tenant, session_id, state, expires, eager, turn, context_len in batch:
                try:
                    if eager is None:
                        raise ValueError("its fields are not JSON")
                    if not isinstance(turn, bytes) or len(turn) != 4 * self.dim:
                        raise ValueError(f"its turn vector is not {self.dim} float32 values")
                    if context_len not in (None, 2 * self.dim, 4 * self.dim):   # float16, or float32 as before
                        raise ValueError(f"its context vector has {context_len} bytes")
                    entries.append(codec.lazy_entry(cache_id, tenant, session_id, state, expires, eager, _EMPTY,
                                                    self._fetch, strings))
                except (ValueError, KeyError, TypeError) as exc:
                    unreadable += 1
                    log.error("smartcache: skipping unreadable entry %s in %s: %s", cache_id, self.path, exc)
                    continue
                blobs.append(turn)
            turns[start:len(entries)] = np.frombuffer(b"".join(blobs), np.float32).reshape(-1, self.dim)
        index.restore(entries, turns[:len(entries)])
        return unreadable

    # -- the index snapshot -----------------------------------------------------------

    def _restore(self) -> bool:
        """The index from the snapshot, cold, and the writes since followed; False (and the
        reason in ``snapshot_status``) when there is none this file can use."""
        self._db.execute("BEGIN")
        try:
            snap = self._from_snapshot()
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("COMMIT")
        if snap is not None:
            self.snapshot_status = f"snapshot: {len(snap.ids):,} rows cold, {self._seen - snap.seq} log entries followed"
        return snap is not None

    def _from_snapshot(self) -> snapshot.Snapshot | None:
        """A fresh index from the snapshot, the log followed past it, inside the caller's read
        transaction (``self._lock`` held), put in place only once whole (a reader never sees
        the snapshot's state, nor half of one): the snapshot used, or None, the index left as it
        was and the reason in ``snapshot_status``, when there is none this file can use."""
        try:
            snap = snapshot.load(self._snapshot_dir, file_id=self._file_id, dim=self.dim)
        except snapshot.Unusable as exc:
            self.snapshot_status = f"rows read: {exc}"
            return None
        trimmed = self._query("SELECT value FROM meta WHERE key = 'changes_trimmed'", ())
        last = int(self._query("SELECT coalesce(max(seq), 0) FROM changes", ())[0][0])
        if trimmed and int(trimmed[0][0]) > snap.seq or last < snap.seq:
            self.snapshot_status = (f"rows read: the snapshot (log position {snap.seq}) is older than the "
                                    "change log keeps, or newer than the file")
            return None
        fresh = MemoryStore(self.dim, **self._index_options)
        fresh.restore_cold(snap, self._fetch_entries)
        seen, unreadable = self._follow_log(fresh, snap.seq)
        unreadable += snap.unindexed
        rows = int(self._query("SELECT count(*) FROM entries", ())[0][0])
        if rows != len(fresh) + unreadable:
            # A write that bypassed the log (another program): the file is the truth.
            self.snapshot_status = (f"rows read: the snapshot and its log give {len(fresh)} rows "
                                    f"(+{unreadable} unreadable), the file has {rows}")
            return None
        for key, part in fresh.graphs():
            self.graph_status[key] = "reused: from the index snapshot"
            self._saved_edits[key] = part.edits     # edited since, it is saved again
        self._index, self._seen, self.corrupt = fresh, seen, unreadable
        self._snapshot_seq = snap.seq
        return snap

    def save_snapshot(self) -> None:
        """Save the index as a snapshot if the file changed since the last one. What the index
        changes in place (its vector matrices and graphs) is written with the writers held off
        (about a second at a million rows; a lookup that must follow another process's write
        waits too); columns, ids and checksums after. Then an index holding more than
        ``COOL_ABOVE`` entries is made cold again from it."""
        if not len(self._index) and not self._snapshot_dir.joinpath(snapshot.CURRENT).exists():
            return      # an empty store opens at once anyway
        try:
            with snapshot.Saving(self._snapshot_dir) as saving:    # its file lock first, never under ours
                with self._lock:
                    snap = self._capture()
                    if snap is None:
                        return
                    saving.write_live(snap)
                    self._cool(snap)
                saving.finish(snap)
        except (OSError, RuntimeError, ValueError, StoreError) as exc:  # the next open reads the rows
            log.error("smartcache: cannot save the index snapshot beside %s: %s", self.path, exc)
            return
        self._snapshot_seq = snap.seq

    def _capture(self) -> snapshot.Snapshot | None:
        """The index as a snapshot, after following the log in the read transaction that counts
        the file's rows (so rows another process added or removed meanwhile are not taken for
        unreadable ones); None when there is nothing to save. ``self._lock`` held."""
        self._db.execute("BEGIN")
        try:
            self._follow()
            rows = int(self._query("SELECT count(*) FROM entries", ())[0][0])
        finally:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("COMMIT")
        unindexed = rows - len(self._index)
        # Saved already, by this process or another following the same log (not after an open
        # that could not use the snapshot there: that one is replaced).
        saved = snapshot.saved_seq(self._snapshot_dir, self._file_id)
        if self._snapshot_seq is not None and saved is not None and saved >= self._seen:
            self._snapshot_seq = self._seen
            if self._cooling_due():     # this process's rows go cold all the same
                self._cool(self._index.snapshot(self._seen, self._file_id, unindexed))
            return None
        return self._index.snapshot(self._seen, self._file_id, unindexed)

    def _cooling_due(self) -> bool:
        return self._index.warm_rows > COOL_ABOVE and not self._closing.is_set()

    def _cool(self, snap: snapshot.Snapshot) -> None:
        """The index made cold again from ``snap``, taken of it just now (``self._lock`` held)."""
        if self._cooling_due():
            self._index = self._index.cooled(snap, self._fetch_entries)

    def _fetch_entries(self, ids: list[str]) -> dict[str, Entry]:
        """Cold rows' entries: their index fields now, the rest when first read
        (``codec.lazy_entry``). A row gone or unreadable is left out (and logged)."""
        paths = ", ".join(f"'{p}'" for p in codec.EAGER_PATHS)
        out: dict[str, Entry] = {}
        if len(self._strings) > 4096:       # shared strings, not every session id ever read
            self._strings.clear()
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            try:
                with self._cold_lock:
                    rows = self._cold_reader.execute(
                        "SELECT cache_id, tenant, session_id, state, expires_at, "
                        f"CASE WHEN json_valid(fields) THEN json_extract(fields, {paths}) END FROM entries "
                        f"WHERE cache_id IN ({', '.join('?' * len(chunk))})", tuple(chunk)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite read failed: {exc}") from exc
            for row in rows:
                try:
                    if row[5] is None:
                        raise ValueError("its fields are not JSON")
                    out[row[0]] = codec.lazy_entry(*row, _EMPTY, self._fetch, self._strings)
                except (ValueError, KeyError, TypeError) as exc:
                    log.error("smartcache: cannot read entry %s in %s: %s", row[0], self.path, exc)
        return out

    def _fetch(self, cache_id: str) -> tuple[bytes, np.ndarray | None] | None:
        """A lazy entry's fields and context vector, read back when it is first looked at."""
        try:
            with self._read_lock:
                row = self._reader.execute("SELECT CAST(fields AS BLOB), context FROM entries WHERE cache_id = ?",
                                           (cache_id,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite read failed: {exc}") from exc
        return None if row is None else (row[0], codec.vector_from(row[1], self.dim))

    # -- the saved graphs -------------------------------------------------------------

    def _adopt_graph(self, key: tuple[str, str, str], part: Partition, *, build_now: bool = True
                     ) -> graph.Graph | None:
        """The saved graph of a pool if it matches its rows; else None, and the pool's graph is
        built now (``adopt_graphs``) or, ``build_now=False``, in the pool's next put."""
        n = len(part.ids)
        loaded = graph.load(self._graph_dir, key, part.ids, part.vectors[:n])
        if loaded.graph is None:
            when = "now" if build_now else "in the pool's next put"
            log.warning("smartcache: the HNSW graph of a %d-row pool of %s is built %s (%s)", n, self.path, when,
                        loaded.reason)
            self.graph_status[key] = f"rebuilt: {loaded.reason}" if build_now else f"built {when}: {loaded.reason}"
            return None
        part.build_graph(loaded.graph, loaded.labels)
        self._saved_edits[key] = part.edits
        log.info("smartcache: reusing the saved HNSW graph of a %d-row pool of %s", n, self.path)
        self.graph_status[key] = f"reused: {loaded.reason}"
        return loaded.graph

    def save_graphs(self) -> None:
        """Save every graph changed since it was last saved, and drop files no pool needs. Holds the
        write lock (seconds at a million rows): lookups go on, writes wait."""
        with self._lock:
            keep = set()
            for key, part in self._index.graphs():
                keep.add(graph.file_name(key))
                if self._saved_edits.get(key) == part.edits:
                    continue
                n = len(part.ids)
                try:
                    graph.save(self._graph_dir, key, part.graph, part.ids[:n], part.labels[:n], part.vectors[:n])
                except (OSError, RuntimeError) as exc:   # the next open rebuilds: slower, never wrong
                    log.error("smartcache: cannot save the HNSW graph beside %s: %s", self.path, exc)
                    continue
                self._saved_edits[key] = part.edits
            graph.forget(self._graph_dir, keep)

    def _save_every(self, graph_s: float, snapshot_s: float) -> None:
        last_graphs = time.monotonic()
        while not self._closing.wait(min(graph_s, snapshot_s)):
            if time.monotonic() - last_graphs >= graph_s:
                self.save_graphs()
                last_graphs = time.monotonic()
            self.save_snapshot()

    # -- writes: SQLite first, then the index ---------------------------------------

    def _write(self, entry: Entry) -> None:
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO entries (cache_id, tenant, session_id, state, expires_at, fields, turn, "
                "context, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.cache_id, entry.tenant, entry.session_id, entry.state.value,
                 None if entry.expires_at == float("inf") else entry.expires_at,
                 codec.dumps(codec.entry_fields(entry)), codec.vector_bytes(entry.turn_vector),
                 codec.context_bytes(entry.context_vector), entry.created_at))
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite write failed: {exc}") from exc

    @contextlib.contextmanager
    def _transaction(self):
        """One write: the file's write lock, the index brought up to the file first (so what the
        write reads is what every process sees), the ids it changed logged, one commit. Yields
        the list the write appends what it changed to: an id (its row changed), or (id, at) for a
        hit, which the other processes count without reading the row. The caller holds ``self._lock``."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite write failed: {exc}") from exc
        changed: list[str | tuple[str, float]] = []
        seq = None
        try:
            self._follow()
            yield changed
            now = time.time()
            for change in changed:
                cache_id, hit = change if isinstance(change, tuple) else (change, None)
                seq = self._db.execute("INSERT INTO changes (cache_id, at, hit) VALUES (?, ?, ?)",
                                       (cache_id, now, hit)).lastrowid
            if seq is not None and seq % _TRIM_EVERY == 0:
                self._trim(now)
            self._db.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                self._db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"SQLite write failed: {exc}") from exc
            raise
        if seq is not None:
            self._seen = seq        # every earlier write was followed under the same lock

    def _trim(self, now: float) -> None:
        """Drop the log's writes older than CHANGES_KEPT_S; a process behind them reloads all."""
        (last,) = self._db.execute("SELECT max(seq) FROM changes WHERE at < ?", (now - CHANGES_KEPT_S,)).fetchone()
        if last is not None:
            self._db.execute("DELETE FROM changes WHERE seq <= ?", (last,))
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('changes_trimmed', ?)", (str(last),))

    def put(self, entry: Entry) -> None:
        if entry.turn_vector.shape != (self.dim,):
            raise ValueError(f"vector of dim {entry.turn_vector.shape} in a store of dim {self.dim}")
        with self._lock:
            with self._transaction() as changed:
                self._write(entry)
                changed.append(entry.cache_id)
            self._index.put(entry)

    def get(self, cache_id: str) -> Entry | None:
        self._sync()
        return self._index.get(cache_id)

    def update(self, cache_id: str, **changes: object) -> Entry | None:
        with self._lock:
            with self._transaction() as changed:
                old = self._index.get(cache_id)
                if old is None:
                    return None
                self._write(old.with_changes(**changes))
                changed.append(cache_id)
            return self._index.update(cache_id, **changes)

    def transition(self, cache_id: str, expected: EntryState, **changes: object) -> Entry | None:
        # Under the file's write lock, after the other processes' writes: a compare-and-set
        # across processes, so a pending entry is promoted once and a kill is never undone.
        with self._lock:
            with self._transaction() as changed:
                entry = self._index.get(cache_id)
                if entry is None or entry.state is not expected:
                    return None
                self._write(entry.with_changes(**changes))
                changed.append(cache_id)
            return self._index.update(cache_id, **changes)

    def delete(self, cache_id: str) -> bool:
        with self._lock:
            with self._transaction() as changed:
                gone = self._db.execute("DELETE FROM entries WHERE cache_id = ?", (cache_id,)).rowcount
                if gone:
                    changed.append(cache_id)
            return self._index.delete(cache_id) or bool(gone)

    def add_hit(self, cache_id: str, at: float) -> None:
        self.add_hits({cache_id: (1, at)})

    def add_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        # Under the file's write lock, after the other processes' writes, so the count read from
        # the index and written to the row is never stale; only the JSON's two counters change.
        # One transaction for the batch; the log holds a line per hit, which the others count.
        with self._lock:
            counted: list[tuple[str, int, float]] = []
            with self._transaction() as changed:
                for cache_id, (count, at) in hits.items():
                    entry = self._index.get(cache_id)
                    if entry is None:
                        continue        # deleted meanwhile: nothing to count, nothing recreated
                    last = max(at, entry.last_hit_at)
                    self._db.execute("UPDATE entries SET fields = json_set(fields, '$.hit_count', ?, "
                                     "'$.last_hit_at', ?) WHERE cache_id = ?", (entry.hit_count + count, last, cache_id))
                    changed.extend([(cache_id, last)] * count)
                    counted.append((cache_id, count, last))
            self._index.add_hits({cache_id: (count, last) for cache_id, count, last in counted})

    # -- following the other processes' writes ------------------------------------------

    def _file_version(self) -> int:
        """``PRAGMA data_version`` on the poll connection: it moves whenever any other connection,
        this process's writer included, committed to the file."""
        try:
            with self._poll_lock:
                return self._poll.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite read failed: {exc}") from exc

    def _sync(self) -> None:
        """Bring the index up to the file before a read. ``PRAGMA data_version`` moves when another
        connection committed: without that, this is one cheap read of a counter."""
        version = self._file_version()
        if version == self._data_version:
            return
        with self._lock:
            if self._db.in_transaction:     # inside a write of this thread: followed at its start
                return
            try:
                # One snapshot for the log and the rows: a row read back then holds exactly the
                # hits the log has shown so far, never one the next follow would count again.
                self._db.execute("BEGIN")
                self._follow()
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("COMMIT")
            self._data_version = version

    def _follow(self) -> None:
        """Reload the rows the log names past ``_seen`` (``self._lock`` held)."""
        trimmed = self._query("SELECT value FROM meta WHERE key = 'changes_trimmed'", ())
        if trimmed and int(trimmed[0][0]) > self._seen:
            # Writes this process never followed are gone from the log: read the whole file again.
            # The newest snapshot when the log still holds every write since it (seconds at a million
            # rows, its graphs with it), else every row and the saved graphs that match them. A
            # pool whose saved graph does not match builds one in its next put, after that put's
            # commit: building it here (minutes at a million) could hold the file's write lock.
            started = time.perf_counter()
            snap = self._from_snapshot()
            if snap is not None:
                how = f"from the snapshot, {len(snap.ids):,} rows cold, {self._seen - snap.seq} log entries followed"
            else:
                how = f"every row ({self.snapshot_status.removeprefix('rows read: ')})"
                last = self._query("SELECT coalesce(max(seq), 0) FROM changes", ())[0][0]
                fresh = MemoryStore(self.dim, **self._index_options)
                unreadable = self._load(fresh)
                fresh.adopt_graphs(functools.partial(self._adopt_graph, build_now=False), build=False)
                self._index, self._seen, self.corrupt = fresh, max(int(trimmed[0][0]), int(last)), unreadable
                self._snapshot_seq = None       # the next save writes a snapshot of these rows
            self.snapshot_status = f"fell behind the change log, read again {how}"
            log.warning("smartcache: %s: this process fell behind the change log; read the index again in %.1f s (%s)",
                        self.path, time.perf_counter() - started, how)
            return
        self._seen, unreadable = self._follow_log(self._index, self._seen)
        self.corrupt += unreadable

    def _follow_log(self, index: MemoryStore, seen: int) -> tuple[int, int]:
        """Bring ``index`` from log position ``seen`` to the log's end: the new position and the
        unreadable rows skipped."""
        rows = self._query("SELECT seq, cache_id, hit FROM changes WHERE seq > ? ORDER BY seq", (seen,))
        unreadable = 0
        if rows:
            changed = list(dict.fromkeys(cache_id for _, cache_id, hit in rows if hit is None))
            unreadable = self._reload(changed, index)   # read back as the file has them: their hits included
            reread = set(changed)
            # Hits: the counts as the file has them in this snapshot, not the index's plus the
            # log's (a cold row read since holds some of those hits already).
            last_hit: dict[str, float] = {}
            for _, cache_id, hit in rows:
                if hit is not None and cache_id not in reread:
                    last_hit[cache_id] = max(hit, last_hit.get(cache_id, hit))
            self._refresh_hits(last_hit, index)
            seen = rows[-1][0]
        return seen, unreadable

    def _refresh_hits(self, last_hit: dict[str, float], index: MemoryStore) -> None:
        """The counts of these rows' hits as the file has them; the last hit as the log has it
        (exact: the JSON copy keeps 15 digits)."""
        ids = list(last_hit)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            index.set_hits({
                cache_id: (int(hits or 0), last_hit[cache_id]) for cache_id, hits in self._query(
                    f"SELECT cache_id, json_extract(fields, '$.hit_count') FROM entries WHERE cache_id IN ({marks}) "
                    "AND json_valid(fields)", tuple(chunk))})

    def _reload(self, ids: list[str], index: MemoryStore) -> int:
        """These rows as the file has them now: put again, or gone from ``index``; the number of
        unreadable ones skipped."""
        present: set[str] = set()
        unreadable = 0
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            for cache_id, raw, turn, context in self._query(
                    f"SELECT cache_id, fields, turn, context FROM entries WHERE cache_id IN ({marks})", tuple(chunk)):
                try:
                    entry = codec.entry_from(json.loads(raw), turn, context, self.dim)
                    index.put(entry)
                except (ValueError, KeyError, TypeError) as exc:
                    log.error("smartcache: skipping unreadable entry %s in %s: %s", cache_id, self.path, exc)
                    unreadable += 1
                    continue
                present.add(cache_id)
        for cache_id in ids:
            if cache_id not in present:
                index.delete(cache_id)
        return unreadable

    # -- markers: a file beside the store's, so every process sharing it sees them ----------

    def set_marker(self, name: str, value: str, ttl_s: float) -> None:
        self.set_markers({name: value}, ttl_s)

    def set_markers(self, values: Mapping[str, str], ttl_s: float) -> None:
        self._markers.set_many(values, self.clock(), ttl_s)

    def get_marker(self, name: str) -> str | None:
        return self._markers.get(name, self.clock())

    def take_marker(self, name: str) -> str | None:
        return self._markers.take(name, self.clock())

    def claim_marker(self, name: str, value: str, ttl_s: float) -> bool:
        claimed = self._markers.claim(name, value, self.clock(), ttl_s)
        # Claimed every tick by every process: the index follows the others' writes here too, so
        # an idle process is never far behind when a request comes.
        self._sync()
        return claimed

    # -- lifecycle queries: the file's indexes ------------------------------------------

    def pending_due(self, created_before: float, limit: int) -> list[str]:
        self._sync()
        with self._lock:
            rows = self._query("SELECT cache_id FROM entries WHERE state = 'pending' AND created_at <= ? "
                               "ORDER BY created_at LIMIT ?", (created_before, limit))
            # A row skipped as unreadable on open is not in the index: never promoted.
            return [cache_id for (cache_id,) in rows if cache_id in self._index]

    def purgeable(self, now: float, limit: int) -> list[Doomed]:
        self._sync()
        with self._lock:
            rows = self._query("SELECT cache_id, 0 FROM entries WHERE state = 'invalid' UNION ALL "
                               "SELECT cache_id, 1 FROM entries WHERE expires_at <= ? "
                               "AND state NOT IN ('invalid', 'frozen') LIMIT ?", (now, limit))
            # Unreadable rows are kept for inspection, never deleted: only what the index holds goes.
            return [Doomed(cache_id, bool(expired)) for cache_id, expired in rows if cache_id in self._index]

    def usage(self) -> list[Usage]:
        self._sync()
        return self._index.usage()      # in memory already, without reading a row

    def _query(self, sql: str, params: tuple) -> list[tuple]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite read failed: {exc}") from exc

    # -- reads: the index -------------------------------------------------------------

    def search(self, flt: SearchFilter, vector: np.ndarray, k: int) -> list[ScoredEntry]:
        self._sync()
        return self._index.search(flt, vector, k)

    def exact(self, flt: SearchFilter, request_key: str, limit: int = 4) -> list[Entry]:
        self._sync()
        return self._index.exact(flt, request_key, limit)

    def find(self, *, tenant: str | None = None, session_id: str | None = None,
             version_key: str | None = None, conversation_hash: str | None = None,
             prefix_hash: str | None = None, states: Iterable[EntryState] | None = None) -> list[Entry]:
        self._sync()
        return self._index.find(tenant=tenant, session_id=session_id, version_key=version_key,
                                conversation_hash=conversation_hash, prefix_hash=prefix_hash, states=states)

    def __len__(self) -> int:
        self._sync()
        return len(self._index)

    def __contains__(self, cache_id: object) -> bool:
        self._sync()
        return cache_id in self._index      # no row read, cold or warm

    def count_by_state(self) -> dict[str, int]:
        self._sync()
        return self._index.count_by_state()     # on every scrape: from the index, no row read

    def __iter__(self) -> Iterator[Entry]:
        self._sync()
        return iter(self._index)

    def generation(self, name: str) -> int:
        # Asked twice a request (``SmartCache.versions``) and bumped by an admin now and then:
        # remembered while no connection has written the file since (``data_version``, read first).
        version = self._file_version()
        known = self._generations
        if known[0] == version and name in known[1]:
            return known[1][name]
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (f"gen:{name}",)).fetchone()
        value = int(row[0]) if row else 0
        if known[0] != version:
            known = self._generations = (version, {})
        if len(known[1]) < 4096:
            known[1][name] = value
        return value

    def bump_generation(self, name: str) -> int:
        with self._lock:
            with self._transaction():       # read and written under the file's write lock: no bump lost
                row = self._db.execute("SELECT value FROM meta WHERE key = ?", (f"gen:{name}",)).fetchone()
                value = (int(row[0]) if row else 0) + 1
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (f"gen:{name}", str(value)))
            return value

    def save_state(self, name: str, value: str) -> None:
        with self._lock:
            try:
                self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (f"state:{name}", value))
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite write failed: {exc}") from exc

    def update_state(self, name: str, merge: Callable[[str | None], str]) -> str:
        """``merge`` of the stored value and its result written in one transaction under the
        file's write lock: two processes' merges follow each other, neither is lost."""
        with self._lock:
            try:
                with _immediate(self._db):
                    row = self._db.execute("SELECT value FROM meta WHERE key = ?", (f"state:{name}",)).fetchone()
                    value = merge(None if row is None else str(row[0]))
                    self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                                     (f"state:{name}", value))
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite write failed: {exc}") from exc
        return value

    def load_state(self, name: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (f"state:{name}",)).fetchone()
        return None if row is None else str(row[0])

    def integrity(self) -> str:
        """SQLite's own integrity check of the file ('ok' when sound)."""
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        self._closing.set()
        try:
            self.save_graphs()
            self.save_snapshot()
        finally:
            self._close_connections()

    def _close_connections(self) -> None:
        with self._lock:
            self._db.close()
            with self._read_lock:
                self._reader.close()
            with self._cold_lock:
                self._cold_reader.close()
            with self._poll_lock:
                self._poll.close()
            self._markers.close()


@contextlib.contextmanager
def _immediate(db: sqlite3.Connection) -> Iterator[None]:
    """One write under the file's write lock: committed, or rolled back and raised."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise


class _Markers:
    """Markers (a session's last answer, the lifecycle lease) in a SQLite file of their own,
    ``<db>.markers``: a served hit writes one, and in the store's file every such write moved
    ``data_version``, so every other process re-read the change log before its next lookup, and
    took the index's lock to do it. Short-lived by nature: losing the file loses a few seconds of
    regenerate detection and a lease, never an entry."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._writes = 0
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            # Never synced, so a power cut may leave it corrupt: it holds nothing worth keeping.
            # Only then: a file locked or unreachable may be another process's, alive and well.
            if not any(sign in str(exc) for sign in ("not a database", "malformed")):
                raise
            log.warning("smartcache: %s is unreadable (%s); starting it afresh", path, exc)
            for stale in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                stale.unlink(missing_ok=True)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # Nothing here must survive a power cut (a marker lives seconds): no fsync, ever.
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA busy_timeout=5000")
            db.execute("CREATE TABLE IF NOT EXISTS markers (name TEXT PRIMARY KEY, value TEXT NOT NULL, "
                       "expires_at REAL NOT NULL)")
        except BaseException:
            db.close()
            raise
        return db

    def set_many(self, values: Mapping[str, str], now: float, ttl_s: float) -> None:
        rows = [(name, value, now + ttl_s) for name, value in values.items()]
        with self._lock:
            try:
                with _immediate(self._db):          # one commit for all: a served hit leaves two
                    self._db.executemany("INSERT OR REPLACE INTO markers (name, value, expires_at) VALUES (?, ?, ?)",
                                         rows)
                    self._writes += len(rows)
                    if self._writes % 256 < len(rows):      # bounded: expired markers go now and then
                        self._db.execute("DELETE FROM markers WHERE expires_at <= ?", (now,))
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite write failed: {exc}") from exc

    def get(self, name: str, now: float) -> str | None:
        try:
            with self._lock:
                row = self._db.execute("SELECT value FROM markers WHERE name = ? AND expires_at > ?",
                                       (name, now)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite read failed: {exc}") from exc
        return None if row is None else str(row[0])

    def take(self, name: str, now: float) -> str | None:
        try:
            with self._lock:
                row = self._db.execute("DELETE FROM markers WHERE name = ? RETURNING value, expires_at",
                                       (name,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite write failed: {exc}") from exc
        return None if row is None or row[1] <= now else str(row[0])

    def claim(self, name: str, value: str, now: float, ttl_s: float) -> bool:
        try:
            with self._lock:
                return self._db.execute(
                    "INSERT INTO markers (name, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
                    "SET value = excluded.value, expires_at = excluded.expires_at "
                    "WHERE markers.value = excluded.value OR markers.expires_at <= ?",
                    (name, value, now + ttl_s, now)).rowcount == 1
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite write failed: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()
