"""Cache entries and the store contract.

A store holds entries and answers filtered vector searches. The filter is part
of the search, not applied afterwards: scope (tenant + session, or the tenant's
global pool), the version key and servability are checked before any vector is
scored, so an entry of another tenant or session can never be returned.
"""

from __future__ import annotations

import abc
import enum
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple, NewType

import numpy as np

from smartcache.errors import InvalidRequest
from smartcache.fingerprint import Signature

EntryId = NewType("EntryId", str)
VersionKeyHash = NewType("VersionKeyHash", str)


class EntryState(str, enum.Enum):
    PENDING = "pending"    # written, waiting out the promotion window; never served
    READY = "ready"        # servable
    SUSPECT = "suspect"    # servable, but every hit should be verified in the background
    FROZEN = "frozen"      # pinned by an operator: servable, never evicted or expired
    INVALID = "invalid"    # never served again; purged lazily

    @property
    def servable(self) -> bool:
        return self in (EntryState.READY, EntryState.SUSPECT, EntryState.FROZEN)


class Scope(str, enum.Enum):
    SESSION = "session"    # visible to the session that wrote it
    GLOBAL = "global"      # visible to every session of the tenant (explicit promotion only)


@dataclass(frozen=True)
class VersionKey:
    """What an answer was produced with; an entry is servable only under an equal key."""

    model: str = ""
    tokenizer: str = ""
    system_prompt: str = ""     # sha256 of the masked, normalised system prompt
    knowledge_base: str = ""
    output: str = ""            # what shapes the answer beyond the messages (a JSON schema, a grammar)

    @classmethod
    def from_mapping(cls, data: Mapping[str, object] | None, *, system_prompt: str) -> "VersionKey":
        if data is not None and not isinstance(data, Mapping):     # dict() of a list or str raises TypeError
            raise InvalidRequest("versions must be a mapping of field to string")
        data = dict(data or {})
        unknown = set(data) - {"model", "tokenizer", "system_prompt", "knowledge_base", "kb", "output"}
        if unknown:
            raise InvalidRequest(f"unknown version fields: {sorted(map(str, unknown))[:8]}")
        for key, value in data.items():
            # An int is printed; past 4300 digits str() raises ValueError, and no version is that long.
            if not isinstance(value, (str, int)) or isinstance(value, int) and abs(value) >= 10**64:
                raise InvalidRequest(f"version field {key!r} must be a string")
        return cls(
            model=str(data.get("model", "")),
            tokenizer=str(data.get("tokenizer", "")),
            # An explicit system-prompt version wins over the hash of the prompt text.
            system_prompt=str(data.get("system_prompt", system_prompt)),
            knowledge_base=str(data.get("knowledge_base", data.get("kb", ""))),
            output=str(data.get("output", "")),
        )

    def digest(self) -> VersionKeyHash:
        parts = [self.model, self.tokenizer, self.system_prompt, self.knowledge_base]
        if self.output:     # only then: the keys of entries written before it stay as they were
            parts.append(self.output)
        payload = json.dumps(parts)
        return VersionKeyHash(hashlib.sha256(payload.encode()).hexdigest())


@dataclass(frozen=True, slots=True)
class Answer:
    text: str
    key_facts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)   # slots: ~450 B less an entry than a __dict__
class Entry:
    """One cached answer with everything needed to decide whether it may be served again."""

    cache_id: EntryId
    scope: Scope
    tenant: str
    session_id: str
    version_key: VersionKeyHash
    context_fingerprint: str
    signature: Signature
    turn_vector: np.ndarray = field(repr=False)
    context_vector: np.ndarray | None = field(repr=False)
    prefix_hash: str              # hash of the history this answer was given in
    conversation_hash: str        # hash of that history + the question + this answer
    answer: Answer
    state: EntryState
    created_at: float
    expires_at: float             # float("inf") for no TTL
    domain: str = "general"
    hit_count: int = 0
    feedback_score: float = 1.0
    last_hit_at: float = 0.0
    prompt_tokens: int = 0        # what a hit saves, reported in usage
    request_key: str = ""         # context.read_key's digest: the exact path finds the entry by it
    cut_at: int = 0               # the answer stopped at this max_tokens (finish_reason "length"); 0: complete
    stop: tuple[str, ...] = ()    # the stop strings it was generated under: it may end where one began
    answer_tokens: int = 0        # the engine's count of the answer's tokens; 0: unknown
    personal: str | None = None   # what of one person the conversation or answer holds ("": nothing; None: not read)

    def with_changes(self, **changes: object) -> "Entry":
        # Slot by slot: ``dataclasses.replace`` calls __init__ with every field, twice the cost,
        # and a store hands out a copy of every entry a search finds.
        unknown = changes.keys() - _ENTRY_FIELD_SET
        if unknown:
            raise TypeError(f"Entry has no field {sorted(unknown)[0]!r}")
        copy = object.__new__(Entry)
        for name in _ENTRY_FIELDS:
            object.__setattr__(copy, name, changes[name] if name in changes else getattr(self, name))
        return copy

    def servable_at(self, now: float, feedback_floor: float) -> bool:
        if not self.state.servable or self.feedback_score < feedback_floor:
            return False
        return self.state is EntryState.FROZEN or self.expires_at > now


_ENTRY_FIELDS = tuple(f.name for f in fields(Entry))
_ENTRY_FIELD_SET = frozenset(_ENTRY_FIELDS)


@dataclass(frozen=True)
class SearchFilter:
    """The hard pre-filter of a lookup. ``session_id`` selects the session pool; the tenant's
    global pool is searched too when ``include_global``."""

    tenant: str
    version_key: VersionKeyHash
    session_id: str | None
    include_global: bool = True
    domain: str | None = None       # None: any domain; else this domain or 'general'
    now: float = 0.0
    feedback_floor: float = 0.0

    def admits(self, entry: Entry) -> bool:
        """The reference semantics every store's search must match."""
        if entry.tenant != self.tenant or entry.version_key != self.version_key:
            return False
        if entry.scope is Scope.SESSION and (self.session_id is None or entry.session_id != self.session_id):
            return False
        if entry.scope is Scope.GLOBAL and not self.include_global:
            return False
        if self.domain is not None and entry.domain not in (self.domain, "general") and self.domain != "general":
            return False
        return entry.servable_at(self.now, self.feedback_floor)


class ScoredEntry(tuple):
    """(entry, similarity) pair, best first in search results."""

    __slots__ = ()

    def __new__(cls, entry: Entry, similarity: float) -> "ScoredEntry":
        return super().__new__(cls, (entry, similarity))

    @property
    def entry(self) -> Entry:
        return self[0]

    @property
    def similarity(self) -> float:
        return self[1]


class Doomed(NamedTuple):
    """An entry ``purge`` may delete, and why: expired (True) or invalid (False)."""

    cache_id: str
    expired: bool


class Usage(NamedTuple):
    """What hit-weighted LRU eviction weighs, without the entry's vectors or answer."""

    cache_id: str
    used_at: float        # max(created_at, last_hit_at)
    hit_count: int


class Store(abc.ABC):
    """The storage contract. Implementations are thread-safe; every method is atomic."""

    # Whether every call touches only this process's memory: no file, no network, no other
    # process to wait for (the gateway then looks up on its event loop, ``ChatService.handle``).
    in_memory: bool = False

    def free_now(self) -> bool:
        """Whether a call now would find the store free (no other thread in a long write); a
        probe, not a reservation. Stores with nothing to hold answer True."""
        return True

    @abc.abstractmethod
    def put(self, entry: Entry) -> None:
        """Insert or replace the entry with this cache_id."""

    @abc.abstractmethod
    def get(self, cache_id: str) -> Entry | None:
        """The entry, or None. Does not count as a hit."""

    @abc.abstractmethod
    def update(self, cache_id: str, **changes: object) -> Entry | None:
        """Apply field changes atomically; returns the new entry, or None when absent."""

    # Version generations: a bump makes every entry written under the old generation
    # unreachable. Kept by the store, so every process sharing it agrees at once.
    def generation(self, name: str) -> int:
        return self.__dict__.get("_generations", {}).get(name, 0)

    def bump_generation(self, name: str) -> int:
        generations = self.__dict__.setdefault("_generations", {})
        generations[name] = generations.get(name, 0) + 1
        return generations[name]

    # Learned state: what the cache learned from traffic (a tenant's observations), kept as
    # one text value per name. Durable in a persistent store, shared by a shared one; in
    # process by default.
    def save_state(self, name: str, value: str) -> None:
        self.__dict__.setdefault("_states", {})[name] = value

    def load_state(self, name: str) -> str | None:
        return self.__dict__.get("_states", {}).get(name)

    def update_state(self, name: str, merge: Callable[[str | None], str]) -> str:
        """Replace the value of ``name`` with ``merge(current value)``, atomically against every
        other writer (replicas merge what each learned; none overwrites another's), and return
        it. ``merge`` may be called more than once (a shared store retries a lost race)."""
        with self.__dict__.setdefault("_states_guard", threading.Lock()):
            value = merge(self.load_state(name))
            self.save_state(name, value)
            return value

    # Markers: short-lived facts one replica learns and another must know within seconds
    # (the answer a session was just given, so that a repeat on any replica is a regenerate).
    # In process by default; a store shared by processes shares them (and expires them itself).
    # The in-process ones expire on ``clock`` (wall-clock seconds): set it on the instance,
    # or let SmartCache(clock=...) set it on a store it makes, and tests see expiry without sleeping.
    clock: Callable[[], float] = staticmethod(time.time)

    def set_marker(self, name: str, value: str, ttl_s: float) -> None:
        self.set_markers({name: value}, ttl_s)

    def set_markers(self, values: Mapping[str, str], ttl_s: float) -> None:
        """Several markers with one lifetime, in one write where the store can (a served hit
        leaves two)."""
        with self._markers_lock():
            markers = self.__dict__.setdefault("_markers", {})
            now = self.clock()
            if len(markers) >= 10_000:      # bounded: expired markers go first
                for key in [k for k, (_, until) in markers.items() if until <= now]:
                    del markers[key]
            for name, value in values.items():
                markers[name] = (value, now + ttl_s)

    def get_marker(self, name: str) -> str | None:
        with self._markers_lock():
            value, until = self.__dict__.get("_markers", {}).get(name, (None, 0.0))
            return value if until > self.clock() else None

    def take_marker(self, name: str) -> str | None:
        """Read and remove a marker at once: of several replicas, one acts on it."""
        with self._markers_lock():
            value, until = self.__dict__.get("_markers", {}).pop(name, (None, 0.0))
            return value if until > self.clock() else None

    def claim_marker(self, name: str, value: str, ttl_s: float) -> bool:
        """Set the marker to ``value`` for ``ttl_s`` if it is absent, expired, or holds ``value``
        already (its holder renewing it); True when it holds ``value`` now. Atomic: of processes
        claiming at once, one wins (the lifecycle's lease, ``lifecycle/lease.py``)."""
        with self._markers_lock():
            markers = self.__dict__.setdefault("_markers", {})
            now = self.clock()
            held, until = markers.get(name, (None, 0.0))
            if until > now and held != value:
                return False
            markers[name] = (value, now + ttl_s)
            return True

    def _markers_lock(self) -> threading.Lock:
        return self.__dict__.setdefault("_markers_guard", threading.Lock())

    def transition(self, cache_id: str, expected: EntryState, **changes: object) -> Entry | None:
        """Apply ``changes`` only if the entry is still in state ``expected`` (compare-and-set);
        None when it is absent or in another state. Stores shared by processes make it atomic,
        so a pending entry is promoted once and a kill by another replica is never undone."""
        entry = self.get(cache_id)
        if entry is None or entry.state is not expected:
            return None
        return self.update(cache_id, **changes)

    def add_hit(self, cache_id: str, at: float) -> None:
        """Count one hit, atomically: concurrent hits are all counted, and a hit on an entry
        deleted meanwhile does not bring it back. This default is not atomic; every store
        overrides it."""
        entry = self.get(cache_id)
        if entry is not None:
            self.update(cache_id, hit_count=entry.hit_count + 1, last_hit_at=at)

    def add_hits(self, hits: Mapping[str, tuple[int, float]]) -> None:
        """Count a batch of hits: for each id, how many and when the last was, all or none (a
        refused batch is retried whole). This default is neither; every store overrides it."""
        for cache_id, (count, at) in hits.items():
            for _ in range(count):
                self.add_hit(cache_id, at)

    # Lifecycle queries: answered from the store's own state, so any replica, or a process
    # restarted on the same file, sees the same work to do. The defaults read every entry;
    # each backend answers from an index instead.
    def pending_due(self, created_before: float, limit: int) -> list[str]:
        """Ids of PENDING entries created at or before ``created_before``, oldest first, at most
        ``limit``. Safe to call from many replicas at once: promote with ``transition``."""
        due = sorted((e.created_at, e.cache_id) for e in self
                     if e.state is EntryState.PENDING and e.created_at <= created_before)
        return [cache_id for _, cache_id in due[:limit]]

    def purgeable(self, now: float, limit: int) -> list[Doomed]:
        """At most ``limit`` entries that are INVALID, or expired at ``now`` and not FROZEN."""
        out = []
        for e in self:
            if e.state is EntryState.INVALID or (e.state is not EntryState.FROZEN and e.expires_at <= now):
                out.append(Doomed(e.cache_id, e.state is not EntryState.INVALID))
                if len(out) == limit:
                    break
        return out

    def usage(self) -> list[Usage]:
        """Every entry eviction may take (all but FROZEN), with what its priority needs."""
        return [Usage(e.cache_id, max(e.created_at, e.last_hit_at), e.hit_count)
                for e in self if e.state is not EntryState.FROZEN]

    @abc.abstractmethod
    def delete(self, cache_id: str) -> bool:
        """Remove an entry; True if it existed."""

    @abc.abstractmethod
    def search(self, flt: SearchFilter, vector: np.ndarray, k: int) -> list[ScoredEntry]:
        """Top-k entries admitted by ``flt`` by cosine to ``vector`` (unit vectors), best first."""

    def exact(self, flt: SearchFilter, request_key: str, limit: int = 4) -> list[Entry]:
        """Entries ``flt`` admits whose ``request_key`` is this one, newest first, at most
        ``limit``: the exact path, before any vector. This default reads every entry; each
        backend answers from an index instead."""
        found = [e for e in self if e.request_key == request_key and flt.admits(e)]
        found.sort(key=lambda e: -e.created_at)
        return found[:limit]

    @abc.abstractmethod
    def find(self, *, tenant: str | None = None, session_id: str | None = None,
             version_key: str | None = None, conversation_hash: str | None = None,
             prefix_hash: str | None = None, states: Iterable[EntryState] | None = None) -> list[Entry]:
        """Entries matching every given field (no vector scoring)."""

    def count_by_state(self) -> dict[str, int]:
        """How many entries are in each state (every state listed). Stats and metrics call it
        on every scrape; a shared store answers from its index instead of reading entries."""
        counts = {state.value: 0 for state in EntryState}
        for entry in self:
            counts[entry.state.value] += 1
        return counts

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def __iter__(self) -> Iterator[Entry]: ...
