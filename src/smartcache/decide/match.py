"""Judging one candidate entry against the current request: the rules that refuse a hit.

Vectors say "these read alike"; these rules say why reading alike is not
enough: another context, a reversed intent, another entity, a one-word swap
that makes it a different task ("请假邮件" / "投诉邮件"), two words that trade
places ("小明借了小红" / "小红借了小明"), an opposite word, a plain negation,
another term to define, an added condition.

    >>> substituted_spans("帮我写一封请假邮件", "帮我写一封投诉邮件")
    [('请假', '投诉')]
    >>> substituted_spans("怎么部署这个服务", "如何部署这个服务")
    []

The comparisons themselves live in ``swaps`` (what one text changed from the other),
``polarity`` (plain Chinese negation) and ``tokens`` (the diff they share); this module
orders them into a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from smartcache.decide import history
from smartcache.decide.decision import Reason, Zone
from smartcache.decide.polarity import _polarity_differs
from smartcache.decide.swaps import (
    _ORDER_MATTERS, _anaphora, _defined_term, _edited_turn, _noun_swap, _opposite_swap,
    _order_swapped, _roles_swapped, aligned_entities, comparative_reversed, exchanged_spans, substituted_spans,
)
from smartcache.decide.thresholds import Thresholds
from smartcache.decide.tokens import _is_question_words, _tokens  # noqa: F401  (_tokens: tests read it here)
from smartcache.fingerprint import ChangeFlag, Fingerprint, actions_conflict, has_reference, skeletons_conflict
from smartcache.fingerprint.tags import actions_named
from smartcache.store import Entry, Scope


@dataclass(frozen=True)
class Switches:
    """Which rule families judge a candidate. All on in service; each can be turned off to
    measure what it is worth (``smartcache eval --ablate``)."""

    tags: bool = True               # skeleton, actions, entities, nouns, order, one-slot edits
    change_detection: bool = True   # negation / reversal, change flags, corrections, resets, topic switch
    context_view: bool = True       # the history scored apart from the turn


ALL_RULES = Switches()


@dataclass(frozen=True)
class Judgement:
    """The verdict on one candidate: its zone, why, and the context similarity used."""

    zone: Zone
    reasons: tuple[Reason, ...]
    turn: float
    context: float | None


def context_similarity(fp: Fingerprint, entry: Entry) -> float | None:
    """1.0 for byte-identical histories (or none on both sides); the cosine of the
    context vectors otherwise; None when only one side has a context."""
    if entry.prefix_hash == fp.signature.history_hash:
        return 1.0
    if fp.context_vector is None and entry.context_vector is None:
        return 1.0
    if fp.context_vector is None or entry.context_vector is None:
        return None
    # Stores keep context vectors in float16. Compared as they come, one context against
    # itself lands anywhere in 1 +- 1e-5, on either side of the verifier's "same context"
    # split (trained in float32, at 1 - 1.2e-7). Both sides rounded alike, a context equals
    # itself exactly, and any other pair is a cosine of the rounded vectors.
    probe = fp.context_vector.astype(np.float16).astype(np.float32)
    cached = entry.context_vector.astype(np.float16).astype(np.float32)
    if np.array_equal(probe, cached):
        return 1.0
    norms = float(np.linalg.norm(probe) * np.linalg.norm(cached))
    return float(np.dot(probe, cached)) / norms if norms else 0.0


_UNRESOLVED_REFERENCE = re.compile(r"那家|这家|那个|它|\bit\b|\bthat one\b|\bthis one\b|\bthere\b")
# Flags that modify a request (rather than reverse, correct or reset it): half-hit material.
MODIFY = frozenset({ChangeFlag.ADDITION, ChangeFlag.REMOVAL, ChangeFlag.REPLACEMENT})

# A verdict of the candidate being judged: zone, reason code, detail, context similarity.
Verdict = Callable[[Zone, str, str, float | None], Judgement]


def judge(fp: Fingerprint, entry: Entry, turn: float, limits: Thresholds,
          switches: Switches = ALL_RULES) -> Judgement:
    """Zone for serving ``entry`` to the request ``fp`` whose turn cosine to it is ``turn``."""
    eid = entry.cache_id

    def verdict(zone: Zone, code: str, detail: str, context: float | None) -> Judgement:
        return Judgement(zone, (Reason(code, detail, eid),), turn, context)

    context, refusal = _context_gate(fp, entry, limits, switches, verdict)
    if refusal is not None:
        return refusal
    if turn < limits.half_hit:
        return verdict(Zone.MISS, "low_similarity", f"turn cosine {turn:.3f} < {limits.half_hit}", context)

    if not switches.tags:
        return _similarity_zone(fp, entry, turn, limits, switches, context, verdict)
    found = _intent_verdict(fp, entry, switches, context, verdict)
    if found is None:
        found = _entity_verdict(fp, entry, switches, context, verdict)
    if found is not None:
        return found
    return _similarity_zone(fp, entry, turn, limits, switches, context, verdict)


def _context_gate(fp: Fingerprint, entry: Entry, limits: Thresholds, switches: Switches,
                  verdict: Verdict) -> tuple[float | None, Judgement | None]:
    """1. The context similarity, and the refusal when the histories do not match.

    A global entry without a history is a context-free FAQ answer: it needs a self-contained
    turn. One with a history (a warmed-up multi-turn scenario) needs that history."""
    probe, cached = fp.signature, entry.signature
    if not switches.context_view:
        return None, None
    global_free = entry.scope is Scope.GLOBAL and not cached.has_context
    context = None if global_free else context_similarity(fp, entry)

    def refuse(code: str, detail: str) -> tuple[float | None, Judgement]:
        return context, verdict(Zone.MISS, code, detail, context)

    if global_free:
        if _UNRESOLVED_REFERENCE.search(probe.text):
            return refuse("context_dependent", "a global entry cannot answer a turn that refers back")
        return None, None
    if context is None:
        return refuse("context_mismatch", "only one of the two requests has a history")
    if probe.history_hash != cached.history_hash:
        aligned = history.weigh(probe, cached, entry.cache_id, probe_turn=fp.view.current)
        if aligned.veto is not None:
            return refuse(aligned.veto.code, aligned.veto.detail)
        if aligned.equivalent:      # only small talk or asides differ: the turns alone decide
            return 1.0, None
    if context < limits.context:
        return refuse("context_mismatch", f"context cosine {context:.3f} < {limits.context}")
    if context < 1.0 and probe.context_entities != cached.context_entities:
        diff = sorted(probe.context_entities ^ cached.context_entities)[:4]
        return refuse("context_entities", f"the histories are about different things: {diff}")
    edited = _edited_turn(probe.history_turns, cached.history_turns) if context < 1.0 else None
    if edited is not None:
        return refuse("context_changed", f"a prior turn was edited: {edited[:60]!r}")
    return context, None


def _intent_verdict(fp: Fingerprint, entry: Entry, switches: Switches, context: float | None,
                    verdict: Verdict) -> Judgement | None:
    """2. Intent: a reversed ask is a different request, never a half-hit."""
    probe, cached = fp.signature, entry.signature
    if switches.change_detection and probe.negations % 2 != cached.negations % 2:
        return verdict(Zone.MISS, "intent_reversal", "one request negates what the other asks", context)
    if switches.change_detection and any(a * b < 0 for a, b in zip(probe.sides, cached.sides)):
        return verdict(Zone.MISS, "intent_reversal", "the requests ask for opposite actions", context)
    if switches.change_detection and _polarity_differs(probe.text, cached.text):
        return verdict(Zone.MISS, "negated", "one request says 不 / 没 where the other does not", context)
    if skeletons_conflict(probe.skeleton, cached.skeleton):
        return verdict(Zone.MISS, "task_skeleton", f"{probe.skeleton!r} is not {cached.skeleton!r}", context)
    if actions_conflict(probe.text, probe.actions, cached.text, cached.actions):
        return verdict(Zone.MISS, "task_action", f"asks to {actions_named(probe.text, probe.actions)}, "
                                                 f"not {actions_named(cached.text, cached.actions)}", context)
    return None


def _entity_verdict(fp: Fingerprint, entry: Entry, switches: Switches, context: float | None,
                    verdict: Verdict) -> Judgement | None:
    """3. Entities: what the turn is about, with references resolved against its own context."""
    probe, cached = fp.signature, entry.signature
    mine, theirs = aligned_entities(probe, cached)
    added = mine - theirs - cached.context_entities
    dropped = theirs - mine - probe.context_entities
    modifies = switches.change_detection and bool(probe.flags & MODIFY) and not (cached.flags & MODIFY)
    if added and dropped:
        zone = Zone.HALF_HIT if modifies else Zone.MISS
        return verdict(zone, "entity_change", f"{sorted(dropped)} -> {sorted(added)}", context)
    swapped_nouns = _noun_swap(probe.nouns, cached.nouns)
    if swapped_nouns:
        return verdict(Zone.MISS, "noun_change", f"about {swapped_nouns[1]}, not {swapped_nouns[0]}", context)
    terms = _defined_term(cached.text), _defined_term(probe.text)
    if None not in terms and terms[0] != terms[1]:
        return verdict(Zone.MISS, "defined_term", f"the meaning of {terms[1]!r}, not of {terms[0]!r}", context)
    opposite = _opposite_swap(cached.text, probe.text)
    if opposite:     # "改成晚上出发" modifies a request, like a changed entity
        zone = Zone.HALF_HIT if modifies else Zone.MISS
        return verdict(zone, "opposite_words", f"{opposite[0]!r} became {opposite[1]!r}", context)
    quality = comparative_reversed(cached.text, probe.text)
    if quality:
        return verdict(Zone.MISS, "opposite_actions", f"{quality[0]!r} became {quality[1]!r}: one quality, "
                                                      "the other way", context)
    if _order_swapped(probe.entities, cached.entities) and _ORDER_MATTERS.search(probe.text) \
            and _ORDER_MATTERS.search(cached.text):
        return verdict(Zone.MISS, "entity_order", "the same entities in another order (from/to, A vs B)", context)
    exchanged = exchanged_spans(cached.text, probe.text)
    if exchanged:
        return verdict(Zone.MISS, "parts_exchanged", f"{exchanged[0]!r} and {exchanged[1]!r} trade places", context)
    roles = _roles_swapped(cached.text, probe.text, (*cached.nouns, *probe.nouns))
    if roles:
        return verdict(Zone.MISS, "roles_swapped", f"{roles[0]!r} and {roles[1]!r} trade places", context)
    # A reference on one side ("that hotel" / "the Ibis") is not a swap when the named
    # side's entity is in the context: the entity checks above have already held.
    swaps = [(x, y) for x, y in substituted_spans(cached.text, probe.text)
             if not (probe.has_context and (has_reference(x) or has_reference(y)))
             and not _anaphora(x, y, cached.text, probe.text)
             and not (_is_question_words(x) or _is_question_words(y))]
    if swaps:
        return verdict(Zone.MISS, "related_but_different", f"one-slot edit {swaps[:3]}", context)
    if added:
        return verdict(Zone.HALF_HIT, "added_constraint", f"new in this request: {sorted(added)}", context)
    if dropped:
        return verdict(Zone.HALF_HIT, "dropped_constraint", f"no longer asked: {sorted(dropped)}", context)
    return None


def _similarity_zone(fp, entry, turn, limits, switches, context, verdict) -> Judgement:
    probe, cached = fp.signature, entry.signature
    if switches.change_detection and probe.flags & MODIFY and not (cached.flags & MODIFY):
        flags = sorted(f.value for f in probe.flags & MODIFY)
        return verdict(Zone.HALF_HIT, "change_detected", f"the turn modifies the request: {flags}", context)

    # 4. Similarity zones.
    if turn >= limits.hit:
        return verdict(Zone.HIT, "semantic_match", f"turn cosine {turn:.3f} >= {limits.hit}", context)
    return verdict(Zone.MISS, "similar_not_same", f"turn cosine {turn:.3f} < {limits.hit}", context)
