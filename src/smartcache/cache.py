"""SmartCache: the library API, in the spirit of RedisVL's semantic cache.

    cache = SmartCache()                                   # embedded defaults
    result = cache.store(messages, answer, session="s1")   # written as pending
    cache.promote(result.cache_id)                         # or wait out the window
    found = cache.lookup(messages2, session="s1")          # a Lookup: a Decision, and the request
    found.zone, found.answer, found.reasons
    cache.store(found, engine_answer)                      # on a miss: the request is not read again

One request runs the pipeline once: context -> fingerprint -> gate (``prepare``),
then store search -> decide (``lookup``), then the answer written (``store``). The
cache applies the lifecycle effects the decision implies (a reset or correction
invalidates the session, a hit is counted, a failed validation lowers the entry's
weight). Store faults fail open: the lookup becomes a miss with a ``store_error``
reason, and is counted.

It learns from its traffic (``smartcache.learn``): ``store(lookup, answer)`` labels the
candidate the verifier weighed with the engine's answer, ``check(lookup, fresh)`` labels a
served answer the lookup asked to verify, and an answer the engine gave alike in several
sessions is shared with the tenant's global pool.
"""

from __future__ import annotations

import functools
import itertools
import logging
import operator
import os
import random
import threading
import time
import uuid
import weakref
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from smartcache.config import CacheConfig, load_config
from smartcache.context import build_view, normalize_text, parse_messages, read_key
from smartcache.decide import Decider, Decision, Gate, Reason, ReasonCode, Scores, Zone, key_facts
from smartcache.decide.evidence import FEATURES
from smartcache.decide.match import Switches
from smartcache.decide.verifier import TreeVerifier
from smartcache.errors import InvalidRequest, StoreError
from smartcache.fingerprint import ChangeFlag, Encoder, Fingerprint, Fingerprinter, MemoEncoder, shared_encoder
from smartcache.fingerprint.tags import change_flags, is_time_sensitive
from smartcache.fingerprint.timely import looks_carried_on
from smartcache.context.normalize import request_words
from smartcache.decide.decider import tier_of
from smartcache.decide.near_exact import corrected, near_repeat
from smartcache.learn import AnswerJudge, Judgement, Label
from smartcache.learn.observations import Labelled, ObservationLog, Rows, as_rows
from smartcache.learn.personal import personal_data
from smartcache.learn.policy import CHECK, FORWARDED, LearnedPolicy, Observation
from smartcache.learn.sharing import Asked, ProvenSharing
from smartcache.lifecycle import FeedbackResult, Lifecycle
from smartcache.lookup import CacheRequest, Lookup
from smartcache.store import (Answer, Entry, EntryId, EntryState, MemoryStore, Scope, ScoredEntry, SearchFilter, Store,
                              VersionKey)
from smartcache.store.guard import GuardedStore, StoreHealth

log = logging.getLogger("smartcache")
_ENDS_SESSION = frozenset({ChangeFlag.RESET, ChangeFlag.CORRECTION})
_NEAR_CANDIDATES = 4     # nearest entries the near-exact path reads (a typo'd repeat is among the nearest)
_NEAR_FLOOR = 0.6        # below this turn cosine no typo'd repeat was seen; nothing to read
_PERSONAL_MEMO = 100_000  # entries whose personal-data reading is remembered (cleared when full)
SHARED_STRATUM = "any:shared:low"   # the hits proven sharing served, counted for their check rate


def _flush_hits_quietly(lifecycle: Lifecycle, pid: int) -> None:
    if os.getpid() != pid:
        return
    try:
        lifecycle.flush_hits()
    except Exception as exc:     # noqa: BLE001 - at exit, a closed store or a dead server
        log.warning("smartcache: the last hit counts were not written: %s", exc)


@functools.lru_cache(maxsize=4096)
def _exact_gates(current: str) -> tuple[bool, bool]:
    """Whether a turn is time-sensitive, and whether it resets or corrects: a dozen regular
    expressions, memoised because the exact path's traffic is the same turns again (the key
    of a turn is at most ``context.max_turn_chars`` long: 4,096 of them are a few MB)."""
    return is_time_sensitive(current), bool(change_flags(current) & _ENDS_SESSION)


def _sharing_key(request: "CacheRequest") -> tuple[str, str]:
    """(group, key) of a request for proven sharing: its versions and history, and its words."""
    fp = request.fingerprint
    group = f"{request.version.digest()}|{fp.signature.history_hash}"
    return group, f"{group}|{request_words(fp.signature.text)}"


def _personal_reading(text: str) -> str:
    """What of one person ``text`` holds ("" for nothing), read as sent and as normalised: the
    normalised form spells 六二二二… as digits and folds ＠ and look-alike letters."""
    return personal_data(text) or personal_data(normalize_text(text)) or ""
_CACHES = itertools.count(1)


@dataclass(frozen=True)
class StoreResult:
    """``reason``: why the answer was not written (None when it was); ``detail`` is for people."""

    stored: bool
    cache_id: str | None
    state: EntryState | None
    reason: ReasonCode | None
    detail: str = ""


@dataclass(frozen=True)
class CacheStats:
    entries: int
    by_state: Mapping[str, int]
    lookups: int
    by_zone: Mapping[str, int]
    hit_rate: float
    stores: int
    store_refusals: int
    store_errors: int
    invalidations: int
    evicted: int
    encoder: str
    memo_hits: int
    memo_misses: int
    observations: int = 0       # labels learned from traffic (forwarded requests and checks)
    checks: int = 0             # served answers checked against the engine
    checks_wrong: int = 0       # ... and found different: the measured live error
    shared: int = 0             # answers proven the same across sessions, put into the global pool
    exact_hits: int = 0         # hits the exact path served, before any model ran
    near_exact_hits: int = 0    # hits served as a repeat but for typos and courtesy, before the verifier


def make_store(config: CacheConfig, dim: int) -> Store:
    """The store the config names."""
    options = {"ann_above": config.store.ann_above}
    if config.store.backend == "redis":
        from smartcache.store.redis import RedisStore
        from smartcache.store.redis_connect import parse_sentinels
        return RedisStore(config.store.url, dim, prefix=config.store.prefix,
                          sentinels=parse_sentinels(config.store.sentinels), service=config.store.service)
    if config.store.backend == "sqlite":
        from smartcache.store.sqlite import SqliteStore
        return SqliteStore(config.store.path, dim, synchronous=config.store.synchronous, **options)
    return MemoryStore(dim, **options)


def _limit_blas(threads: int) -> None:
    """numpy's BLAS on at most ``threads`` threads, process-wide and once (a context per call
    costs more than the scan): a pool's scan is a matrix-vector product of a few thousand rows,
    which extra threads do not speed up, and which they spin after on the core the rest of the
    lookup needs (2.7-3.7x the lookup's time on two cores, docs/performance.md)."""
    from threadpoolctl import threadpool_limits
    threadpool_limits(limits=threads, user_api="blas")


def _file_tag(path: str) -> str:
    """A short digest of a model file's bytes: which model the learned scores belong to."""
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def _check_id(value: object, what: str, *, required: bool) -> str | None:
    if value is None:
        if required:
            raise InvalidRequest(f"{what} is required")
        return None
    if not isinstance(value, str) or not value or len(value) > 256:
        raise InvalidRequest(f"{what} must be a non-empty string of at most 256 characters")
    return value


class SmartCache:
    """A context-aware semantic cache. Thread-safe; build one per process and share it."""

    def __init__(self, config: CacheConfig | None = None, *, encoder: Encoder | None = None,
                 store: Store | None = None, clock: Callable[[], float] = time.time) -> None:
        self.config = config or load_config()
        if self.config.store.blas_threads:
            _limit_blas(self.config.store.blas_threads)
        base = encoder or shared_encoder(self.config.encoder)
        self.encoder = MemoEncoder(base, self.config.memo_size)
        # Every backend is guarded: its faults become StoreError and callers fail open.
        if store is None:   # a store made here keeps its in-process markers on the cache's clock
            store = make_store(self.config, base.dim)
            store.clock = clock
        self.backend = GuardedStore(store)
        self.clock = clock
        self.lifecycle = Lifecycle(self.backend, self.config.lifecycle, clock)
        # The hits of the last second are written when the cache goes, or the process ends (in
        # the process that counted them: a forked child would write its parent's again).
        weakref.finalize(self, _flush_hits_quietly, self.lifecycle, os.getpid())
        self.fingerprinter = Fingerprinter(self.encoder, topic_threshold=self.config.topic_threshold)
        verifier = TreeVerifier.load(self.config.verifier_path or None, features=FEATURES) \
            if self.config.use_verifier else None
        self.decider = Decider(self.config.table_for(base.name), disabled_domains=self.config.disabled_domains,
                               repeat_only_domains=self.config.repeat_only_domains,
                               validate=self.config.use_validation,
                               switches=Switches(tags=self.config.use_tags,
                                                 change_detection=self.config.use_change_detection,
                                                 context_view=self.config.use_context_view),
                               verifier=verifier)
        # Learning needs the verifier's P(same): the rules-only baseline keeps its fixed point.
        self.policy = LearnedPolicy(self.config.learning) \
            if self.config.learning.enabled and self.config.use_verifier else None
        self.judge = AnswerJudge(self.encoder)
        self._model_tag = _file_tag(self.config.verifier_path) if self.config.verifier_path else ""
        # The labels' evidence rows, for refitting the verifier on the tenant's traffic (off the request path).
        self._observations = ObservationLog(verifier.features, self.config.learning.observations_kept,
                                            self.config.learning.labels_per_session) \
            if self.policy is not None and verifier is not None and self.config.learning.observations_kept else None
        self._loaded: set[str] = set()          # tenants whose learned state was read from the store
        self._load_lock = threading.Lock()
        self._sharing = ProvenSharing(self.policy, lambda: self.backend, lambda: self.lifecycle, self.judge,
                                      need=self.config.learning.share_after, save=self._save_learned,
                                      count=self._count) \
            if self.policy is not None and self.config.learning.share_after else None
        self._personal_entries: dict[str, bool] = {}    # cache_id -> holds personal data (entries never change text)
        self._sampler = random.Random(f"smartcache-checks-{self.config.learning.error_bound}")
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._identity = next(_CACHES)      # stamps the requests it reads (an id() can be reused)

    # -- the pipeline -----------------------------------------------------------------

    def fingerprint(self, messages: Any, *, versions: Mapping[str, object] | None = None
                    ) -> tuple[Fingerprint, VersionKey]:
        """Run the context and fingerprint stages (no lookup); raises InvalidRequest on bad input."""
        request = self.prepare(messages, versions=versions)
        return request.fingerprint, request.version

    def prepare(self, messages: Any, *, session: str | None = None, tenant: str = "default",
                versions: Mapping[str, object] | None = None) -> CacheRequest:
        """Read a request once: parse, fingerprint, version key, gate. ``lookup`` does this
        itself; ``store`` takes the result. Raises InvalidRequest on bad input."""
        session = _check_id(session, "session", required=False)
        tenant = _check_id(tenant, "tenant", required=True)  # type: ignore[assignment]
        conversation = parse_messages(messages)
        key = read_key(conversation, self.config.context)
        version = VersionKey.from_mapping(versions, system_prompt=key.system_hash)

        def read() -> tuple[Fingerprint, Gate | None]:     # the encoder and the rules: only when needed
            fp = self.fingerprinter.fingerprint(build_view(conversation, self.config.context, key))
            return fp, self.decider.gate(fp)
        return CacheRequest(tenant, session, conversation, key, version, read=read, made_by=self._identity)

    def lookup(self, messages: Any, *, session: str | None = None, tenant: str = "default",
               versions: Mapping[str, object] | None = None) -> Lookup:
        """Decide hit / half-hit / miss for a request. Never writes an entry; hand the result
        to ``store`` to write the answer the engine gave instead. ``messages`` may be what
        ``prepare`` of this cache returned (it carries session, tenant and versions)."""
        if isinstance(messages, CacheRequest):
            if session is not None or tenant != "default" or versions is not None:
                raise InvalidRequest("session, tenant and versions come with the request; do not pass them again")
            if messages.made_by != self._identity:
                raise InvalidRequest("this request was read by another SmartCache; look it up there")
            request = messages
        else:
            request = self.prepare(messages, session=session, tenant=tenant, versions=versions)
        decision = self._decide(request)
        assert decision is not None
        return Lookup.of(self._counted(decision), request)

    def lookup_exact(self, request: CacheRequest, accept: Callable[[Entry], bool] = lambda entry: True
                     ) -> Lookup | None:
        """The exact path alone: a hit on the request word for word whose entry ``accept``s, or
        None, and then ``lookup`` of the same request decides; nothing is counted or recorded
        before a hit is certain. No model runs and no tick; for a caller that must not wait long
        (the gateway's event loop, on a store in memory)."""
        if request.made_by != self._identity:
            raise InvalidRequest("this request was read by another SmartCache; look it up there")
        decision = self._decide(request, exact_only=accept)
        return None if decision is None else Lookup.of(self._counted(decision), request)

    def _decide(self, request: CacheRequest, *, exact_only: Callable[[Entry], bool] | None = None
                ) -> Decision | None:
        tenant, session = request.tenant, request.session
        try:
            if exact_only is None:
                self.lifecycle.maybe_tick()     # throttled: not a store round trip per lookup
        except StoreError as exc:           # promotion waits for the next tick; the lookup goes on
            log.error("smartcache store failed while promoting pending entries: %s", exc)
            self._count("store_errors")
        try:
            decision = self._exact(request, accept=exact_only)
            if exact_only is not None and decision is None:
                return None
            if decision is None:
                decision = self._semantic(request)
        except StoreError as exc:
            if exact_only is not None:
                return None     # the whole lookup meets it again, and counts it once
            log.error("smartcache store failed during lookup, serving from the engine: %s", exc)
            self._count("store_errors")
            return Decision(Zone.MISS, (Reason(ReasonCode.STORE_ERROR, str(exc)),), cacheable=False)
        decision = self._sample_check(request, decision)
        try:
            if decision.zone is Zone.HIT and decision.entry is not None:
                self.lifecycle.record_hit(decision.entry.cache_id)
            if decision.has_reason(ReasonCode.VALIDATION_FAILED) and decision.entry is not None:
                self.lifecycle.penalise(decision.entry.cache_id)
        except StoreError as exc:       # a lost hit count or penalty, never a lost answer
            log.warning("smartcache store failed after a lookup: %s", exc)
            self._count("store_errors")
        return decision

    def _exact(self, request: CacheRequest, accept: Callable[[Entry], bool] | None = None) -> Decision | None:
        """The exact path: the same request word for word (normalised, punctuation aside) after a
        byte-identical history, in a pool this request may read, found by its key before any
        model runs. None: the semantic path decides. A request a gate could settle (a reset, a
        correction, a time-sensitive or oversized turn) goes the whole way; an answer whose facts
        contradict its own request is never keyed (``_entry``), so its validation stays the
        semantic path's."""
        key = request.key
        if not self.config.exact_path or key.oversized:
            return None
        time_sensitive, ends_session = _exact_gates(key.current)
        if not time_sensitive and looks_carried_on(key.current):
            # "那上海呢" after a time-sensitive turn asks the same of today: the semantic path's gate says so.
            time_sensitive = any(t.role == "user" for t in request.conversation.history)
        if time_sensitive or self.decider.switches.change_detection and ends_session:
            return None
        flt = SearchFilter(tenant=request.tenant, version_key=request.version.digest(), session_id=request.session,
                           now=self.clock(), feedback_floor=self.config.lifecycle.feedback_floor)
        for entry in self.backend.exact(flt, key.digest, 4):
            if entry.domain in self.decider.disabled_domains:
                return None
            if self._personal_elsewhere(entry, request.session):
                continue
            if accept is not None and (not accept(entry) or self._checks_sharing_entry(request, entry)):
                return None
            self._count("exact_hits")
            return Decision(Zone.HIT, (Reason(ReasonCode.EXACT_MATCH, "the same request and history, word for word: "
                                                                      "found by its key, no model run", entry.cache_id),),
                            entry, Scores(1.0, 1.0),
                            verify=entry.state is EntryState.SUSPECT, candidates=1)
        return None

    def _near_exact(self, fp: Fingerprint, flt: SearchFilter, candidates: list[ScoredEntry],
                    session: str | None) -> Decision | None:
        """The near-exact path: one of the nearest entries is this request but for typos and
        courtesy (``decide.near_exact``), turn by turn through the history, with the same
        negations, opposite actions, change flags and numbers. Decided before the rules'
        evidence and the verifier. The domain pre-filter is not trusted here (a typo can move
        a request's tag), so the nearest entries of every domain are read too."""
        if not self.config.exact_path:
            return None
        pool = list(candidates)
        anywhere = replace(flt, domain=None)
        if flt.domain not in (None, "general"):
            pool += self.backend.search(anywhere, fp.turn_vector, _NEAR_CANDIDATES)
        spelled = corrected(fp.signature.text)
        if spelled is not None:     # the encoder reads a typo'd turn far from what was meant
            pool += self.backend.search(anywhere, self.encoder.encode([spelled])[0], _NEAR_CANDIDATES)
        seen: set[str] = set()
        for c in sorted(pool, key=lambda c: -c.similarity)[:2 * _NEAR_CANDIDATES]:
            entry = c.entry
            if entry.cache_id in seen or c.similarity < _NEAR_FLOOR or entry.domain in self.decider.disabled_domains \
                    or self._personal_elsewhere(entry, session):
                continue
            seen.add(entry.cache_id)
            found = near_repeat(fp.signature, entry.signature)
            if found is None or self.decider.check_facts(fp, entry):
                continue
            self._count("near_exact_hits")
            return Decision(Zone.HIT, (Reason(ReasonCode.NEAR_EXACT_MATCH, f"the same request but for "
                                              f"{found.describe()}; turn cosine {c.similarity:.3f}", entry.cache_id),),
                            entry, Scores(c.similarity, 1.0), verify=entry.state is EntryState.SUSPECT,
                            candidates=len(candidates))
        return None

    def _personal_elsewhere(self, entry: Entry, session: str | None) -> bool:
        """Whether a global entry holds one person's data (``learn.personal``: contacts, ids,
        their own records, what they said before) and this request comes from another session:
        such an answer serves only the session that was given it, however it reached the pool
        (an admin's promotion, a global store, a replica's sharing)."""
        if entry.scope is not Scope.GLOBAL or session is not None and entry.session_id == session:
            return False
        if entry.personal is not None:      # read when it was written, on the whole conversation
            return bool(entry.personal)
        personal = self._personal_entries.get(entry.cache_id)
        if personal is None:                # written before that reading was kept: what it has
            text = " ".join([entry.signature.text, *(t.excerpt for t in entry.signature.turns), entry.answer.text])
            personal = personal_data(text) is not None
            if len(self._personal_entries) >= _PERSONAL_MEMO:
                self._personal_entries.clear()
            self._personal_entries[entry.cache_id] = personal
        return personal

    def _semantic(self, request: CacheRequest) -> Decision:
        """The semantic path: fingerprint, gate, vector search, evidence and the verifier."""
        fp, gate, tenant, session = request.fingerprint, request.gate, request.tenant, request.session
        if gate is not None:
            if gate.ends_session and session is not None:
                # The session's earlier answers no longer stand; nothing of them may be served again.
                self._count("invalidations", self.lifecycle.invalidate(tenant=tenant, session_id=session,
                                                                       before=self.clock()))
            return gate.decision()
        flt = SearchFilter(tenant=tenant, version_key=request.version.digest(), session_id=session,
                           domain=fp.signature.domain, now=self.clock(),
                           feedback_floor=self.config.lifecycle.feedback_floor)
        candidates = [c for c in self.backend.search(flt, fp.turn_vector, self.config.top_k)
                      if not self._personal_elsewhere(c.entry, session)]
        near = self._near_exact(fp, flt, candidates, session)
        if near is not None:
            return near
        continued = [] if session is None else [
            e for e in self.backend.find(tenant=tenant, session_id=session,
                                       conversation_hash=fp.signature.history_hash)
            if flt.admits(e) or e.state is EntryState.PENDING and e.version_key == flt.version_key
        ]
        # Entries of a persistent store may read their fields on first use (SqliteStore).
        return self.decider.weigh(fp, candidates, continued, self._policy_of(tenant))

    def store(self, messages: Lookup | CacheRequest | Any, answer: str, *, session: str | None = None,
              tenant: str | None = None, versions: Mapping[str, object] | None = None, scope: str = "session",
              ttl: float | None = None, prompt_tokens: int = 0, cut_at: int = 0, stop: Sequence[str] = (),
              answer_tokens: int = 0) -> StoreResult:
        """Write the answer given to a request as a PENDING entry (not servable until promoted).

        ``messages`` are the request's messages, with its session, tenant and versions given
        here; or what ``lookup`` (or ``prepare``) of this cache returned, which carries them.
        Call it only once the answer is complete. Refuses (``stored=False``, ``reason`` a
        ``ReasonCode``) what must never be cached: time-sensitive or high-risk requests, empty
        answers, tool calls, a correction without the history it corrects. ``cut_at``: the
        answer stopped at this ``max_tokens`` (the engine's finish_reason "length"); such an
        answer is served only to a request that asks for as many tokens or fewer (the gateway
        cuts it to the request's limit), 0 for a complete one. ``stop``: the stop strings the
        request set, when the answer may have ended at one (finish_reason "stop"); such an
        answer serves only requests that stop at each of them. ``answer_tokens``: the engine's
        count of the answer's tokens (0: unknown), so a request for fewer is not served it whole.
        """
        if not isinstance(answer, str):
            raise InvalidRequest("answer must be a string")
        if not answer.isascii():
            try:    # a lone surrogate has no UTF-8 form: no hash, store or client could take it
                answer.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidRequest("answer is not valid Unicode (a lone surrogate)") from None
        try:
            scope_value = Scope(scope)
        except ValueError:
            raise InvalidRequest(f"scope must be 'session' or 'global', got {scope!r}") from None
        if ttl is not None and (not isinstance(ttl, (int, float)) or not ttl > 0):     # not > 0: NaN too
            raise InvalidRequest("ttl must be a positive number of seconds")
        try:
            prompt_tokens = operator.index(prompt_tokens)       # an int or a numpy integer, not "7" or 7.5
        except TypeError:
            prompt_tokens = -1
        if prompt_tokens < 0:
            raise InvalidRequest("prompt_tokens must be a non-negative integer")
        if isinstance(cut_at, bool) or not isinstance(cut_at, int) or cut_at < 0:
            raise InvalidRequest("cut_at must be a non-negative integer (0: a complete answer)")
        if isinstance(answer_tokens, bool) or not isinstance(answer_tokens, int) or answer_tokens < 0:
            raise InvalidRequest("answer_tokens must be a non-negative integer (0: unknown)")
        if not isinstance(stop, (list, tuple)) or not all(isinstance(x, str) and x for x in stop):
            raise InvalidRequest("stop must be a list of non-empty strings")
        request = self._request_of(messages, session=session, tenant=tenant, versions=versions)
        if isinstance(messages, Lookup) and messages.zone is not Zone.HIT:
            self.learn(messages, answer)    # the engine answered a request the cache had a candidate for
        if scope_value is Scope.SESSION and request.session is None:
            raise InvalidRequest("a session-scoped entry needs a session id")
        refusal = self._refusal(request, answer)
        if refusal is not None:
            self._count("store_refusals")
            return StoreResult(False, None, None, refusal)
        try:
            entry = replace(self._entry(request, answer, scope_value, ttl, prompt_tokens), cut_at=cut_at,
                            stop=tuple(sorted(set(stop))), answer_tokens=answer_tokens)
            self.lifecycle.admit(entry)
        except StoreError as exc:
            log.error("smartcache store failed during write, answer not cached: %s", exc)
            self._count("store_errors")
            return StoreResult(False, None, None, ReasonCode.STORE_ERROR, str(exc))
        self._count("stores")
        if scope_value is Scope.SESSION:
            self._witness(request, entry, answer)
        return StoreResult(True, entry.cache_id, entry.state, None, "written as pending")

    def _request_of(self, messages: Lookup | CacheRequest | Any, *, session: str | None, tenant: str | None,
                    versions: Mapping[str, object] | None) -> CacheRequest:
        """The request ``store`` writes: a handle of this cache as it is, or messages read now."""
        if isinstance(messages, Lookup):
            messages = messages.request
        elif isinstance(messages, Decision):
            raise InvalidRequest("a Decision carries no request: pass what lookup() returned, or the messages")
        if not isinstance(messages, CacheRequest):
            return self.prepare(messages, session=session, tenant="default" if tenant is None else tenant,
                                versions=versions)
        if session is not None or tenant is not None or versions is not None:
            raise InvalidRequest("session, tenant and versions come with the lookup; do not pass them again")
        # A handle of another cache holds vectors of its encoder and the verdict of its rules.
        if messages.made_by != self._identity:
            raise InvalidRequest("this lookup was made by another SmartCache; store it there, or pass the messages")
        _check_id(messages.session, "session", required=False)
        _check_id(messages.tenant, "tenant", required=True)
        return messages

    def _refusal(self, request: CacheRequest, answer: str) -> ReasonCode | None:
        """Why the answer to ``request`` must not be written, or None."""
        if not answer.strip():
            return ReasonCode.EMPTY_ANSWER
        if request.conversation.has_tool_calls:
            return ReasonCode.TOOL_CALLS
        return self.decider.refusal(request.fingerprint, request.gate)

    def _entry(self, request: CacheRequest, answer: str, scope: Scope, ttl: float | None,
               prompt_tokens: int) -> Entry:
        fp, digest, now = request.fingerprint, request.version.digest(), self.clock()
        return Entry(
            cache_id=EntryId(uuid.uuid4().hex),
            scope=scope,
            tenant=request.tenant,
            session_id=request.session or "",
            version_key=digest,
            context_fingerprint=fp.context_key(digest),
            signature=fp.signature,
            turn_vector=fp.turn_vector,
            context_vector=fp.context_vector,
            prefix_hash=fp.signature.history_hash,
            conversation_hash=request.conversation.conversation_hash(answer),
            answer=Answer(answer, key_facts(answer)),
            state=EntryState.PENDING,
            created_at=now,
            expires_at=now + (ttl if ttl is not None else self.config.lifecycle.ttl_for(fp.signature.domain)),
            domain=fp.signature.domain,
            prompt_tokens=int(prompt_tokens),
            # The words decide the constraints, so a repeat is validated once, here: an answer that
            # contradicts its own request gets no key and is never an exact hit.
            request_key="" if self.decider.validate_repeat(request.key.current, answer) else request.key.digest,
            # Read once, on the whole conversation (the system prompt and every turn in full, which
            # the signature keeps only excerpts of): a global copy serves only this session if set.
            personal=_personal_reading(" ".join([request.conversation.system,
                                                 *(t.text for t in request.conversation.turns), answer])),
        )

    # -- learning from traffic -----------------------------------------------------------

    def learn(self, found: Lookup, answer: str) -> Judgement | None:
        """Label ``found``'s best unvetoed candidate with the engine's ``answer`` to the same
        request: one observation for the tenant's learned point. ``store`` does this itself
        when given the lookup; call it directly for an answer that is not stored. Returns the
        judgement (None when there was no candidate to label, or learning is off)."""
        return self._observe(found, answer, FORWARDED)

    def check(self, found: Lookup, fresh: str) -> Judgement | None:
        """A served answer checked against a ``fresh`` one from the engine (``found.verify``
        asks for it): one observation, the live error rate, and an entry judged different is
        demoted (negative feedback) and never served again at that score."""
        self._check_shared(found, fresh)
        judgement = self._observe(found, fresh, CHECK)
        if judgement is not None and judgement.label is Label.DIFFERENT and found.entry is not None:
            try:
                self.lifecycle.feedback(found.entry.cache_id, "negative")
            except (StoreError, KeyError) as exc:      # gone meanwhile, or the store is down
                log.warning("smartcache could not demote %s after a failed check: %s", found.entry.cache_id, exc)
        return judgement

    def _check_shared(self, found: Lookup, fresh: str) -> None:
        """A hit served from words another session's answer was shared for, checked: the engine
        answering this session otherwise makes the words personal, withdraws what their class
        shared and counts against the tenant's sharing bound."""
        if not isinstance(found, Lookup) or self._sharing is None or found.entry is None \
                or found.zone is not Zone.HIT or found.request.made_by != self._identity:
            return
        request = found.request
        key = _sharing_key(request)[1]
        if not self._sharing.shared(request.tenant, key):
            return
        if self.judge.compare(found.entry.answer.text, fresh).label is Label.DIFFERENT:
            self._sharing.contradicted(request.tenant, key, request.session or "")

    def _observe(self, found: Lookup, answer: str, kind: str) -> Judgement | None:
        if not isinstance(found, Lookup):
            raise InvalidRequest("learning needs what lookup() returned")
        if not isinstance(answer, str):
            raise InvalidRequest("answer must be a string")
        nearest, score = found.nearest, found.scores.same
        if self.policy is None or nearest is None or score is None or found.request.made_by != self._identity:
            return None
        judgement = self.judge.compare(nearest.answer.text, answer)
        if judgement.label is Label.UNDECIDED:
            return judgement
        tenant = found.request.tenant
        if self._policy_of(tenant) is None:     # the stored state first, so that a save does not drop it
            return judgement
        due = self.policy.observe(Observation(tenant, found.stratum, score, judgement.label is Label.SAME,
                                              nearest.cache_id, kind, found.request.session or ""))
        if self._observations is not None and found.nearest_features is not None:
            self._observations.add(tenant, Labelled(found.nearest_features, judgement.label is Label.SAME, score,
                                                    found.stratum, self.clock(), kind, found.request.session or ""))
        self._count("observations")
        if due:
            self._save_learned(tenant)
        return judgement

    def _policy_of(self, tenant: str) -> "_TenantPolicy | None":
        """The learned policy as one tenant sees it, its state read from the store on first use
        (None while learning is off or the store could not be read)."""
        if self.policy is None:
            return None
        if tenant not in self._loaded:
            with self._load_lock:       # once: a second restore would drop what was learned meanwhile
                if tenant not in self._loaded:
                    self._load_learned(tenant)
        # Until the stored state is read, the packaged point decides and nothing is learned: labels
        # learned into an empty state would overwrite the stored ones at the next save.
        return _TenantPolicy(self.policy, tenant) if tenant in self._loaded else None

    def _load_learned(self, tenant: str) -> None:
        assert self.policy is not None
        try:
            text = self.backend.load_state(self._learned_key(tenant))
            if text is not None:
                self.policy.restore(tenant, text)
                if self._sharing is not None:
                    self._sharing.adopted(tenant)
        except StoreError as exc:       # the packaged point holds meanwhile; the next lookup tries again
            log.warning("smartcache could not read the learned state of %r: %s", tenant, exc)
            return
        except ValueError as exc:
            log.error("smartcache ignores the learned state of %r: %s", tenant, exc)
        if self._observations is not None:
            try:
                self._observations.adopt(tenant, self.backend.load_state(f"observations:{tenant}"))
            except StoreError as exc:       # they are only for refitting: the next save merges what was stored
                log.warning("smartcache could not read the observations of %r: %s", tenant, exc)
        self._loaded.add(tenant)

    def _save_learned(self, tenant: str) -> None:
        """Add what this process learned since its last save to what the store holds, in one
        atomic update, and take back the sum: replicas sharing a store pool their labels
        (each used to overwrite the others' with its own copy)."""
        policy = self.policy
        assert policy is not None
        news = policy.take_news(tenant)
        try:
            text = self.backend.update_state(self._learned_key(tenant), lambda stored: policy.merged(stored, news))
        except StoreError as exc:       # kept in memory; the next save carries it
            policy.give_back(tenant, news)
            log.warning("smartcache could not save the learned state of %r: %s", tenant, exc)
            return
        policy.adopt(tenant, text)
        if self._sharing is not None:
            self._sharing.adopted(tenant)
        self._save_observations(tenant)

    def _learned_key(self, tenant: str) -> str:
        """Where a tenant's learned points live: what was learned is scores of one model, so a
        model other than the packaged one (``verifier_path``, e.g. a refit) learns apart."""
        return f"learned:{tenant}" if not self._model_tag else f"learned:{tenant}@{self._model_tag}"

    def _save_observations(self, tenant: str) -> None:
        """The evidence rows learned since the last save, merged into the store's (the newest kept)."""
        log_ = self._observations
        if log_ is None:
            return
        rows = log_.take_news(tenant)
        if not rows:
            return
        try:
            text = self.backend.update_state(f"observations:{tenant}", lambda stored: log_.merged(stored, rows))
        except StoreError as exc:       # kept in memory; the next save carries them
            log_.give_back(tenant, rows)
            log.warning("smartcache could not save the observations of %r: %s", tenant, exc)
            return
        log_.adopt(tenant, text)

    def observations(self, tenant: str = "default") -> Rows:
        """The tenant's labelled evidence rows (``learn.observations``), oldest first: what
        ``smartcache train --observations`` refits the verifier on. Empty when none are kept."""
        tenant = _check_id(tenant, "tenant", required=True)  # type: ignore[assignment]
        if self._observations is None:
            features = self.decider.verifier.features if self.decider.verifier is not None else ()
            return as_rows([], features)
        self._policy_of(tenant)         # read what the store holds first
        return self._observations.rows(tenant)

    def save_learned(self) -> None:
        """Write every tenant's learned state to the store now (shutdown; tests)."""
        if self.policy is not None:
            for tenant in self.policy.tenants():
                self._save_learned(tenant)

    def _witness(self, request: CacheRequest, entry: Entry, answer: str) -> None:
        """Proven safe across sessions (learn/sharing.py): the same request, or a rewording the
        engine answered alike, answered the same in ``share_after`` sessions puts its answers,
        once ready, into the tenant's global pool. A conversation or answer with personal data
        is never shared; nor is the high-risk tier. Sessions are the ids the clients send: with
        signed sessions (security.md) a client cannot mint them."""
        if self._sharing is None or request.session is None:
            return
        fp, tenant = request.fingerprint, request.tenant
        if tier_of(fp.signature.domain) == "high" or self._policy_of(tenant) is None:
            return
        group, key = _sharing_key(request)
        conversation = " ".join([request.conversation.system] + [t.text for t in request.conversation.turns])
        self._sharing.witness(Asked(tenant, request.session, key, group, fp.turn_vector, entry.cache_id, answer,
                                    personal=bool(personal_data(conversation) or personal_data(answer))))

    def learned(self, tenant: str) -> dict[str, dict[str, object]]:
        """What the tenant's traffic has taught, per stratum: labels, wrong ones, hits served,
        and the point a hit needs now against the packaged one, with the bound it rests on."""
        if self.policy is None or self.decider.verifier is None:
            return {}
        self._policy_of(tenant)
        out: dict[str, dict[str, object]] = {}
        for stratum, counts in self.policy.summary(tenant).items():
            lang, kind, tier = stratum.split(":")
            packaged = self.decider.verifier.operating_point(tier, kind == "history", lang)
            point = self.policy.point(tenant, stratum, packaged)
            out[stratum] = {**counts, "packaged_point": packaged, "point": point.score, "point_source": point.source,
                            "region_labels": round(point.n, 1), "region_wrong": round(point.wrong, 1),
                            "wrong_upper95": round(point.upper, 5), "error_bound": point.delta}
        return out

    def sharing(self, tenant: str) -> dict[str, object]:
        """How many sessions one answer must reach before it is shared in ``tenant``'s pool, and
        the comparisons that rest on (``LearnedPolicy.sharing_point``); empty when nothing is
        shared without an admin."""
        if self.policy is None or self._sharing is None:
            return {}
        self._policy_of(tenant)
        point = self.policy.sharing_point(tenant)
        return {"sessions_needed": self._sharing.sessions_needed(tenant, point=point), "source": point.source,
                "compared": round(point.compared, 1), "differed": round(point.differed, 1),
                "differ_upper95": round(point.upper, 5), "error_bound": point.delta}

    def _checks_sharing_entry(self, request: CacheRequest, entry: Entry) -> bool:
        """Whether ``_sample_check`` reads a hit's sharing key, which needs the fingerprint (the
        encoder): an exact hit on another session's answer in the global pool, learning on."""
        return (self.policy is not None and self._sharing is not None
                and entry.scope is Scope.GLOBAL and entry.session_id != request.session)

    def _sample_check(self, request: CacheRequest, decision: Decision) -> Decision:
        """A sampled share of the verifier's hits asks to be checked against the engine, so the
        live error is measured and the learned point can rise when it must; and so does a share
        of the hits another session's words were shared for (proven sharing): a check that finds
        the engine answering this session otherwise withdraws them."""
        tenant = request.tenant
        if self.policy is None or decision.zone is not Zone.HIT or decision.verify:
            return decision
        if decision.nearest is None:
            entry = decision.entry
            if entry is None or entry.scope is not Scope.GLOBAL or entry.session_id == request.session \
                    or self._sharing is None or not self._sharing.shared(tenant, _sharing_key(request)[1]):
                return decision
            self.policy.served(tenant, SHARED_STRATUM)
            rate = self.policy.check_rate(tenant, SHARED_STRATUM)
            return replace(decision, verify=True) if self._sampler.random() < rate else decision
        self.policy.served(tenant, decision.stratum)
        rate = self.policy.check_rate(tenant, decision.stratum)
        return replace(decision, verify=True) if self._sampler.random() < rate else decision

    # -- lifecycle and admin ----------------------------------------------------------

    def promote(self, cache_id: str, *, to_global: bool = False) -> Entry:
        """Make a pending entry servable now (``to_global``: into the tenant's global pool)."""
        return self.lifecycle.promote(cache_id, to_global=to_global)

    def feedback(self, cache_id: str, kind: str) -> FeedbackResult:
        """'positive', 'negative' or 'regenerate' for the answer of ``cache_id``."""
        return self.lifecycle.feedback(cache_id, kind)

    def invalidate(self, *, tenant: str = "default", session: str | None = None,
                   versions: Mapping[str, object] | None = None, system_prompt: str = "",
                   cache_id: str | None = None) -> int:
        """Invalidate one entry, a session's entries, or every entry under a version key
        (``versions`` plus the system prompt text the requests carried)."""
        tenant = _check_id(tenant, "tenant", required=True)  # type: ignore[assignment]
        version_key = None
        if versions is not None:
            view_hash = build_view(parse_messages([{"role": "system", "content": system_prompt},
                                                   {"role": "user", "content": "-"}])).system_hash
            version_key = VersionKey.from_mapping(versions, system_prompt=view_hash).digest()
        count = self.lifecycle.invalidate(tenant=tenant, session_id=session, version_key=version_key,
                                          cache_id=cache_id)
        self._count("invalidations", count)
        return count

    def get(self, cache_id: str) -> Entry | None:
        self.flush_hits()
        return self.backend.get(cache_id)

    def entries(self, *, tenant: str | None = None, session: str | None = None,
                states: list[EntryState] | None = None) -> list[Entry]:
        """Entries in any state, optionally of one tenant, session or set of states (admin)."""
        self.flush_hits()
        return self.backend.find(tenant=tenant, session_id=session, states=states)

    def flush_hits(self) -> None:
        """Write this process's hit counts now (they go in batches, ``lifecycle.hit_flush_s``):
        before a read that shows them, and at shutdown. A store that fails keeps them for later."""
        try:
            self.lifecycle.flush_hits()
        except StoreError as exc:
            log.warning("smartcache: hit counts not written yet: %s", exc)

    def session_entries(self, tenant: str, session: str) -> list[Entry]:
        """Every entry of one session, in any state (the gateway docks re-sent answers on them)."""
        return self.backend.find(tenant=tenant, session_id=session)

    def delete(self, cache_id: str) -> bool:
        """Remove an entry at once; True if it existed."""
        return self.backend.delete(cache_id)

    def entry_count(self) -> int:
        """Entries in the store, in any state."""
        return len(self.backend)

    def tick(self) -> int:
        """Promote every pending entry whose window has passed; returns how many."""
        return self.lifecycle.tick()

    def next_tick_in(self) -> float:
        """Seconds until ``tick`` has something to do on time (a timer's sleep)."""
        return self.lifecycle.next_tick_in()

    # -- version keys -------------------------------------------------------------------

    # A generation counter per tenant and model (and one per whole tenant) lives in the
    # store, so a bump on one replica changes the version key of every replica at once.
    @staticmethod
    def _generation_name(tenant: str, model: str | None) -> str:
        return f"{tenant}\x00{model or '*'}"

    def versions(self, tenant: str, model: str, kb: str = "", *, tokenizer: str = "",
                 output: str = "") -> dict[str, str]:
        """The version mapping of a request to ``model`` (pass it to ``lookup`` / ``store``): the
        knowledge-base version carries the bump generations of the tenant and of the model.
        ``output``: what shapes the answer beyond the messages (a response format, a grammar), so
        an answer is served only to requests that asked for the same shape."""
        generation = (self.backend.generation(self._generation_name(tenant, model))
                      + self.backend.generation(self._generation_name(tenant, None)))
        versions = {"model": model, "tokenizer": tokenizer, "kb": f"{kb}#{generation}" if generation else kb}
        if output:
            versions["output"] = output
        return versions

    def bump_version(self, tenant: str, model: str | None = None) -> int:
        """Change the version key of the tenant (of one model, when given): its earlier entries
        stop matching at once. A whole-tenant bump also marks them invalid; returns how many."""
        self.backend.bump_generation(self._generation_name(tenant, model))
        if model is not None:
            return 0     # entries keep only a digest of their key; they are unreachable and age out
        gone = 0
        for entry in self.backend.find(tenant=tenant):
            if entry.state not in (EntryState.INVALID, EntryState.FROZEN):
                self.invalidate(tenant=tenant, cache_id=entry.cache_id)
                gone += 1
        return gone

    # -- markers ------------------------------------------------------------------------

    def set_marker(self, name: str, value: str, ttl_s: float) -> None:
        """A small value that expires after ``ttl_s``, shared by every replica of the store."""
        self.backend.set_marker(name, value, ttl_s)

    def set_markers(self, values: Mapping[str, str], ttl_s: float) -> None:
        """Several markers with one lifetime, written at once."""
        self.backend.set_markers(values, ttl_s)

    def get_marker(self, name: str) -> str | None:
        return self.backend.get_marker(name)

    def take_marker(self, name: str) -> str | None:
        """Read and remove a marker at once: of several replicas, one acts on it."""
        return self.backend.take_marker(name)

    def store_health(self) -> StoreHealth:
        """Whether the store answered its last call; while it is down the cache passes through."""
        return self.backend.health()

    def stats(self) -> CacheStats:
        try:
            states = self.backend.count_by_state()
        except StoreError:      # stats are read while the store is down too: counts unknown
            states = {}
        with self._lock:
            counts = dict(self._counts)
        zones = {z.value: counts.get(f"zone.{z.value}", 0) for z in Zone}
        checked, wrong = self.policy.live() if self.policy is not None else (0, 0)
        lookups = sum(zones.values())
        return CacheStats(
            entries=sum(states.values()), by_state={s.value: states.get(s.value, 0) for s in EntryState},
            lookups=lookups, by_zone=zones, hit_rate=zones["hit"] / lookups if lookups else 0.0,
            stores=counts.get("stores", 0), store_refusals=counts.get("store_refusals", 0),
            store_errors=counts.get("store_errors", 0), invalidations=counts.get("invalidations", 0),
            evicted=self.lifecycle.evicted, encoder=self.encoder.name,
            memo_hits=self.encoder.hits, memo_misses=self.encoder.misses,
            observations=counts.get("observations", 0),
            checks=checked, checks_wrong=wrong, shared=counts.get("shared", 0),
            exact_hits=counts.get("exact_hits", 0), near_exact_hits=counts.get("near_exact_hits", 0),
        )

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def _counted(self, decision: Decision) -> Decision:
        self._count(f"zone.{decision.zone.value}")
        return decision


@dataclass(frozen=True)
class _TenantPolicy:
    """The learned policy bound to one tenant: what the decider asks (``ServePolicy``)."""

    policy: LearnedPolicy
    tenant: str

    def point(self, stratum: str, packaged: float) -> tuple[float, str]:
        point = self.policy.point(self.tenant, stratum, packaged)
        return point.score, point.describe()

    def admits(self, entry_id: str, score: float) -> bool:
        return self.policy.admits(self.tenant, entry_id, score)
