"""The decide stage: candidates in, one Decision out.

Order matters and is the design: requests that must never be served from cache
(time-sensitive, high-risk, resets, corrections) are settled before any vector
is looked at; a topic switch drops the session's entries; then each candidate
is judged, the best zone wins, and a hit must still pass key-fact validation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Protocol, Sequence

import numpy as np

from smartcache.context.normalize import request_words, words_only
from smartcache.decide.decision import Decision, Reason, Scores, Zone
from smartcache.decide.evidence import Evidence, bare_reading, gather, one_sided
from smartcache.decide.match import ALL_RULES, MODIFY, Switches, judge
from smartcache.decide.rules import ReasonCode as R
from smartcache.decide.swaps import aligned_entities
from smartcache.decide.thresholds import Thresholds, ThresholdTable
from smartcache.decide.verifier import MODIFY as P_MODIFY, SAME as P_SAME, TreeVerifier
from smartcache.decide.validate import contradictions
from smartcache.defaults import DEFAULTS
from smartcache.fingerprint import HIGH_RISK_DOMAINS, ChangeFlag, Fingerprint
from smartcache.fingerprint.tags import corrects_an_answer, intent_domain
from smartcache.store import Entry, EntryState, Scope, ScoredEntry


@dataclass(frozen=True)
class Gate:
    """A verdict reached before any candidate is scored. ``cacheable``: whether the answer
    to this request may be written; ``ends_session``: the session's earlier answers no
    longer stand (a reset or a correction), so the cache must invalidate them."""

    zone: Zone
    reason: Reason
    cacheable: bool
    ends_session: bool = False

    def decision(self) -> Decision:
        return Decision(self.zone, (self.reason,), cacheable=self.cacheable)


WEIGHED = 4   # candidates the verifier weighs per request (the store's top-k is wider)


def tier_of(domain: str) -> str:
    return "high" if domain in HIGH_RISK_DOMAINS else "medium" if domain in ("support", "code") else "low"


def lang_of(text: str) -> str:
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def stratum_of(fp: Fingerprint) -> str:
    """The stratum a request's operating point belongs to: language, with or without a
    history, risk tier ("zh:single:low"). Learned points are kept per stratum."""
    kind = "history" if fp.signature.has_context else "single"
    return f"{lang_of(fp.signature.text)}:{kind}:{tier_of(fp.signature.domain)}"


class ServePolicy(Protocol):
    """What traffic has taught about serving (``smartcache.learn``), for one tenant. The
    decider asks it for the P(same) a hit needs, and whether an entry's own record allows
    serving it at a score; vetoes and gates are never its business."""

    def point(self, stratum: str, packaged: float) -> tuple[float, str]:
        """(the P(same) a hit needs, how that point was reached), given the packaged one."""
        ...

    def admits(self, entry_id: str, score: float) -> bool:
        ...


class Decider:
    """Turns a fingerprint and its candidates into a Decision. Stateless; the cache applies effects.

    With a ``verifier`` (the default in service) the rules are evidence and the
    learned verifier decides; without one, every rule is a veto and the turn
    cosine decides (the rules-only baseline, kept for comparison)."""

    # The config's list, not HIGH_RISK_DOMAINS: that constant classifies risk tiers, this one is a setting.
    def __init__(self, table: ThresholdTable, *,
                 disabled_domains: Iterable[str] = frozenset(DEFAULTS["disabled_domains"]),
                 repeat_only_domains: Iterable[str] = frozenset(DEFAULTS["repeat_only_domains"]),
                 validate: bool = True, switches: Switches = ALL_RULES,
                 verifier: TreeVerifier | None = None) -> None:
        self.table = table
        self.disabled_domains = frozenset(disabled_domains)
        self.repeat_only_domains = frozenset(repeat_only_domains)
        self.validate = validate
        self.switches = switches
        self.verifier = verifier

    def gate(self, fp: Fingerprint) -> Gate | None:
        """Settle requests that must not be served from cache whatever the candidates.
        This and ``refusal`` are the one place that says what a reset or a correction means."""
        flags = fp.signature.flags
        writable = self.refusal(fp, None) is None
        if fp.time_sensitive:
            return Gate(Zone.MISS, Reason(R.TIME_SENSITIVE, "the answer depends on the current time"), False)
        if fp.view.oversized:
            return Gate(Zone.MISS, Reason(R.TURN_TOO_LONG, "the turn is longer than the rules compare"), False)
        if fp.signature.domain in self.disabled_domains:
            return Gate(Zone.MISS, Reason(R.DOMAIN_DISABLED, f"caching is off for {fp.signature.domain!r}"), False)
        if not self.switches.change_detection:
            return None
        if ChangeFlag.RESET in flags:
            return Gate(Zone.MISS, Reason(R.RESET, "the user restarts the conversation"), writable,
                        ends_session=True)
        if ChangeFlag.CORRECTION in flags and corrects_an_answer(fp.signature.text, fp.signature.has_context):
            return Gate(Zone.MISS, Reason(R.CORRECTION, "the user corrects an earlier answer"), writable,
                        ends_session=True)
        return None

    def refusal(self, fp: Fingerprint, gate: Gate | None) -> R | None:
        """Why the answer to ``fp`` must not be cached, given the gate it met (None: it passed)."""
        if gate is not None and not gate.cacheable and not gate.ends_session:
            return gate.reason.code         # the time, the length or the domain settled it
        # A bare correction ("不对，改走 B 方案") means nothing without the history it corrects,
        # whatever settled the lookup (a reset beside it, or change detection switched off). A
        # first turn that only tells of a mistake ("发票抬头写错了，还能改吗") is a question.
        if ChangeFlag.CORRECTION in fp.signature.flags and not fp.signature.has_context \
                and corrects_an_answer(fp.signature.text, False):
            return R.CORRECTION
        return None

    def decide(self, fp: Fingerprint, candidates: Sequence[ScoredEntry],
               continued: Sequence[Entry] = ()) -> Decision:
        """``candidates``: the pre-filtered vector top-k; ``continued``: entries whose whole
        conversation is this request's history (the previous turn, if cached)."""
        gate = self.gate(fp)
        return gate.decision() if gate is not None else self.weigh(fp, candidates, continued)

    def weigh(self, fp: Fingerprint, candidates: Sequence[ScoredEntry],
              continued: Sequence[Entry] = (), policy: ServePolicy | None = None) -> Decision:
        """``decide`` for a request the gate let through (the caller ran ``gate`` already).
        ``policy``: the tenant's learned serving point, in place of the packaged one."""
        reasons: list[Reason] = []
        if self.repeat_only_domains:
            candidates = self._repeats_only(fp, candidates)
            if candidates is None:
                return Decision(Zone.MISS, (Reason(R.REPEATS_ONLY, f"{fp.signature.domain!r} is served only as a "
                                                   "repeat of the same request, and this is none"),), candidates=0)
        if fp.topic_switch and self.switches.change_detection:
            # The history no longer applies: only context-free (global) entries stay in play, and
            # those cached after this very history (the same conversation: a topic switch is
            # read from the turn and a word of the history can move it, so the same request
            # came with the same switch).
            history = fp.signature.history_hash
            candidates = [c for c in candidates
                          if c.entry.scope is Scope.GLOBAL or c.entry.signature.history_hash == history]
            reasons.append(Reason(R.TOPIC_SWITCH, "the turn leaves the conversation's topic"))
            continued = ()
        limits = self.table.for_domain(fp.signature.domain, tier_of(fp.signature.domain))
        if self.verifier is not None:
            return self._verified(fp, candidates, continued, limits, reasons, policy)
        judged = [(c.entry, judge(fp, c.entry, c.similarity, limits, self.switches)) for c in candidates]
        rank = {Zone.HIT: 2, Zone.HALF_HIT: 1, Zone.MISS: 0}
        judged.sort(key=lambda item: (rank[item[1].zone], item[1].turn), reverse=True)

        for entry, verdict in judged:
            if verdict.zone is not Zone.HIT:
                break
            problems = self._validate(fp, entry)
            if not problems:
                return Decision(Zone.HIT, tuple(reasons) + verdict.reasons, entry,
                                Scores(verdict.turn, verdict.context), verify=entry.state is EntryState.SUSPECT,
                                candidates=len(candidates))
            # The answer's facts contradict this request: the history still holds, the answer does not.
            return Decision(Zone.HALF_HIT, tuple(reasons) + verdict.reasons + tuple(
                Reason(R.VALIDATION_FAILED, p, entry.cache_id) for p in problems), entry,
                Scores(verdict.turn, verdict.context), candidates=len(candidates))

        half = next(((e, v) for e, v in judged if v.zone is Zone.HALF_HIT), None)
        if half is not None:
            entry, verdict = half
            return Decision(Zone.HALF_HIT, tuple(reasons) + verdict.reasons, entry,
                            Scores(verdict.turn, verdict.context), candidates=len(candidates))
        follow_up = self._continuation(fp, continued) if self.switches.change_detection else None
        if follow_up is not None:
            entry, reason = follow_up
            return Decision(Zone.HALF_HIT, tuple(reasons) + (reason,), entry, Scores(None, 1.0),
                            candidates=len(candidates))
        if judged:
            entry, verdict = judged[0]
            return Decision(Zone.MISS, tuple(reasons) + verdict.reasons, None,
                            Scores(verdict.turn, verdict.context), candidates=len(candidates))
        return Decision(Zone.MISS, tuple(reasons) + (Reason(R.NO_CANDIDATE, "nothing cached in this scope"),),
                        candidates=0)

    def _repeats_only(self, fp: Fingerprint, candidates: Sequence[ScoredEntry]) -> list[ScoredEntry] | None:
        """The candidates a high-risk answer may come from (``repeat_only_domains``). The exact
        and near-exact paths ran before: here a request of such a domain keeps only an entry of
        the same words after the same history (None when there is none), and any other request
        loses the entries of those domains. A paraphrase's answer may hold a dose, a clause or a
        rate that is not this request's, which no evidence here can check."""
        if fp.signature.domain not in self.repeat_only_domains:
            return [c for c in candidates if c.entry.domain not in self.repeat_only_domains]
        if not candidates:
            return []       # nothing to refuse: no_candidate says so
        words = request_words(fp.signature.text)
        same = [c for c in candidates if request_words(c.entry.signature.text) == words
                and c.entry.prefix_hash == fp.signature.history_hash]
        return same or None

    def evidence(self, fp: Fingerprint, candidates: Sequence[ScoredEntry], limits: Thresholds
                 ) -> tuple[list[Evidence], list[ScoredEntry]]:
        """Evidence on the ``WEIGHED`` most similar candidates at or above the similarity floor,
        and the candidates below it. Further candidates are not weighed: each costs a few
        milliseconds of rules, and the store returns them most similar first."""
        above = [c for c in candidates if c.similarity >= limits.half_hit][:WEIGHED]
        below = [c for c in candidates if c.similarity < limits.half_hit]
        return [gather(fp, c.entry, c.similarity) for c in above], below

    def _verified(self, fp: Fingerprint, candidates: Sequence[ScoredEntry], continued: Sequence[Entry],
                  limits: Thresholds, reasons: list[Reason], policy: ServePolicy | None = None) -> Decision:
        decision, nearest, same, features = self._verified_zone(fp, candidates, continued, limits, reasons, policy)
        if nearest is None:
            return decision
        return replace(decision, nearest=nearest, stratum=stratum_of(fp), scores=replace(decision.scores, same=same),
                       nearest_features=features)

    def _verified_zone(self, fp: Fingerprint, candidates: Sequence[ScoredEntry], continued: Sequence[Entry],
                       limits: Thresholds, reasons: list[Reason], policy: ServePolicy | None
                       ) -> tuple[Decision, Entry | None, float | None, tuple[float, ...] | None]:
        """The decision, with the best unvetoed candidate, its P(same) and its feature row (None
        when none)."""
        assert self.verifier is not None
        found, below = self.evidence(fp, candidates, limits)
        open_ = [e for e in found if e.veto is None]
        x = np.stack([e.features for e in open_]) if open_ else np.zeros((0, len(self.verifier.features)))
        probs = self.verifier.predict(x) if open_ else np.zeros((0, 3))
        tier, lang = tier_of(fp.signature.domain), lang_of(fp.signature.text)
        bare = self._bare_doubts(fp, open_, x, probs, tier, lang)

        def read(i: int) -> str:
            return f"; {bare[i]}" if i in bare else ""
        ranked = sorted(range(len(open_)), key=lambda i: probs[i, P_SAME], reverse=True)
        n = len(candidates)

        def scores(e: Evidence) -> Scores:
            return Scores(e.turn, e.context)

        packaged = limits.same if limits.same is not None else self.verifier.operating_point(
            tier, fp.signature.has_context, lang)
        needed, how = (packaged, "") if policy is None else policy.point(stratum_of(fp), packaged)
        # The same request word for word after normalisation (punctuation aside), after the same history, is the
        # same request: no model's doubt about it is worth a miss (an exact repeat was refused at
        # p(same) 0.886, turn cosine 1.000). Gates and vetoes have had their say already.
        words = request_words(fp.signature.text)
        exact = [i for i, e in enumerate(open_) if request_words(e.entry.signature.text) == words
                 and e.entry.prefix_hash == fp.signature.history_hash]
        if exact:
            ranked = exact[:1] + [i for i in ranked if i != exact[0]]
        nearest = (open_[ranked[0]].entry, float(probs[ranked[0], P_SAME]),
                   tuple(float(v) for v in x[ranked[0]])) if ranked else (None, None, None)
        for i in ranked[:1]:
            e, p = open_[i], float(probs[i, P_SAME])
            word_for_word = bool(exact) and i == exact[0]
            refused_before = policy is not None and not policy.admits(e.entry.cache_id, p)
            if (p < needed or refused_before) and not word_for_word:
                break
            # When the rules said something against it, say that the verifier outweighed them:
            # they are evidence, whose precision on public pairs is below a veto's.
            against = sorted({r.code.value for r in e.signals if r.code is not R.ASIDE_CHANGED})
            outweighed = f"; the verifier outweighed {', '.join(against)} (evidence, not vetoes)" if against else ""
            learned = not word_for_word and p < packaged
            why = (Reason(R.EXACT_MATCH, f"the same request and history, word for word; verifier p(same) "
                                         f"{p:.3f}{read(i)}", e.entry.cache_id) if word_for_word else
                   Reason(R.LEARNED_MATCH, f"verifier p(same) {p:.3f} >= the tenant's {how}, below the packaged "
                                           f"{packaged:.3f}{read(i)}; turn cosine {e.turn:.3f}{outweighed}",
                          e.entry.cache_id) if learned else
                   Reason(R.SEMANTIC_MATCH, f"verifier p(same) {p:.3f} >= {needed:.3f}{read(i)}; turn cosine "
                                            f"{e.turn:.3f}{outweighed}", e.entry.cache_id),) + e.signals
            problems = self._validate(fp, e.entry)
            if not problems:
                return Decision(Zone.HIT, tuple(reasons) + why, e.entry, scores(e),
                                verify=e.entry.state is EntryState.SUSPECT, candidates=n), *nearest
            # The answer's facts contradict this request: the history still holds, the answer does not.
            return Decision(Zone.HALF_HIT, tuple(reasons) + why + tuple(
                Reason(R.VALIDATION_FAILED, p, e.entry.cache_id) for p in problems), e.entry, scores(e),
                candidates=n), *nearest

        modifying = [e for e in found if e.veto is not None and e.veto_zone is Zone.HALF_HIT]
        modifying += [open_[i] for i in ranked if probs[i].argmax() == P_MODIFY]
        if modifying:
            e = modifying[0]
            why = e.veto if e.veto is not None else Reason(
                R.CONSTRAINT_CHANGE, f"verifier p(modify) {float(probs[open_.index(e), P_MODIFY]):.3f}",
                e.entry.cache_id)
            return Decision(Zone.HALF_HIT, tuple(reasons) + (why,) + e.signals, e.entry, scores(e),
                            candidates=n), *nearest
        follow_up = self._continuation(fp, continued) if self.switches.change_detection else None
        if follow_up is not None:
            entry, reason = follow_up
            return Decision(Zone.HALF_HIT, tuple(reasons) + (reason,), entry, Scores(None, 1.0), candidates=n), \
                *nearest
        if ranked:
            e, p = open_[ranked[0]], float(probs[ranked[0], P_SAME])
            short = (f"verifier p(same) {p:.3f} < {needed:.3f}" if p < needed else
                     f"verifier p(same) {p:.3f}, but this entry was answered differently at that score or above")
            point = f" (the tenant's {how})" if how and not how.startswith("packaged") else ""
            return Decision(Zone.MISS, tuple(reasons) + (Reason(
                R.SIMILAR_NOT_SAME, f"{short}{point}{read(ranked[0])}; turn cosine {e.turn:.3f}",
                e.entry.cache_id),) + e.signals, None, scores(e), candidates=n), *nearest
        vetoed = [e for e in found if e.veto is not None]
        if vetoed:
            e = vetoed[0]
            return Decision(Zone.MISS, tuple(reasons) + (e.veto,) + e.signals, None, scores(e), candidates=n), \
                None, None, None
        if below:
            c = below[0]
            return Decision(Zone.MISS, tuple(reasons) + (Reason(
                R.LOW_SIMILARITY, f"turn cosine {c.similarity:.3f} < {limits.half_hit}", c.entry.cache_id),),
                None, Scores(c.similarity, None), candidates=n), None, None, None
        return Decision(Zone.MISS, tuple(reasons) + (Reason(R.NO_CANDIDATE, "nothing cached in this scope"),),
                        candidates=0), None, None, None

    def _bare_doubts(self, fp: Fingerprint, open_: Sequence[Evidence], x: np.ndarray, probs: np.ndarray,
                     tier: str, lang: str) -> dict[int, str]:
        """A candidate whose history is on one side only must also pass as the two bare
        requests: where it does not, its P(same) is lowered (in ``probs``) to the bare pair's,
        and the returned note says why. The verifier has hardly seen the one-sided shape, and
        there it served "Excel: freeze the first column" the answer to "Excel: merge two
        columns" at p(same) 0.995 once the asker said what they were working on (0.30 bare).
        A turn that depends on the history never gets here (``referent_changed``). The bare
        pair's point is the stricter of the request's tier and its turn's alone (a request's
        domain comes from its history when its turn names none)."""
        assert self.verifier is not None
        sided = [i for i, e in enumerate(open_) if one_sided(e, fp)]
        if not sided:
            return {}
        mine = intent_domain(fp.signature.text)
        rows = bare_reading(x[sided], [intent_domain(open_[i].entry.signature.text) == mine for i in sided])
        q = self.verifier.predict(rows)[:, P_SAME]
        needed = max(self.verifier.operating_point(t, False, lang) for t in (tier, tier_of(mine)))
        notes: dict[int, str] = {}
        for i, qi in zip(sided, q.tolist()):
            if qi < needed and qi < probs[i, P_SAME]:
                notes[i] = (f"read as the bare requests (the history is on one side only), p(same) {qi:.3f} "
                            f"< {needed:.3f}, from {float(probs[i, P_SAME]):.3f}")
                modify = float(probs[i, P_MODIFY])
                probs[i] = (qi, modify, 1.0 - qi - modify)
        return notes

    def _continuation(self, fp: Fingerprint, continued: Sequence[Entry]) -> tuple[Entry, Reason] | None:
        """A follow-up that changes a condition of the cached previous turn: its history is
        that turn's whole conversation, so the prefix is reusable but the answer is not."""
        if not continued:
            return None
        entry = continued[0]
        probe = fp.signature
        mine, theirs = aligned_entities(probe, entry.signature)
        changed_entities = mine - theirs - probe.context_entities
        if probe.flags & MODIFY:
            flags = sorted(f.value for f in probe.flags & MODIFY)
            return entry, Reason(R.CONSTRAINT_CHANGE, f"follow-up modifies the previous request: {flags}",
                                 entry.cache_id)
        if changed_entities and probe.negations == 0 and len(probe.text) <= 40:
            return entry, Reason(R.CONSTRAINT_CHANGE, f"follow-up sets {sorted(changed_entities)}", entry.cache_id)
        return None

    def validate_repeat(self, current: str, answer: str) -> list[str]:
        """``_validate`` for a word-for-word repeat after the same history (the exact path):
        only the current turn's constraints are new to the cached answer."""
        return contradictions([current], answer) if self.validate else []

    def check_facts(self, fp: Fingerprint, entry: Entry) -> list[str]:
        """What of the cached answer's key facts contradicts this request (empty: nothing)."""
        return self._validate(fp, entry)

    def _validate(self, fp: Fingerprint, entry: Entry) -> list[str]:
        if not self.validate:
            return []
        # The cached answer was written for its own history: constraints stated there held for
        # it already, so with the same history only the current turn's constraints are new.
        same_history = entry.prefix_hash == fp.signature.history_hash
        history = [] if same_history else [t.text for t in fp.view.history if t.role == "user"]
        user_turns = history + [fp.signature.text]
        return contradictions(user_turns, entry.answer.text)


__all__ = ["Decider", "Gate", "ServePolicy", "lang_of", "stratum_of", "tier_of", "words_only"]
