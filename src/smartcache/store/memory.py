"""In-process store: an exact numpy scan per partition, HNSW above a size.

Entries live in a dict; vectors live in one contiguous float32 matrix per
partition (tenant, version key, pool), where the pool is a session id or the
tenant's global pool. A lookup touches at most two partitions, so scoping is
enforced by where a vector is stored, not by a check after scoring. Within a
partition, servability (state, expiry, feedback) is a vectorised mask over
parallel arrays, so a search allocates no Python object per entry.

Context vectors live beside the turn vectors, in half precision (a context
cosine moves by ~1e-3 at most), so a stored entry carries no array of its own;
see ``partition``.

A persistent store may restore its rows cold (``restore_cold``, from an index snapshot):
columns only, no entry object, until something asks for a row (``cold``).

A partition that grows past ``ann_above`` entries also gets an HNSW graph
(usearch, see ``graph``; half-precision vectors, deletes supported). A search
then asks the graph for a few times k candidates, masks them and rescores them exactly; when
the mask leaves fewer than k it widens the ask, and falls back to the exact scan
rather than return fewer results than the scan would.
"""

from __future__ import annotations

import heapq
import threading
import weakref
from typing import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from smartcache.defaults import section
from smartcache.store.base import Doomed, Entry, EntryState, Scope, ScoredEntry, SearchFilter, Store, Usage
from smartcache.store.cold import STATE_CODE, ColdRows, request_hash, stable_hash
from smartcache.store.graph import Graph
from smartcache.store.partition import Partition as _Partition
from smartcache.store.partition import domain_code, domain_names
from smartcache.store.snapshot import ROW_COLUMNS, Pool, Snapshot

_GLOBAL_POOL = "\x00global"
_SCANS_KEPT = 4     # a lookup's two pools, twice: its domain's rows, then every domain's
# Stored entries drop their own copies of the turn and context vectors (the partition's
# matrices hold them): at a million entries those copies are 4 GB. Entries handed out get
# them back. A stored entry's context_vector is None when it has none, else this marker.
_NO_VECTOR = np.zeros(0, np.float32)


def _partition_key(entry: Entry) -> tuple[str, str, str]:
    pool = _GLOBAL_POOL if entry.scope is Scope.GLOBAL else entry.session_id
    return (entry.tenant, entry.version_key, pool)


def _stored(entry: Entry) -> Entry:
    return entry.with_changes(turn_vector=_NO_VECTOR,
                              context_vector=None if entry.context_vector is None else _NO_VECTOR)


class MemoryStore(Store):
    """Thread-safe in-process store: exact cosine search, HNSW for partitions above ``ann_above``."""

    in_memory = True

    def __init__(self, dim: int, *, ann_above: int = section("store")["ann_above"]) -> None:
        self.dim = dim
        self.ann_above = ann_above
        self._next_label = 0
        self._entries: dict[str, Entry] = {}
        self._where: dict[str, tuple[tuple[str, str, str], int]] = {}
        self._partitions: dict[tuple[str, str, str], _Partition] = {}
        # Follow-up turns look up "the entry whose conversation my history is" on every
        # request: an index keeps that O(1) instead of a scan.
        self._by_conversation: dict[str, set[str]] = {}
        # A session's entries (docking reads them on every follow-up turn): O(session), not O(store).
        self._by_session: dict[str, set[str]] = {}
        # The exact path: a word-for-word repeat is one dict read. Keyed by the hash of (partition,
        # request key), an id or a set of ids (most keys have one entry): about 150 B an entry
        # instead of 400 for tuple keys and sets. A read checks each entry's own key and scope.
        self._by_request: dict[int, str | set[str]] = {}
        # The lifecycle's queries (what is due for promotion, what purge may delete) read these
        # instead of every entry: pending ids with their created_at, and invalid ids.
        self._pending: dict[str, float] = {}
        self._invalid: set[str] = set()
        self._lock = threading.RLock()
        # The last full scans' scores: a lookup scans its session's pool and the global pool,
        # then both again with the same vector (the request's domain, then every domain for the
        # near-exact path). (the partition, weakly: a dropped pool is not kept; its version; its
        # rows; the vector; the scores), the latest last.
        self._scans: list[tuple[weakref.ref, int, int, np.ndarray, np.ndarray]] = []
        # Rows restored from a snapshot that nothing has asked for yet: in ``_where`` and their
        # partition, in none of the dicts above (``restore_cold``).
        self._cold: ColdRows | None = None

    def free_now(self) -> bool:
        if self._lock.acquire(blocking=False):
            self._lock.release()
            return True
        return False       # a put may be building a pool's graph under the lock (seconds)

    def put(self, entry: Entry) -> None:
        if entry.turn_vector.shape != (self.dim,):
            raise ValueError(f"vector of dim {entry.turn_vector.shape} in a store of dim {self.dim}")
        with self._lock:
            if entry.cache_id in self._where:
                self._drop(entry.cache_id)
            key = _partition_key(entry)
            part = self._partitions.get(key)
            if part is None:
                part = self._partitions[key] = _Partition(self.dim)
            self._next_label += 1
            self._where[entry.cache_id] = (key, part.append(entry, self._next_label))
            self._entries[entry.cache_id] = _stored(entry)
            if part.graph is None and len(part.ids) > self.ann_above:
                part.build_graph()
            self._by_conversation.setdefault(entry.conversation_hash, set()).add(entry.cache_id)
            self._by_session.setdefault(entry.session_id, set()).add(entry.cache_id)
            self._index_request(key, entry)
            self._track(entry)

    def _index_request(self, key: tuple[str, str, str], entry: Entry) -> None:
        if not entry.request_key:
            return
        slot = hash((key, entry.request_key))
        held = self._by_request.get(slot)
        if held is None:
            self._by_request[slot] = entry.cache_id
        elif isinstance(held, str):
            if held != entry.cache_id:
                self._by_request[slot] = {held, entry.cache_id}
        else:
            held.add(entry.cache_id)

    def _unindex_request(self, key: tuple[str, str, str], entry: Entry) -> None:
        if not entry.request_key:
            return
        slot = hash((key, entry.request_key))
        held = self._by_request.get(slot)
        if held == entry.cache_id:
            del self._by_request[slot]
        elif isinstance(held, set):
            held.discard(entry.cache_id)
            if len(held) == 1:
                self._by_request[slot] = next(iter(held))

    def _track(self, entry: Entry) -> None:
        """Keep the state indexes in step with ``entry`` (called with the lock held)."""
        cache_id = entry.cache_id
        self._pending.pop(cache_id, None)
        self._invalid.discard(cache_id)
        if entry.state is EntryState.PENDING:
            self._pending[cache_id] = entry.created_at
        elif entry.state is EntryState.INVALID:
            self._invalid.add(cache_id)

    def _full(self, entry: Entry) -> Entry:
        key, row = self._where[entry.cache_id]
        return self._partitions[key].full(row, entry)

    def _entry(self, cache_id: str) -> Entry | None:
        """The stored entry of ``cache_id``, read from the store if its row is cold (lock held)."""
        entry = self._entries.get(cache_id)
        if entry is not None or self._cold is None or cache_id not in self._where:
            return entry
        return self._warm(cache_id)

    def _warm(self, cache_id: str) -> Entry | None:
        """A cold row as an entry, from then on indexed like one put: read from the store and
        kept. None when the store no longer has it (its removal is on its way, in the log)."""
        return self._warm_many([cache_id]).get(cache_id)

    def _warm_many(self, ids: list[str]) -> dict[str, Entry]:
        """``_warm`` of several rows, read in one go (a search's top k). Lock held."""
        cold = [i for i in ids if self._partitions[self._where[i][0]].cold[self._where[i][1]] >= 0]
        found = self._cold.fetch(cold) if cold else {}
        for cache_id, entry in found.items():
            key, row = self._where[cache_id]
            part = self._partitions[key]
            self._cold.kill(int(part.cold[row]))
            part.cold[row] = -1
            self._entries[cache_id] = entry
            self._by_conversation.setdefault(entry.conversation_hash, set()).add(cache_id)
            self._by_session.setdefault(entry.session_id, set()).add(cache_id)
            self._index_request(key, entry)
        return found

    def _cold_ids(self, found: Callable[[ColdRows], list[str]]) -> list[str]:
        """Cold rows a lookup names, made warm (lock held)."""
        if self._cold is None or not self._cold.count:
            return []
        return list(self._warm_many(found(self._cold)))

    def get(self, cache_id: str) -> Entry | None:
        with self._lock:
            entry = self._entry(cache_id)
            return self._full(entry) if entry is not None else None

    def update(self, cache_id: str, **changes: object) -> Entry | None:
        with self._lock:
            old = self._entry(cache_id)
            if old is None:
                return None
            new = self._full(old).with_changes(**changes)
            if (_partition_key(new) != _partition_key(old) or new.conversation_hash != old.conversation_hash
                    or new.request_key != old.request_key or new.session_id != old.session_id
                    or "turn_vector" in changes):
                self.put(new)   # moved partition, re-keyed or a new vector: re-insert it everywhere
            else:
                key, row = self._where[cache_id]
                self._partitions[key].set_row(row, new)
                self._entries[cache_id] = _stored(new)
                self._track(new)
            return new

    def add_hit(self, cache_id: str, at: float) -> None:
        self.add_hits({cache_id: (1, at)})

    def add_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        # The read and the write under one lock hold: concurrent hits all count, and a hit
        # racing a delete finds nothing to bring back. Hits change no partition row.
        with self._lock:
            for cache_id, (count, at) in hits.items():
                old = self._entry(cache_id)
                if old is not None:
                    self._entries[cache_id] = old.with_changes(hit_count=old.hit_count + count,
                                                               last_hit_at=max(at, old.last_hit_at))

    def set_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        """Hit counts and last hits as the file has them (what other processes counted)."""
        with self._lock:
            for cache_id, (count, at) in hits.items():
                old = self._entries.get(cache_id)
                if old is not None:
                    self._entries[cache_id] = old.with_changes(hit_count=count, last_hit_at=max(at, old.last_hit_at))
                elif cache_id in self._where:     # cold: its columns, for usage (a read gets the file's)
                    key, row = self._where[cache_id]
                    number = int(self._partitions[key].cold[row])
                    if number >= 0:
                        cold = self._cold
                        cold.hits[number], cold.last_hit[number] = count, max(at, cold.last_hit[number])

    def transition(self, cache_id: str, expected: EntryState, **changes: object) -> Entry | None:
        with self._lock:
            entry = self._entry(cache_id)
            if entry is None or entry.state is not expected:
                return None
            return self.update(cache_id, **changes)

    def delete(self, cache_id: str) -> bool:
        with self._lock:
            if cache_id not in self._where:
                return False
            self._drop(cache_id)
            return True

    def _drop(self, cache_id: str) -> None:
        key, row = self._where.pop(cache_id)
        part = self._partitions[key]
        self._pending.pop(cache_id, None)
        self._invalid.discard(cache_id)
        if part.cold[row] >= 0:          # in no dict: nothing to read, nothing to unindex
            self._cold.kill(int(part.cold[row]))
            self._remove_row(key, part, row)
            return
        entry = self._entries.pop(cache_id)
        same = self._by_conversation[entry.conversation_hash]
        same.discard(cache_id)
        if not same:
            del self._by_conversation[entry.conversation_hash]
        mine = self._by_session[entry.session_id]
        mine.discard(cache_id)
        if not mine:
            del self._by_session[entry.session_id]
        self._unindex_request(key, entry)
        self._remove_row(key, part, row)

    def _remove_row(self, key: tuple[str, str, str], part: _Partition, row: int) -> None:
        moved = part.remove(row)
        if moved is not None:
            self._where[moved] = (key, row)
        if not part.ids:
            del self._partitions[key]

    def restore(self, entries: Sequence[Entry], turns: np.ndarray) -> None:
        """Fill an empty store at once with stored entries (no turn vector of their own; a context
        vector, if any, they read themselves) and row i's turn vector: what a persistent store
        does on open, without put()'s per-entry copies. No graph is built; see ``adopt_graphs``.
        Every index put() keeps must be filled here too."""
        with self._lock:
            if self._entries:
                raise ValueError("restore needs an empty store")
            groups: dict[tuple[str, str, str], list[int]] = {}
            for i, entry in enumerate(entries):
                key = _partition_key(entry)
                groups.setdefault(key, []).append(i)
                self._entries[entry.cache_id] = entry
                self._by_conversation.setdefault(entry.conversation_hash, set()).add(entry.cache_id)
                self._by_session.setdefault(entry.session_id, set()).add(entry.cache_id)
                self._index_request(key, entry)
                self._track(entry)
            for key, rows in groups.items():
                n, members = len(rows), [entries[i] for i in rows]
                # A pool that will get a graph keeps half precision (as build_graph would); copied in
                # chunks so a million rows never need a second float32 matrix.
                part_turns = np.empty((n, self.dim), np.float16 if n > self.ann_above else np.float32)
                for start in range(0, n, 65536):
                    part_turns[start:start + 65536] = turns[rows[start:start + 65536]]
                labels = np.arange(self._next_label + 1, self._next_label + 1 + n, dtype=np.int64)
                self._next_label += n
                self._partitions[key] = _Partition.of_rows(self.dim, [e.cache_id for e in members], labels,
                                                           part_turns, members)
                self._where.update(zip((e.cache_id for e in members), zip([key] * n, range(n))))

    def snapshot(self, seq: int, file_id: str, unindexed: int) -> Snapshot:
        """The index as columns (``snapshot``), every pool's rows in order. Call with every writer
        held off (the persistent store's write lock): the matrices and graphs it hands over are
        the partitions' own, written out after this returns."""
        with self._lock:    # against rows made warm meanwhile: their columns move from cold to dicts
            ids: list[str] = []
            columns: dict[str, list] = {c: [] for c in ROW_COLUMNS}
            pools, cold = [], self._cold
            for key, part in self._partitions.items():
                n = len(part.ids)
                pools.append(Pool(key, len(ids), n, part.vectors[:n], part.graph))
                ids += part.ids[:n]
                for column, source in (("labels", part.labels), ("servable", part.servable), ("frozen", part.frozen),
                                       ("expires", part.expires), ("feedback", part.feedback),
                                       ("domain", part.domains)):
                    columns[column].append(source[:n].copy())
                rows = {c: np.zeros(n, ROW_COLUMNS[c]) for c in ("states", "created", "last_hit", "hits",
                                                                 "conversation", "session", "request")}
                numbers = part.cold[:n]
                is_cold = numbers >= 0
                if is_cold.any():
                    at = numbers[is_cold]
                    for column in rows:
                        rows[column][is_cold] = getattr(cold, column)[at]
                for row in np.flatnonzero(~is_cold).tolist():
                    e = self._entries[part.ids[row]]
                    rows["states"][row] = STATE_CODE[e.state]
                    rows["created"][row], rows["last_hit"][row], rows["hits"][row] = \
                        e.created_at, e.last_hit_at, e.hit_count
                    rows["conversation"][row] = stable_hash(e.conversation_hash)
                    rows["session"][row] = stable_hash(e.session_id)
                    rows["request"][row] = request_hash(key, e.request_key)
                for column, values in rows.items():
                    columns[column].append(values)
        flat = {c: (np.concatenate(v) if v else np.zeros(0, ROW_COLUMNS[c])) for c, v in columns.items()}
        return Snapshot(seq, file_id, self.dim, ids, domain_names(), flat, pools, unindexed)

    @property
    def warm_rows(self) -> int:
        """Rows held as entries (put, or cold rows read since the restore)."""
        return len(self._entries)

    def cooled(self, snap: Snapshot, fetch: Callable[[Sequence[str]], dict[str, Entry]]) -> "MemoryStore":
        """A store of this one's rows, all cold again, from ``snap`` (just taken of this one, with
        every writer still held off): memory back to the columns' cost. It takes over this
        store's lock, arrays (with their spare room) and graphs; this store is left empty, so a
        reader that still holds it finds nothing (a miss), never rows the new one has moved."""
        out = MemoryStore(self.dim, ann_above=self.ann_above)
        out._lock = self._lock
        with self._lock:
            out.restore_cold(snap, fetch)
            for key, part in out._partitions.items():
                part.take_room(self._partitions[key])
            out._next_label = max(out._next_label, self._next_label)    # a removed row's label is never reused
            self.__init__(self.dim, ann_above=self.ann_above)
            self._lock = out._lock
        return out

    def restore_cold(self, snap: Snapshot, fetch: Callable[[Sequence[str]], dict[str, Entry]]) -> None:
        """Fill an empty store with a snapshot's rows, cold: columns only, each row read with
        ``fetch`` when first asked for. Pools keep the snapshot's graphs."""
        with self._lock:
            if self._where:
                raise ValueError("restore_cold needs an empty store")
            c = snap.columns
            codes = np.array([domain_code(name) for name in snap.domains] or [0], np.int32)[c["domain"]]
            self._cold = ColdRows(snap.ids, c["states"], c["created"], c["last_hit"], c["hits"], c["conversation"],
                                  c["session"], c["request"], fetch)
            for pool in snap.pools:
                lo, hi = pool.start, pool.start + pool.count
                ids = snap.ids[lo:hi]
                columns = {name: c[name][lo:hi] for name in ("labels", "servable", "frozen", "expires", "feedback")}
                columns["vectors"] = pool.vectors
                part = _Partition.of_columns(self.dim, ids, columns, codes[lo:hi],
                                             np.arange(lo, hi, dtype=np.int32))
                part.graph = pool.graph
                self._partitions[pool.key] = part
                self._where.update(zip(ids, zip([pool.key] * pool.count, range(pool.count))))
            for number in np.flatnonzero(c["states"] == STATE_CODE[EntryState.PENDING]).tolist():
                self._pending[snap.ids[number]] = float(c["created"][number])
            self._invalid.update(snap.ids[n] for n in np.flatnonzero(c["states"] == STATE_CODE[EntryState.INVALID]))
            if len(c["labels"]):
                self._next_label = max(self._next_label, int(c["labels"].max()))

    def adopt_graphs(self, load: Callable[[tuple[str, str, str], _Partition], Graph | None], *,
                     build: bool = True) -> None:
        """Give every partition above ``ann_above`` a graph: ``load`` may return a saved one (having
        set the rows' labels with ``build_graph``), else one is built here; ``build=False``: not
        here, but in the partition's next put."""
        with self._lock:
            for key, part in self._partitions.items():
                if part.graph is None and len(part.ids) > self.ann_above and load(key, part) is None and build:
                    part.build_graph()
                if part.graph is not None and len(part.ids):
                    self._next_label = max(self._next_label, int(part.labels[:len(part.ids)].max()))

    def graphs(self) -> Iterator[tuple[tuple[str, str, str], _Partition]]:
        """The partitions that have a graph (to save them); call with the store's lock held."""
        return ((key, part) for key, part in self._partitions.items() if part.graph is not None)

    def search(self, flt: SearchFilter, vector: np.ndarray, k: int) -> list[ScoredEntry]:
        keys = []
        if flt.session_id is not None:
            keys.append((flt.tenant, flt.version_key, flt.session_id))
        if flt.include_global:
            keys.append((flt.tenant, flt.version_key, _GLOBAL_POOL))
        results: list[ScoredEntry] = []
        with self._lock:
            for key in keys:
                part = self._partitions.get(key)
                if part is None:
                    continue
                n = len(part.ids)
                mask, servable = part.servable_rows(flt.feedback_floor, flt.now, flt.domain)
                rows = self._graph_rows(part, vector, k, mask, servable) if part.graph is not None else None
                if rows is None:
                    rows = np.flatnonzero(mask)
                if rows.size == 0:
                    continue
                # Scoring every row and picking is cheaper than gathering the rows' vectors first.
                scores = self._scan(part, vector)[rows] if rows.size > n // 4 else part.vectors[rows] @ vector
                top = rows.size if rows.size <= k else k
                best = np.argpartition(-scores, top - 1)[:top] if top < rows.size else np.arange(rows.size)
                if self._cold is not None and self._cold.count:     # the cold ones read in one go
                    self._warm_many([part.ids[int(rows[i])] for i in best if part.cold[int(rows[i])] >= 0])
                for i in best:
                    row = int(rows[i])
                    stored = self._entry(part.ids[row])
                    if stored is not None:
                        results.append(ScoredEntry(part.full(row, stored), float(scores[i])))
        results.sort(key=lambda r: -r.similarity)
        return results[:k]

    def _scan(self, part: _Partition, vector: np.ndarray) -> np.ndarray:
        """Every row's score against ``vector``; the same array again while neither the rows
        nor the vector changed (the vector compared by identity; the partition bumps its
        ``version`` whenever a row's vector changes in place or its matrix is replaced). Call
        with the lock held."""
        n = len(part.ids)
        for ref, version, rows, seen, scores in self._scans:
            if ref() is part and version == part.version and rows == n and seen is vector:
                return scores
        scores = part.vectors[:n] @ vector
        self._scans = [*self._scans[-(_SCANS_KEPT - 1):], (weakref.ref(part), part.version, n, vector, scores)]
        return scores

    @staticmethod
    def _graph_rows(part: _Partition, vector: np.ndarray, k: int, mask: np.ndarray,
                    servable: int) -> np.ndarray | None:
        """Rows the graph proposes that pass the mask (``servable`` of them), at least k of them;
        None: scan instead."""
        n = len(part.ids)
        if servable <= 4 * k:
            return None            # a handful of rows: the scan is exact and as fast
        label_row = part.label_row
        count = max(32 * k, 256)
        while count < n:
            labels = part.graph.candidates(vector, count)
            rows = np.fromiter((label_row[l] for l in labels if l in label_row), dtype=np.int64)
            rows = rows[mask[rows]] if rows.size else rows
            if rows.size >= k:
                return rows
            count *= 4
        return None

    def exact(self, flt: SearchFilter, request_key: str, limit: int = 4) -> list[Entry]:
        pools = ([flt.session_id] if flt.session_id is not None else []) + ([_GLOBAL_POOL] if flt.include_global else [])
        with self._lock:
            found = []
            for pool in pools:
                key = (flt.tenant, flt.version_key, pool)
                self._cold_ids(lambda cold: cold.by_request(key, request_key))
                held = self._by_request.get(hash((key, request_key)), ())
                found += [self._entries[i] for i in ((held,) if isinstance(held, str) else held)]
            found = [e for e in found if e.request_key == request_key and flt.admits(e)]
            found.sort(key=lambda e: -e.created_at)
            return [self._full(e) for e in found[:limit]]

    def find(self, *, tenant: str | None = None, session_id: str | None = None,
             version_key: str | None = None, conversation_hash: str | None = None,
             prefix_hash: str | None = None, states: Iterable[EntryState] | None = None) -> list[Entry]:
        wanted = set(states) if states is not None else None
        with self._lock:
            if conversation_hash is not None:
                self._cold_ids(lambda cold: cold.by_conversation(conversation_hash))
            elif session_id is not None:
                self._cold_ids(lambda cold: cold.by_session(session_id))
            pool = (
                [self._entries[i] for i in self._by_conversation.get(conversation_hash, ())]
                if conversation_hash is not None else
                [self._entries[i] for i in self._by_session.get(session_id, ())]
                if session_id is not None else
                [*self._entries.values(), *self._cold_entries(tenant, version_key, wanted)]
            )
            return [
                self._full(e) for e in pool
                if (tenant is None or e.tenant == tenant)
                and (session_id is None or e.session_id == session_id)
                and (version_key is None or e.version_key == version_key)
                and (conversation_hash is None or e.conversation_hash == conversation_hash)
                and (prefix_hash is None or e.prefix_hash == prefix_hash)
                and (wanted is None or e.state in wanted)
            ]

    def pending_due(self, created_before: float, limit: int) -> list[str]:
        with self._lock:   # O(pending), not O(entries): the index holds only what awaits its window
            due = heapq.nsmallest(limit, ((created, cache_id) for cache_id, created in self._pending.items()
                                          if created <= created_before))
        return [cache_id for _, cache_id in due]

    def purgeable(self, now: float, limit: int) -> list[Doomed]:
        with self._lock:
            out = [Doomed(cache_id, False) for cache_id in list(self._invalid)[:limit]]
            for part in self._partitions.values():
                if len(out) >= limit:
                    break
                n = len(part.ids)
                # Expiry is a vectorised test over the partition's arrays: no Python object per entry.
                for row in np.flatnonzero(~part.frozen[:n] & (part.expires[:n] <= now)):
                    cache_id = part.ids[int(row)]
                    if cache_id not in self._invalid:
                        out.append(Doomed(cache_id, True))
            return out[:limit]

    def usage(self) -> list[Usage]:
        with self._lock:   # the stored entries, without copying each one's vector back in
            out = [Usage(e.cache_id, max(e.created_at, e.last_hit_at), e.hit_count)
                   for e in self._entries.values() if e.state is not EntryState.FROZEN]
            cold = self._cold
            if cold is not None and cold.count:     # from the columns: no row read
                rows = cold.living()
                rows = rows[cold.states[rows] != STATE_CODE[EntryState.FROZEN]]
                used = np.maximum(cold.created[rows], cold.last_hit[rows]).tolist()
                out += [Usage(cold.ids[r], at, hits) for r, at, hits in zip(rows.tolist(), used,
                                                                            cold.hits[rows].tolist())]
            return out

    def _cold_entries(self, tenant: str | None = None, version_key: str | None = None,
                      states: set[EntryState] | None = None) -> list[Entry]:
        """The cold rows of the pools of ``tenant`` and ``version_key`` in ``states``, read from the
        store in bulk and left cold: a sweep over every entry (an admin's list, a tenant's version
        bump) neither keeps a million entries nor reads them one by one. Lock held."""
        cold = self._cold
        if cold is None or not cold.count:
            return []
        codes = None if states is None else np.array(sorted(STATE_CODE[s] for s in states), np.uint8)
        ids: list[str] = []
        for key, part in self._partitions.items():
            if tenant is not None and key[0] != tenant or version_key is not None and key[1] != version_key:
                continue
            numbers = part.cold[:len(part.ids)]
            numbers = numbers[numbers >= 0]
            if codes is not None:
                numbers = numbers[np.isin(cold.states[numbers], codes)]
            ids += [cold.ids[n] for n in numbers.tolist()]
        found = cold.fetch(ids) if ids else {}
        return [found[i] for i in ids if i in found]

    def count_by_state(self) -> dict[str, int]:
        with self._lock:   # cold rows by their state column: no row read
            counts = {state.value: 0 for state in EntryState}
            for entry in self._entries.values():
                counts[entry.state.value] += 1
            if self._cold is not None and self._cold.count:
                tally = np.bincount(self._cold.states[self._cold.alive], minlength=len(STATE_CODE))
                for state, code in STATE_CODE.items():
                    counts[state.value] += int(tally[code])
            return counts

    def __contains__(self, cache_id: object) -> bool:
        with self._lock:
            return cache_id in self._where

    def __len__(self) -> int:
        with self._lock:
            return len(self._where)

    def __iter__(self) -> Iterator[Entry]:
        with self._lock:
            return iter([self._full(e) for e in (*self._entries.values(), *self._cold_entries())])
