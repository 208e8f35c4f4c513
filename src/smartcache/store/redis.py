"""Redis store: one cache shared by every gateway replica, searched by RediSearch.

Each entry is a HASH (``<prefix>e:<cache_id>``) holding its scope, state and
scores as fields, its vectors as raw float32 bytes and the rest as JSON. A
RediSearch index over those hashes (HNSW, cosine) answers lookups: the scope,
version key, state, expiry, feedback floor and domain are TAG / NUMERIC
pre-filters inside the KNN query itself, so Redis never returns an entry of
another tenant or session. A finite TTL is the key's own expiry. Hit counts are
HINCRBY inside a script that first checks the key exists; an update is a
WATCH/MULTI transaction, so replicas never interleave half-writes. A state
change written by one replica is what the next query of any replica sees.

Pending entries are also members of a sorted set (``<prefix>pending``, scored by
created_at), added and removed in the same MULTI as the hash, so any replica finds
what is due for promotion, whichever replica wrote it. A member whose hash expired
(key expiry does not touch the set) is dropped when it is next read.

Needs Redis with the RediSearch module (Redis Stack); plain Redis is refused at
start-up with a message saying so. The server is one URL, or the primary a set of
Sentinels names (``redis_connect.py``: how, and the timeouts and single retry that let a
dead server fail a call in milliseconds). The index is made here when missing, and made
again when a query finds it gone (a server restarted without persistence, a FLUSHALL),
so such a fault costs the cache its entries, not every lookup until a gateway restart;
FT.CREATE itself replicates, so a promoted replica has it already.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Callable, Iterable, Iterator, Mapping

import numpy as np

from smartcache.defaults import section
from smartcache.errors import StoreError
from smartcache.store import codec
from smartcache.store.base import Doomed, Entry, EntryState, ScoredEntry, SearchFilter, Store, Usage
from smartcache.store.redis_connect import RedisTarget, connect
from smartcache.store.redis_scripts import ADD_HIT, CLAIM, PENDING_DUE

log = logging.getLogger("smartcache.store")

_SERVABLE = "|".join(s.value for s in EntryState if s.servable)
_NEVER = 1e300       # expires_at of an entry without a TTL, as a NUMERIC


def _tag(value: str) -> str:
    """Tenant, session and domain go into TAG fields as a hex digest: any string a client
    sends (commas, braces, spaces) then matches exactly, with nothing to escape."""
    return hashlib.sha1(value.encode("utf-8")).hexdigest()


class RedisStore(Store):
    def __init__(self, url: str, dim: int, *, prefix: str = section("store")["prefix"],
                 sentinels: tuple[tuple[str, int], ...] = (), service: str = "", client=None) -> None:
        import redis

        self.dim = dim
        self.corrupt = 0              # entries skipped because their hash could not be decoded
        self.prefix = prefix
        self.index = f"{prefix}idx"
        self._redis_errors = (redis.RedisError, OSError)
        target = RedisTarget(url, tuple(sentinels), service)
        url = target.describe()
        try:
            self.r = client or connect(target)
            modules = {m.get(b"name", m.get("name", b"")) for m in self.r.module_list()}
            names = {m.decode() if isinstance(m, bytes) else m for m in modules}
        except self._redis_errors as exc:
            raise StoreError(f"cannot reach Redis at {url}: {exc}") from exc
        if "search" not in names:
            raise StoreError(f"Redis at {url} has no RediSearch module (found {sorted(names) or 'none'}): "
                             "the shared store needs Redis Stack (redis-stack-server, or redis-server "
                             "--loadmodule …/redisearch.so); Debian's redis-server has no vector search")
        self._ensure_index()
        self.pending_key = f"{prefix}pending"
        self._add_hit = self.r.register_script(ADD_HIT)
        self._pending_due = self.r.register_script(PENDING_DUE)
        self._claim = self.r.register_script(CLAIM)
        self._backfill_pending()

    def _backfill_pending(self) -> None:
        """Pending entries written before the pending set existed join it (idempotent, and only
        the pending ones are read: a few, whatever the size of the cache)."""
        try:
            reply = self._ft("FT.SEARCH", self.index, "@state:{pending}", "RETURN", "1", "data",
                                           "LIMIT", "0", "10000", "DIALECT", "2")
            due = {self._id(doc.pop("id")): json.loads(doc["data"])["created_at"] for doc in _docs_with_ids(reply)}
            if due:
                self.r.zadd(self.pending_key, due, nx=True)
        except self._redis_errors as exc:
            raise StoreError(f"cannot index the pending entries: {exc}") from exc

    def _ft(self, *args):
        """An FT.* command; when the index is gone (``no such index``), it is made again and the
        command sent once more. Other errors propagate as they are."""
        import redis

        try:
            return self.r.execute_command(*args)
        except redis.ResponseError as exc:
            if not _index_missing(exc):
                raise
        self._ensure_index()
        return self.r.execute_command(*args)

    def _key(self, cache_id: str) -> str:
        return f"{self.prefix}e:{cache_id}"

    def _ensure_index(self) -> None:
        try:
            info = self.r.execute_command("FT._LIST")
            if self.index.encode() in info or self.index in info:
                self._ensure_request_field()
                return
            self.r.execute_command(
                "FT.CREATE", self.index, "ON", "HASH", "PREFIX", "1", f"{self.prefix}e:", "SCHEMA",
                "tenant", "TAG", "session", "TAG", "scope", "TAG", "vkey", "TAG", "state", "TAG", "domain", "TAG",
                "conv", "TAG", "prefix_hash", "TAG", "rkey", "TAG", "expires", "NUMERIC", "feedback", "NUMERIC",
                "vec", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", str(self.dim), "DISTANCE_METRIC", "COSINE")
        except self._redis_errors as exc:
            if "Index already exists" not in str(exc):
                raise StoreError(f"cannot create the RediSearch index: {exc}") from exc

    def _ensure_request_field(self) -> None:
        """An index made before the exact path lacks its request key: add it (FT.ALTER indexes
        what is written from now on; older entries are found by the semantic path, as before)."""
        info = self.r.execute_command("FT.INFO", self.index)
        if b"rkey" in _flat(info) or "rkey" in _flat(info):
            return
        try:
            self.r.execute_command("FT.ALTER", self.index, "SCHEMA", "ADD", "rkey", "TAG")
        except self._redis_errors as exc:
            if "Duplicate" not in str(exc):
                raise

    # -- records --------------------------------------------------------------------

    def _mapping(self, entry: Entry) -> dict:
        fields = codec.entry_fields(entry)
        mapping = {
            "tenant": _tag(entry.tenant), "session": _tag(entry.session_id), "scope": entry.scope.value,
            "vkey": _hex(entry.version_key), "state": entry.state.value, "domain": _tag(entry.domain),
            "conv": _hex(entry.conversation_hash), "prefix_hash": _hex(entry.prefix_hash),
            "rkey": _hex(entry.request_key or "-"),
            "expires": _NEVER if entry.expires_at == float("inf") else entry.expires_at,
            "feedback": entry.feedback_score, "hits": entry.hit_count, "last_hit": entry.last_hit_at,
            "created": entry.created_at,     # for eviction, which reads no JSON
            "vec": codec.vector_bytes(entry.turn_vector), "data": codec.dumps(fields),
        }
        if entry.context_vector is not None:
            mapping["ctx"] = codec.vector_bytes(entry.context_vector)
        return mapping

    def _decode(self, raw: dict) -> Entry:
        raw = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        try:
            fields = json.loads(raw["data"])
            # The fields replicas change in place are authoritative in the hash, not in the JSON.
            fields.update(state=_s(raw["state"]), feedback_score=float(raw["feedback"]), hit_count=int(raw["hits"]),
                          last_hit_at=float(raw["last_hit"]))
            return codec.entry_from(fields, raw["vec"], raw.get("ctx"), self.dim)
        except (KeyError, ValueError, TypeError) as exc:      # a hash left malformed by another writer
            raise StoreError(f"an entry in Redis cannot be decoded: {exc!r}") from exc

    def _readable(self, docs: Iterable[dict]) -> Iterator[Entry]:
        """The entries of ``docs`` that decode. One that does not is skipped and counted, as an
        unreadable SQLite row is: one bad hash must not fail every search that meets it."""
        for doc in docs:
            try:
                yield self._decode(doc)
            except StoreError as exc:
                self.corrupt += 1
                if self.corrupt == 1 or self.corrupt % 1000 == 0:     # not a line a lookup that meets it
                    log.error("smartcache: skipping an unreadable entry in Redis (%d so far): %s", self.corrupt, exc)

    def _write(self, pipe, entry: Entry) -> None:
        key = self._key(entry.cache_id)
        pipe.delete(key)
        pipe.hset(key, mapping=self._mapping(entry))
        if entry.expires_at != float("inf") and entry.state is not EntryState.FROZEN:
            pipe.expireat(key, int(entry.expires_at) + 1)
        if entry.state is EntryState.PENDING:
            pipe.zadd(self.pending_key, {entry.cache_id: entry.created_at})
        else:
            pipe.zrem(self.pending_key, entry.cache_id)

    # -- the contract ---------------------------------------------------------------

    def put(self, entry: Entry) -> None:
        if entry.turn_vector.shape != (self.dim,):
            raise ValueError(f"vector of dim {entry.turn_vector.shape} in a store of dim {self.dim}")
        try:
            pipe = self.r.pipeline(transaction=True)
            self._write(pipe, entry)
            pipe.execute()
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc

    def get(self, cache_id: str) -> Entry | None:
        try:
            raw = self.r.hgetall(self._key(cache_id))
        except self._redis_errors as exc:
            raise StoreError(f"Redis read failed: {exc}") from exc
        return self._decode(raw) if raw else None

    def update(self, cache_id: str, **changes: object) -> Entry | None:
        return self._update(cache_id, None, changes)

    def transition(self, cache_id: str, expected: EntryState, **changes: object) -> Entry | None:
        return self._update(cache_id, expected, changes)

    def _update(self, cache_id: str, expected: EntryState | None, changes: dict) -> Entry | None:
        import redis

        key = self._key(cache_id)
        try:
            with self.r.pipeline(transaction=True) as pipe:
                for _ in range(20):
                    try:
                        pipe.watch(key)
                        raw = pipe.hgetall(key)
                        if not raw:
                            pipe.reset()
                            return None
                        old = self._decode(raw)
                        if expected is not None and old.state is not expected:
                            pipe.reset()
                            return None
                        new = old.with_changes(**changes)
                        pipe.multi()
                        self._write(pipe, new)
                        pipe.execute()
                        return new
                    except redis.WatchError:
                        continue       # another replica changed it: read again
        except self._redis_errors as exc:
            raise StoreError(f"Redis update failed: {exc}") from exc
        raise StoreError(f"Redis update of {cache_id} kept conflicting")

    def add_hit(self, cache_id: str, at: float) -> None:
        self.add_hits({cache_id: (1, at)})

    def add_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        # One round trip (MULTI/EXEC): a batch refused (the connection, EXECABORT) is written not
        # at all and retried whole. Inside EXEC a command fails alone (an entry whose hash holds
        # no integer count) and the others are written: raising then would have the batch
        # retried, and counted twice, every flush. Such an entry's hits are dropped instead.
        try:
            pipe = self.r.pipeline(transaction=True)
            for cache_id, (count, at) in hits.items():
                self._add_hit(keys=[self._key(cache_id)], args=[at, count], client=pipe)
            results = pipe.execute(raise_on_error=False)
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc
        for cache_id, result in zip(hits, results):
            if isinstance(result, Exception):
                log.warning("smartcache: the hit count of entry %s was not written: %s", cache_id, result)

    def delete(self, cache_id: str) -> bool:
        try:
            pipe = self.r.pipeline(transaction=True)
            pipe.delete(self._key(cache_id))
            pipe.zrem(self.pending_key, cache_id)
            return bool(pipe.execute()[0])
        except self._redis_errors as exc:
            raise StoreError(f"Redis delete failed: {exc}") from exc

    # -- lifecycle queries: the pending set and the search index ------------------------

    def pending_due(self, created_before: float, limit: int) -> list[str]:
        try:
            ids = self._pending_due(keys=[self.pending_key], args=[created_before, int(limit), f"{self.prefix}e:"])
        except self._redis_errors as exc:
            raise StoreError(f"Redis read failed: {exc}") from exc
        return [_s(i) for i in ids]

    def purgeable(self, now: float, limit: int) -> list[Doomed]:
        # Expired hashes mostly vanish by themselves (EXPIREAT); the query finds the invalid ones
        # and any in the second before the key's own expiry. State and expiry are indexed fields.
        out: list[Doomed] = []
        for query, expired in (("@state:{invalid}", False),
                               (f"@expires:[-inf {now!r}] -@state:{{invalid|frozen}}", True)):
            if len(out) >= limit:
                break
            reply = self._search(query, "NOCONTENT", "LIMIT", "0", str(int(limit) - len(out)))
            out += [Doomed(self._id(key), expired) for key in reply[1:]]
        return out

    def usage(self) -> list[Usage]:
        # Three numbers an entry, not its vectors or answer.
        rows, offset = [], 0
        while True:
            reply = self._search("-@state:{frozen}", "RETURN", "3", "hits", "last_hit", "created",
                                 "LIMIT", str(offset), "1000")
            rows += [(self._id(doc.pop("id")), doc) for doc in _docs_with_ids(reply)]
            if len(reply) < 1 + 2 * 1000:
                break
            offset += 1000
        old = [cache_id for cache_id, doc in rows if "created" not in doc]
        if old:   # hashes written before "created" existed carry it only in their JSON
            try:
                pipe = self.r.pipeline(transaction=False)
                for cache_id in old:
                    pipe.hget(self._key(cache_id), "data")
                created = {c: json.loads(d)["created_at"] for c, d in zip(old, pipe.execute()) if d}
            except self._redis_errors as exc:
                raise StoreError(f"Redis read failed: {exc}") from exc
            rows = [(c, doc if "created" in doc else {**doc, "created": created[c]})
                    for c, doc in rows if "created" in doc or c in created]
        return [Usage(cache_id, max(float(doc["created"]), float(doc.get("last_hit", 0.0))), int(doc.get("hits", 0)))
                for cache_id, doc in rows]

    def _search(self, query: str, *args: str) -> list:
        try:
            return self._ft("FT.SEARCH", self.index, query, *args, "DIALECT", "2")
        except self._redis_errors as exc:
            raise StoreError(f"Redis search failed: {exc}") from exc

    def _id(self, key) -> str:
        return _s(key)[len(self.prefix) + 2:]

    def _filter(self, flt: SearchFilter) -> str:
        pools = []
        if flt.session_id is not None:
            pools.append(f"(@scope:{{session}} @session:{{{_tag(flt.session_id)}}})")
        if flt.include_global:
            pools.append("@scope:{global}")
        if not pools:
            return ""
        parts = [f"@tenant:{{{_tag(flt.tenant)}}}", f"@vkey:{{{_hex(flt.version_key)}}}",
                 f"@state:{{{_SERVABLE}}}", f"@feedback:[{flt.feedback_floor} +inf]",
                 f"({' | '.join(pools)})", f"(@expires:[({flt.now} +inf] | @state:{{frozen}})"]
        if flt.domain is not None and flt.domain != "general":
            parts.append(f"@domain:{{{_tag(flt.domain)}|{_tag('general')}}}")
        return " ".join(parts)

    def search(self, flt: SearchFilter, vector: np.ndarray, k: int) -> list[ScoredEntry]:
        query = self._filter(flt)
        if not query:
            return []
        try:
            reply = self._ft(
                "FT.SEARCH", self.index, f"({query})=>[KNN {int(k)} @vec $B AS dist]", "PARAMS", "2", "B",
                codec.vector_bytes(vector), "SORTBY", "dist", "LIMIT", "0", str(int(k)), "DIALECT", "2")
        except self._redis_errors as exc:
            raise StoreError(f"Redis search failed: {exc}") from exc
        out = []
        for doc in _docs(reply):
            dist = float(doc.pop("dist"))
            out += [ScoredEntry(entry, 1.0 - dist) for entry in self._readable([doc])]
        return out

    def exact(self, flt: SearchFilter, request_key: str, limit: int = 4) -> list[Entry]:
        query = self._filter(flt)
        if not query:
            return []
        reply = self._search(f"{query} @rkey:{{{_hex(request_key)}}}", "LIMIT", "0", "16")
        found = sorted(self._readable(_docs(reply)), key=lambda e: -e.created_at)
        return found[:limit]

    def find(self, *, tenant: str | None = None, session_id: str | None = None,
             version_key: str | None = None, conversation_hash: str | None = None,
             prefix_hash: str | None = None, states: Iterable[EntryState] | None = None) -> list[Entry]:
        parts = []
        for name, value, form in (("tenant", tenant, _tag), ("session", session_id, _tag),
                                  ("vkey", version_key, _hex), ("conv", conversation_hash, _hex),
                                  ("prefix_hash", prefix_hash, _hex)):
            if value is not None:
                parts.append(f"@{name}:{{{form(value)}}}")
        if states is not None:
            wanted = [s.value for s in states]
            if not wanted:
                return []
            parts.append(f"@state:{{{'|'.join(wanted)}}}")
        out, offset = [], 0
        try:
            while True:
                reply = self._ft("FT.SEARCH", self.index, " ".join(parts) or "*", "LIMIT",
                                               str(offset), "1000", "DIALECT", "2")
                docs = list(_docs(reply))
                out += self._readable(docs)
                if len(docs) < 1000:
                    return out
                offset += 1000
        except self._redis_errors as exc:
            raise StoreError(f"Redis search failed: {exc}") from exc

    def __len__(self) -> int:
        # The index's own count: no SCAN over the keyspace, no entry read.
        try:
            return int(self._ft("FT.SEARCH", self.index, "*", "LIMIT", "0", "0")[0])
        except self._redis_errors as exc:
            raise StoreError(f"Redis count failed: {exc}") from exc

    def count_by_state(self) -> dict[str, int]:
        counts = {state.value: 0 for state in EntryState}
        try:
            reply = self._ft("FT.AGGREGATE", self.index, "*", "GROUPBY", "1", "@state",
                                           "REDUCE", "COUNT", "0", "AS", "n")
        except self._redis_errors as exc:
            raise StoreError(f"Redis count failed: {exc}") from exc
        for row in reply[1:]:
            fields = {_s(row[j]): _s(row[j + 1]) for j in range(0, len(row), 2)}
            if fields.get("state") in counts:
                counts[fields["state"]] = int(fields.get("n", 0))
        return counts

    def __iter__(self) -> Iterator[Entry]:
        for key in list(self.r.scan_iter(match=f"{self.prefix}e:*", count=1000)):
            raw = self.r.hgetall(key)
            if raw:
                yield from self._readable([raw])

    # -- counters shared by replicas ----------------------------------------------------

    def bump_generation(self, name: str) -> int:
        return int(self.r.incr(f"{self.prefix}gen:{name}"))

    def generation(self, name: str) -> int:
        value = self.r.get(f"{self.prefix}gen:{name}")
        return int(value) if value else 0

    def save_state(self, name: str, value: str) -> None:
        try:
            self.r.set(f"{self.prefix}state:{name}", value)
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc

    def update_state(self, name: str, merge: Callable[[str | None], str]) -> str:
        """``merge`` of the stored value written under WATCH: a replica that wrote in between
        makes this one read again and merge again (redis-py's ``transaction`` retries)."""
        key = f"{self.prefix}state:{name}"

        def attempt(pipe) -> str:
            current = pipe.get(key)
            value = merge(None if current is None else _s(current))
            pipe.multi()
            pipe.set(key, value)
            return value

        try:
            return self.r.transaction(attempt, key, value_from_callable=True)
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc

    def load_state(self, name: str) -> str | None:
        try:
            value = self.r.get(f"{self.prefix}state:{name}")
        except self._redis_errors as exc:
            raise StoreError(f"Redis read failed: {exc}") from exc
        return None if value is None else _s(value)

    def set_marker(self, name: str, value: str, ttl_s: float) -> None:
        try:
            self.r.set(f"{self.prefix}m:{name}", value, px=max(1, int(ttl_s * 1000)))
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc

    def set_markers(self, values: Mapping[str, str], ttl_s: float) -> None:
        try:
            pipe = self.r.pipeline(transaction=False)       # one round trip
            for name, value in values.items():
                pipe.set(f"{self.prefix}m:{name}", value, px=max(1, int(ttl_s * 1000)))
            pipe.execute()
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc

    def get_marker(self, name: str) -> str | None:
        try:
            value = self.r.get(f"{self.prefix}m:{name}")
        except self._redis_errors as exc:
            raise StoreError(f"Redis read failed: {exc}") from exc
        return None if value is None else _s(value)

    def take_marker(self, name: str) -> str | None:
        try:
            value = self.r.getdel(f"{self.prefix}m:{name}")
        except self._redis_errors as exc:
            raise StoreError(f"Redis read failed: {exc}") from exc
        return None if value is None else _s(value)

    def claim_marker(self, name: str, value: str, ttl_s: float) -> bool:
        try:
            return bool(self._claim(keys=[f"{self.prefix}m:{name}"], args=[value, max(1, int(ttl_s * 1000))]))
        except self._redis_errors as exc:
            raise StoreError(f"Redis write failed: {exc}") from exc


def _hex(value: str) -> str:
    """Digests (version key, conversation and prefix hashes) are stored as they are when they
    are hex already, and hashed otherwise, so a TAG query never needs escaping."""
    return value if value and all(c in "0123456789abcdef" for c in value) else _tag(value)


def _flat(reply) -> list:
    """FT.INFO's nested reply as one flat list of its scalars."""
    out: list = []
    for item in reply if isinstance(reply, (list, tuple)) else [reply]:
        out += _flat(item) if isinstance(item, (list, tuple)) else [item]
    return out


def _index_missing(exc: Exception) -> bool:
    """RediSearch's answer to a query on an index that does not exist (2.10: ``idx: no such index``;
    older: ``Unknown Index name``)."""
    text = str(exc).lower()
    return "no such index" in text or "unknown index name" in text


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _docs(reply) -> Iterator[dict]:
    """FT.SEARCH's flat reply [total, key, [f, v, ...], key, [...]] as dicts."""
    for i in range(1, len(reply), 2):
        flat = reply[i + 1]
        yield {_s(flat[j]): flat[j + 1] for j in range(0, len(flat), 2)}


def _docs_with_ids(reply) -> Iterator[dict]:
    """The same, each dict with its key under "id"."""
    for i, doc in enumerate(_docs(reply)):
        doc["id"] = reply[1 + 2 * i]
        yield doc
