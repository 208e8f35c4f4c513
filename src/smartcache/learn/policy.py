"""What a tenant's own traffic has taught: the P(same) a hit needs, under an error bound δ.

Every request that reaches the engine while the verifier had weighed an unvetoed
candidate is an observation: the engine's answer against the candidate's, judged same or
different, at the candidate's P(same). So is every served answer the cache checks
against a fresh one. The observations of a tenant are pooled across entries, per
stratum (language, with or without a history, risk tier), in a histogram over the
score; so a new entry inherits what the tenant's traffic has taught, where vCache
learns each entry alone and from scratch.

The point a stratum serves at is the lowest score τ below the packaged point whose band
[τ, packaged] — what learning adds to what is served — has a one-sided 95 % upper bound on
P(wrong) of at most δ on its own labels, and whose lowest labels (``segment`` of them) are
not much worse: right answers of the checked hits far above it never dilute it. Until a
band has earned that (about 300 labels at δ = 0.01), the packaged calibration stands; when
the checks prove it wrong (the lower bound above δ: a drift, a changed engine), the point
rises by itself. An entry answered differently at some score
is never served again at or below that score: its own evidence refines the pooled one.

    >>> policy = LearnedPolicy(LearningConfig(error_bound=0.01))
    >>> policy.point("t", "en:single:low", 0.9).source
    'packaged'
    >>> for i in range(400):
    ...     _ = policy.observe(Observation("t", "en:single:low", 0.6 + (i % 40) / 100, True, f"e{i}", FORWARDED,
    ...                                    session=f"user{i}"))
    >>> point = policy.point("t", "en:single:low", 0.9)
    >>> point.source, point.score < 0.9, point.upper <= 0.01
    ('learned', True, True)
    >>> policy.point("other", "en:single:low", 0.9).source      # each tenant learns alone
    'packaged'
"""

from __future__ import annotations

import json
import math
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from smartcache.defaults import section
from smartcache.learn.bound import EDGES, Histogram, bin_of, lower, upper, uppers

FORWARDED = "forwarded"    # the request went to the engine anyway: its answer is a free label
CHECK = "check"            # a served answer, checked against a fresh one (an engine call of its own)
STATE_FORMAT = 1
REFRESH = 16              # labels of a stratum after which its point is computed again
_LEARN = section("learning")        # field defaults live in data/defaults.toml only


@dataclass(frozen=True)
class LearningConfig:
    """``error_bound``: δ, the P(wrong) a served region may have at its 95 % upper bound;
    ``strict_error_bound``: δ for the high-risk tier. ``check_floor`` / ``check_cap``: the
    share of hits checked against the engine, at least / at most. ``half_life``: after
    this many observations of a stratum an old one weighs half. ``segment``: how many of
    the lowest observations of a served region must themselves stay under
    ``segment_factor`` × δ. ``max_entries``: entries whose own evidence is remembered, and
    requests whose answers are tracked across sessions. ``share_after``: sessions that must
    get the same answer to one question (its words, or rewordings answered alike) before its
    answers enter the tenant's global pool; ``share_after_proven``: as many, fewer, once the
    tenant's own traffic bounds P(a later session asking the same words gets another answer)
    at δ (``sharing_point``; 0: never fewer). ``observations_kept``: labelled evidence rows kept
    per tenant for ``smartcache train --observations`` (0: none).
    ``tenants``: a tenant's own ``error_bound`` and ``strict_error_bound``, over the two above
    (``{"acme": {"error_bound": 0.005}}``; TOML ``[learning.tenants.acme]``)."""

    enabled: bool = _LEARN["enabled"]
    error_bound: float = _LEARN["error_bound"]
    strict_error_bound: float = _LEARN["strict_error_bound"]
    confidence: float = _LEARN["confidence"]
    check_floor: float = _LEARN["check_floor"]
    check_cap: float = _LEARN["check_cap"]
    half_life: float = _LEARN["half_life"]
    segment: int = _LEARN["segment"]
    segment_factor: float = _LEARN["segment_factor"]
    max_entries: int = _LEARN["max_entries"]
    persist_every: int = _LEARN["persist_every"]
    share_after: int = _LEARN["share_after"]
    share_after_proven: int = _LEARN["share_after_proven"]
    labels_per_session: int = _LEARN["labels_per_session"]
    observations_kept: int = _LEARN["observations_kept"]
    tenants: Any = ()       # read as a mapping; kept as sorted (tenant, error_bound, strict_error_bound), None: unset

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise ValueError("learning.enabled must be true or false")
        object.__setattr__(self, "tenants", self._tenant_bounds(self.tenants))
        for name in ("error_bound", "strict_error_bound", "check_floor", "check_cap"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"learning.{name} must be a number between 0 and 1, got {value!r}")
        if not 0.5 <= self.confidence < 1:
            raise ValueError("learning.confidence must be in [0.5, 1)")
        if self.check_floor > self.check_cap:
            raise ValueError("learning.check_floor must not exceed learning.check_cap")
        if not isinstance(self.share_after, int) or self.share_after < 0 or self.share_after == 1:
            raise ValueError("learning.share_after must be 0 (never) or a number of sessions of at least 2")
        if not isinstance(self.share_after_proven, int) or self.share_after_proven < 0 \
                or self.share_after_proven == 1 or self.share_after_proven > max(self.share_after, 2):
            # 1 would share a first answer at once: no later session would be compared with it again.
            raise ValueError("learning.share_after_proven must be 0 (never fewer) or a number of sessions "
                             "from 2 to share_after")
        if not isinstance(self.labels_per_session, int) or self.labels_per_session < 1:
            raise ValueError("learning.labels_per_session must be a positive number of labels")
        if not isinstance(self.observations_kept, int) or isinstance(self.observations_kept, bool) \
                or self.observations_kept < 0:
            raise ValueError("learning.observations_kept must be a number of rows, 0 or more")
        if not all(math.isfinite(float(v)) for v in (self.half_life, self.segment, self.segment_factor)):
            raise ValueError("learning.half_life, segment and segment_factor must be finite numbers")
        if self.half_life <= 0 or self.segment < 1 or self.segment_factor < 1 or self.max_entries < 1 \
                or self.persist_every < 1:
            raise ValueError("learning.half_life, segment, segment_factor, max_entries and persist_every "
                             "must be positive (segment_factor at least 1)")

    def _tenant_bounds(self, given: Any) -> tuple[tuple[str, float | None, float | None], ...]:
        """(tenant, error_bound, strict_error_bound), sorted; None where the tenant sets none, so
        the global bound stands (also after a replace() of it). A mapping or this tuple form."""
        if isinstance(given, tuple):
            if not all(isinstance(t, tuple) and len(t) == 3 for t in given):
                raise ValueError("learning.tenants must map tenant names to tables of error bounds")
            if len({t[0] for t in given}) != len(given):
                raise ValueError("learning.tenants names a tenant twice")
            given = {t[0]: {k: v for k, v in zip(("error_bound", "strict_error_bound"), t[1:]) if v is not None}
                     for t in given}
        if not isinstance(given, dict):
            raise ValueError("learning.tenants must map tenant names to tables of error bounds")
        out = []
        for tenant, table in given.items():
            if not isinstance(tenant, str) or not tenant or not isinstance(table, dict):
                raise ValueError(f"learning.tenants.{tenant!r} must be a table of error bounds")
            unknown = set(table) - {"error_bound", "strict_error_bound"}
            if unknown:
                raise ValueError(f"learning.tenants.{tenant}: unknown {sorted(unknown)} "
                                 "(error_bound and strict_error_bound only)")
            for name, value in table.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                    raise ValueError(f"learning.tenants.{tenant}.{name} must be a number between 0 and 1, "
                                     f"got {value!r}")
            bound, strict = table.get("error_bound"), table.get("strict_error_bound")
            out.append((tenant, None if bound is None else float(bound), None if strict is None else float(strict)))
        return tuple(sorted(out))

    def delta(self, stratum: str, tenant: str = "") -> float:
        """δ of a stratum for a tenant: its own bound where ``tenants`` sets one; the high-risk
        tier's strict bound in that tier."""
        error_bound, strict = self.error_bound, self.strict_error_bound
        for name, own, own_strict in self.tenants:
            if name == tenant:
                error_bound = own if own is not None else error_bound
                strict = own_strict if own_strict is not None else strict
                break
        return strict if stratum.endswith(":high") else error_bound


@dataclass(frozen=True)
class Observation:
    """One label from traffic: the candidate ``entry`` at P(same) ``score`` was (``correct``)
    or was not the answer the engine gave this request. ``kind``: FORWARDED or CHECK."""

    tenant: str
    stratum: str
    score: float
    correct: bool
    entry: str
    kind: str = FORWARDED
    session: str = ""       # who sent the request: one session adds at most labels_per_session labels


MEMBERS = 16        # phrasings a class shares: the common wordings of one question

@dataclass(frozen=True)
class Witnesses:
    """Sessions that sent one request (word for word, same history and versions) and got the
    same answer as ``entry``'s. ``personal``: two sessions got different answers, or the
    request or answer holds personal data: never shared. ``shared``: promoted already.

    A reworded request the engine answered the same joins the first phrasing's class: its
    record names that one's key as ``root``, and the root's record counts the sessions of
    every phrasing and lists the other phrasings' first entries in ``members``."""

    entry: str
    sessions: tuple[str, ...]
    personal: bool = False
    shared: bool = False
    root: str = ""
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServePoint:
    """The P(same) a hit needs in one stratum, and what it rests on: ``packaged`` (the
    shipped calibration; too little traffic yet), ``learned`` (the tenant's observations
    bound the region [score, 1]) or ``tightened`` (they prove the packaged point wrong).
    ``n`` / ``wrong``: the (decayed) observations of that region; ``upper``: its bound."""

    score: float
    source: str
    n: float = 0.0
    wrong: float = 0.0
    upper: float = 1.0
    delta: float = 0.01

    def describe(self) -> str:
        if self.source == "packaged":
            return f"packaged point {self.score:.3f}"
        return (f"{self.source} point {self.score:.3f}: {self.wrong:.0f} wrong of {self.n:.0f} observed, "
                f"P(wrong) <= {self.upper:.4f} (95 %) vs δ {self.delta:g}")


@dataclass(frozen=True)
class SharingPoint:
    """How many sessions must get one answer before it is shared, and what that rests on:
    ``compared`` later sessions' answers to words another session had asked (decayed),
    ``differed`` of them, and the 95 % upper bound on P(differ), against δ."""

    need: int
    source: str             # "packaged" or "proven"
    compared: float = 0.0
    differed: float = 0.0
    upper: float = 1.0
    delta: float = 0.01

    def describe(self) -> str:
        return (f"shared after {self.need} sessions ({self.source}): {self.differed:.0f} of {self.compared:.0f} "
                f"later sessions answered otherwise, P(differ) <= {self.upper:.4f} (95 %) vs δ {self.delta:g}")


class _Tenant:
    """One tenant's learned state: a histogram per stratum, the entries' own floors, and
    the hits served and checked per stratum."""

    def __init__(self) -> None:
        self.strata: dict[str, Histogram] = defaultdict(Histogram)
        self.floors: OrderedDict[str, float] = OrderedDict()       # entry -> highest score judged different
        self.served: dict[str, int] = defaultdict(int)
        self.checks: list[int] = [0, 0]                            # [checked, found wrong]
        self.points: dict[tuple[str, float], ServePoint] = {}      # memo, refreshed as labels come
        self.stale: dict[str, int] = defaultdict(int)              # labels of a stratum since its memo
        self.shared: OrderedDict[str, Witnesses] = OrderedDict()   # request key -> who got which answer
        self.senders: OrderedDict[str, int] = OrderedDict()        # session -> labels it added
        self.labels: dict[str, int] = defaultdict(int)             # labels added per stratum
        # Later sessions' answers to words another session asked, against the first answer:
        # [compared, differed] (decayed like a stratum) and the labels that came.
        self.agreement: list[float] = [0.0, 0.0]
        self.agreement_labels = 0
        self.unsaved = 0


class LearnedPolicy:
    """Per-tenant pooled P(correct | score), thread-safe. Holds no reference to the store:
    the cache saves ``state(tenant)`` and hands it back with ``restore``."""

    def __init__(self, config: LearningConfig | None = None) -> None:
        self.config = config or LearningConfig()
        self._tenants: dict[str, _Tenant] = defaultdict(_Tenant)
        # What this process learned since its last save, apart: a save merges it into what the
        # store holds (other replicas' news included), never overwrites that with its own copy.
        self._news: dict[str, _Tenant] = defaultdict(_Tenant)
        self._lock = threading.Lock()
        self._keep = 0.5 ** (1.0 / self.config.half_life)

    # -- deciding ---------------------------------------------------------------------------

    def point(self, tenant: str, stratum: str, packaged: float) -> ServePoint:
        """The P(same) a hit of ``stratum`` needs for ``tenant``, given the packaged point."""
        with self._lock:
            state = self._tenants.get(tenant)
            if state is None or stratum not in state.strata:
                return ServePoint(packaged, "packaged", delta=self.config.delta(stratum, tenant))
            memo = state.points.get((stratum, packaged))
            if memo is None:
                memo = state.points[(stratum, packaged)] = self._point(state.strata[stratum], packaged,
                                                                       self.config.delta(stratum, tenant))
            return memo

    def _point(self, hist: Histogram, packaged: float, delta: float) -> ServePoint:
        conf = self.config.confidence
        right, wrong = (np.asarray(c) for c in hist.counts())
        seen = right + wrong
        top = bin_of(min(packaged, 1.0))       # the bin holding the packaged point
        # Below the packaged point, what learning adds is the band [EDGES[i], packaged]: it must
        # hold on its own, never diluted by the checked hits far above it.
        band_n = np.cumsum(seen[top::-1])[::-1]
        band_k = np.cumsum(wrong[top::-1])[::-1]
        bound = uppers(band_k, band_n, conf)
        # ... and so must its edge: the lowest bins of the band holding ``segment`` labels.
        below_n, below_k = np.concatenate(([0.0], np.cumsum(seen))), np.concatenate(([0.0], np.cumsum(wrong)))
        starts = np.arange(top + 1)
        ends = np.minimum(np.searchsorted(below_n, below_n[starts] + self.config.segment - 1e-9), top + 1)
        edge = uppers(below_k[ends] - below_k[starts], below_n[ends] - below_n[starts], conf)
        valid = (seen[:top + 1] > 0) & (bound <= delta) & (edge <= self.config.segment_factor * delta)
        at = _region(list(right), list(wrong), packaged)
        if lower(at[1], at[0], conf) > delta:
            # The checks prove the packaged point wrong (a drift, a changed engine): the lowest region
            # above it whose own bound holds, or nothing but word-for-word repeats.
            n_region, k_region = np.cumsum(seen[::-1])[::-1], np.cumsum(wrong[::-1])[::-1]
            above = uppers(k_region[top + 1:], n_region[top + 1:], conf)
            ok = np.flatnonzero((seen[top + 1:] > 0) & (above <= delta))
            if ok.size:
                i = top + 1 + int(ok[0])
                return ServePoint(EDGES[i], "tightened", float(n_region[i]), float(k_region[i]),
                                  float(above[ok[0]]), delta)
            return ServePoint(1.01, "tightened", at[0], at[1], upper(at[1], at[0], conf), delta)
        if valid.any():
            i = int(np.argmax(valid))           # the lowest valid band serves the most
            if EDGES[i] < packaged:
                return ServePoint(EDGES[i], "learned", float(band_n[i]), float(band_k[i]), float(bound[i]), delta)
        return ServePoint(packaged, "packaged", at[0], at[1], upper(at[1], at[0], conf), delta)

    def admits(self, tenant: str, entry: str, score: float) -> bool:
        """False when ``entry`` was answered differently at this score or above."""
        with self._lock:
            state = self._tenants.get(tenant)
            floor = None if state is None else state.floors.get(entry)
        return floor is None or score > floor

    def check_rate(self, tenant: str, stratum: str) -> float:
        """The share of a stratum's hits to check: high while few were served (the bound
        needs ~3/δ labels), down to the floor as they accumulate."""
        with self._lock:
            served = self._tenants[tenant].served[stratum] if tenant in self._tenants else 0
        wanted = 3.0 / self.config.delta(stratum, tenant)
        return min(self.config.check_cap, max(self.config.check_floor, wanted / max(served, 1) * self.config.check_cap))

    # -- learning ---------------------------------------------------------------------------

    def served(self, tenant: str, stratum: str) -> None:
        with self._lock:
            self._tenants[tenant].served[stratum] += 1
            self._news[tenant].served[stratum] += 1

    def observe(self, obs: Observation) -> bool:
        """Record one label; True when the tenant's state has enough unsaved news to save. A
        session past its ``labels_per_session`` adds nothing."""
        if not 0.0 <= obs.score <= 1.0 or math.isnan(obs.score):
            raise ValueError(f"a score must be a probability, got {obs.score!r}")
        with self._lock:
            state = self._tenants[obs.tenant]
            # Labels are the engine's answers, but which requests get labelled is the client's
            # choice: one session (requests without one are a single anonymous sender) may not
            # fill the pool with "same" labels on the near-duplicates it picked. A wrong label
            # only ever makes the cache stricter: it always counts.
            news = self._news[obs.tenant]
            if obs.correct:
                sent = state.senders.get(obs.session, 0)
                if sent >= self.config.labels_per_session:
                    return False
                for record in (state, news):
                    record.senders[obs.session] = record.senders.get(obs.session, 0) + 1
                    record.senders.move_to_end(obs.session)
                    while len(record.senders) > self.config.max_entries:
                        record.senders.popitem(last=False)
            for record in (state, news):
                record.strata[obs.stratum].add(obs.score, obs.correct, self._keep)
                record.labels[obs.stratum] += 1
            # A point is recomputed (~0.5 ms) on the next lookup after every REFRESH labels of its
            # stratum, and at once after a wrong label at or above it: that one may close a region.
            mine = [key for key in state.points if key[0] == obs.stratum]
            state.stale[obs.stratum] += 1
            if state.stale[obs.stratum] >= REFRESH or (
                    not obs.correct and any(obs.score >= state.points[key].score for key in mine)):
                for key in mine:
                    del state.points[key]
                state.stale[obs.stratum] = 0
            for record in (state, news):
                if not obs.correct:
                    record.floors[obs.entry] = max(obs.score, record.floors.get(obs.entry, 0.0))
                    record.floors.move_to_end(obs.entry)
                    while len(record.floors) > self.config.max_entries:
                        record.floors.popitem(last=False)
                if obs.kind == CHECK:
                    record.checks[0] += 1
                    record.checks[1] += not obs.correct
            state.unsaved += 1
            return state.unsaved >= self.config.persist_every

    def witnesses(self, tenant: str, key: str) -> Witnesses | None:
        with self._lock:
            state = self._tenants.get(tenant)
            return None if state is None else state.shared.get(key)

    def shared_keys(self, tenant: str) -> list[str]:
        """The requests whose answers are tracked across sessions, oldest first."""
        with self._lock:
            state = self._tenants.get(tenant)
            return [] if state is None else list(state.shared)

    def witness(self, tenant: str, key: str, record: Witnesses) -> bool:
        """Keep ``record`` for the request ``key`` (the most recent ``max_entries`` are kept);
        True when the tenant's state has enough unsaved news to save."""
        with self._lock:
            state = self._tenants[tenant]
            for kept in (state, self._news[tenant]):
                kept.shared[key] = record
                kept.shared.move_to_end(key)
                while len(kept.shared) > self.config.max_entries:
                    kept.shared.popitem(last=False)
            state.unsaved += 1
            return state.unsaved >= self.config.persist_every

    def compared(self, tenant: str, session: str, same: bool) -> bool:
        """Record that a later ``session``'s answer to words another session had asked was
        (``same``) or was not the first answer; True when the tenant's state should be saved.
        A session past its ``labels_per_session`` adds no "same" (the client picks what it
        repeats); a difference always counts: it only makes sharing stricter."""
        with self._lock:
            state = self._tenants[tenant]
            if same:
                if state.senders.get(session, 0) >= self.config.labels_per_session:
                    return False
                for record in (state, self._news[tenant]):
                    record.senders[session] = record.senders.get(session, 0) + 1
                    record.senders.move_to_end(session)
                    while len(record.senders) > self.config.max_entries:
                        record.senders.popitem(last=False)
            for record in (state, self._news[tenant]):
                record.agreement = [record.agreement[0] * self._keep + 1.0,
                                    record.agreement[1] * self._keep + (not same)]
                record.agreement_labels += 1
            state.unsaved += 1
            return state.unsaved >= self.config.persist_every

    def sharing_point(self, tenant: str) -> SharingPoint:
        """Sessions one answer must reach before it is shared: ``share_after_proven`` once the
        tenant's comparisons bound P(a later session is answered otherwise) at δ at 95 % (with
        no difference seen, ~300 comparisons at δ = 0.01), else ``share_after``. The comparisons
        keep coming while it is lowered (each class's last unshared session is one), so a
        tenant whose answers turn personal goes back by itself."""
        delta = self.config.delta("any:single:low", tenant)
        with self._lock:
            state = self._tenants.get(tenant)
            compared, differed = state.agreement if state is not None else (0.0, 0.0)
        bound = upper(differed, compared, self.config.confidence)
        proven = self.config.share_after_proven
        if proven and bound <= delta:
            return SharingPoint(proven, "proven", compared, differed, bound, delta)
        return SharingPoint(self.config.share_after, "packaged", compared, differed, bound, delta)

    def live(self, tenant: str | None = None) -> tuple[int, int]:
        """(checked, found wrong) of the served answers checked so far (one tenant, or all)."""
        with self._lock:
            states = [self._tenants[tenant]] if tenant in self._tenants else [] if tenant else \
                list(self._tenants.values())
            return sum(s.checks[0] for s in states), sum(s.checks[1] for s in states)

    def tenants(self) -> list[str]:
        with self._lock:
            return list(self._tenants)

    def summary(self, tenant: str) -> dict[str, Any]:
        """What a stratum has learned, for admin and reports: observations, wrong, checks."""
        with self._lock:
            state = self._tenants.get(tenant)
            if state is None:
                return {}
            return {name: {"observations": round(h.total, 1), "wrong": round(sum(h.counts()[1]), 1),
                           "served": state.served.get(name, 0)} for name, h in state.strata.items()}

    # -- state ------------------------------------------------------------------------------

    def state(self, tenant: str) -> str:
        """The tenant's learned state as JSON (reports; what a lone process would save)."""
        with self._lock:
            return _dump(self._tenants[tenant])

    def restore(self, tenant: str, text: str) -> None:
        """Take back what ``state`` gave (after a restart, or from another replica): the tenant's
        state is that, and nothing is news. A state of another format or a broken one raises
        ValueError and leaves the tenant as it was."""
        fresh = _parse(text)
        with self._lock:
            self._tenants[tenant] = fresh
            self._news.pop(tenant, None)

    # -- replicas ---------------------------------------------------------------------------
    # A save is ``take_news``, then the store's atomic ``update_state(name, merge)`` with
    # ``merge = lambda stored: policy.merged(stored, news)``, then ``adopt`` of what was written
    # (or ``give_back`` of the news when the write failed). Each replica adds what it learned
    # to what the others did, and reads theirs back.

    def take_news(self, tenant: str) -> _Tenant:
        """What was learned since the last save, handed over to be saved; marks it saved."""
        with self._lock:
            news = self._news.pop(tenant, None) or _Tenant()
            if tenant in self._tenants:
                self._tenants[tenant].unsaved = 0
            return news

    def merged(self, stored: str | None, news: _Tenant) -> str:
        """``news`` added to the ``stored`` state (None: nothing stored yet), as JSON: the stored
        histograms decay by the labels that came since, as if those had been observed after
        them, floors take the higher score, counts add, and the sessions that witnessed a request
        are pooled. A stored state that cannot be read is replaced (and logged by the caller's
        read). Pure: the store may call it again after a lost race."""
        base = _Tenant()
        if stored is not None:
            try:
                base = _parse(stored)
            except ValueError:
                base = _Tenant()
        return _dump(self._combine(base, news))

    def adopt(self, tenant: str, text: str) -> None:
        """The state just written (every replica's news merged) becomes this one's, with what
        was learned meanwhile still on top and still news."""
        base = _parse(text)
        with self._lock:
            self._tenants[tenant] = self._combine(base, self._news.get(tenant) or _Tenant())

    def give_back(self, tenant: str, news: _Tenant) -> None:
        """A save failed: ``news`` is news again, before what came since."""
        with self._lock:
            self._news[tenant] = self._combine(news, self._news.get(tenant) or _Tenant())

    def _combine(self, base: _Tenant, news: _Tenant) -> _Tenant:
        cap = self.config.max_entries
        out = _Tenant()
        for name in set(base.strata) | set(news.strata):
            old, new = base.strata.get(name), news.strata.get(name)
            fade = self._keep ** news.labels.get(name, 0)
            old_right, old_wrong = old.counts() if old else ([0.0] * len(EDGES), [0.0] * len(EDGES))
            new_right, new_wrong = new.counts() if new else ([0.0] * len(EDGES), [0.0] * len(EDGES))
            out.strata[name] = Histogram([a * fade + b for a, b in zip(old_right, new_right)],
                                         [a * fade + b for a, b in zip(old_wrong, new_wrong)])
            out.labels[name] = base.labels.get(name, 0) + news.labels.get(name, 0)
        for entry, score in (*base.floors.items(), *news.floors.items()):
            out.floors[entry] = max(score, out.floors.get(entry, 0.0))
            out.floors.move_to_end(entry)
        for name in set(base.served) | set(news.served):
            out.served[name] = base.served.get(name, 0) + news.served.get(name, 0)
        out.checks = [base.checks[0] + news.checks[0], base.checks[1] + news.checks[1]]
        fade = self._keep ** news.agreement_labels
        out.agreement = [base.agreement[0] * fade + news.agreement[0], base.agreement[1] * fade + news.agreement[1]]
        out.agreement_labels = base.agreement_labels + news.agreement_labels
        for session, n in (*base.senders.items(), *news.senders.items()):
            out.senders[session] = out.senders.get(session, 0) + n
            out.senders.move_to_end(session)
        out.shared.update(base.shared)
        for key, record in news.shared.items():
            old = out.shared.get(key)
            if old is not None:
                # The root is the news' (this process's latest reading of the record, which may
                # have left a class); the rest pools.
                record = Witnesses(old.entry, old.sessions + tuple(x for x in record.sessions if x not in old.sessions),
                                   old.personal or record.personal, old.shared or record.shared,
                                   record.root,
                                   (old.members + tuple(x for x in record.members if x not in old.members))[:MEMBERS])
            out.shared[key] = record
            out.shared.move_to_end(key)
        for kept in (out.floors, out.senders, out.shared):
            while len(kept) > cap:
                kept.popitem(last=False)
        return out


def _dump(state: _Tenant) -> str:
    return json.dumps({"format": STATE_FORMAT,
                       "strata": {k: h.to_json() for k, h in state.strata.items()},
                       "floors": dict(state.floors), "served": dict(state.served),
                       "checks": state.checks, "senders": dict(state.senders),
                       "agreement": [*state.agreement, state.agreement_labels],
                       "shared": {k: [w.entry, list(w.sessions), w.personal, w.shared, w.root, list(w.members)]
                                  for k, w in state.shared.items()}}, separators=(",", ":"))


def _parse(text: str) -> _Tenant:
    """A state ``_dump`` wrote; ValueError when it is of another format or broken."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise ValueError(f"learned state of another format, not {STATE_FORMAT}")
        fresh = _Tenant()
        fresh.strata.update({str(k): Histogram.from_json(v) for k, v in data["strata"].items()})
        fresh.floors.update({str(k): float(v) for k, v in data["floors"].items()})
        fresh.served.update({str(k): int(v) for k, v in data["served"].items()})
        fresh.checks = [int(data["checks"][0]), int(data["checks"][1])]
        fresh.senders.update({str(k): int(v) for k, v in data.get("senders", {}).items()})
        compared, differed, labels = data.get("agreement", (0.0, 0.0, 0))     # saved before: none yet
        fresh.agreement, fresh.agreement_labels = [float(compared), float(differed)], int(labels)
        if not (math.isfinite(fresh.agreement[0]) and 0 <= fresh.agreement[1] <= fresh.agreement[0]):
            raise ValueError("agreement counts must be finite, with differed <= compared")
        fresh.shared.update({str(k): Witnesses(str(v[0]), tuple(map(str, v[1])), bool(v[2]), bool(v[3]),
                                               str(v[4]) if len(v) > 4 else "",    # saved before classes: its own
                                               tuple(map(str, v[5])) if len(v) > 5 else ())
                             for k, v in data.get("shared", {}).items()})
        for name, hist in fresh.strata.items():
            counts = hist.right + hist.wrong
            if name.count(":") != 2 or not all(math.isfinite(v) and v >= 0 for v in counts):
                raise ValueError(f"stratum {name!r} is not lang:kind:tier with counts >= 0")
    except (KeyError, TypeError, IndexError, AttributeError, json.JSONDecodeError) as exc:
        raise ValueError(f"unreadable learned state: {exc!r}") from exc
    return fresh


def _region(right: list[float], wrong: list[float], score: float) -> tuple[float, float]:
    """(observations, wrong) of the bins at or above the one holding ``score``."""
    i = bin_of(min(score, 1.0))
    return sum(right[i:]) + sum(wrong[i:]), sum(wrong[i:])


__all__ = ["CHECK", "FORWARDED", "MEMBERS", "LearnedPolicy", "LearningConfig", "Observation", "ServePoint",
           "SharingPoint", "Witnesses"]
