"""The layered fingerprint of a request: coarse tags, dense vectors, exact prefix hash.

The current turn and the context are scored separately: the turn says *what* is
asked, the context says *in which conversation*. One vector of the whole chat
cannot tell "same question, other history" from "same history, other question".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from smartcache.context import ContextView, TurnRecord
from smartcache.defaults import DEFAULTS
from smartcache.fingerprint.encoders import Encoder
from smartcache.fingerprint.entities import extract_entities
from smartcache.fingerprint.nouns import chinese_nouns
from smartcache.fingerprint.resolve import resolve_references
from smartcache.fingerprint.tags import (
    HIGH_RISK_DOMAINS, ChangeFlag, action_sides, announces_topic_switch, change_flags, has_reference,
    intent_domain, is_time_sensitive, negation_count, task_actions, task_skeleton,
)
from smartcache.fingerprint.timely import carries_on


@dataclass(frozen=True)
class Signature:
    """The rule-level description of one request, stored with its entry and compared at lookup.

    ``text`` is the normalised current turn with references resolved; entities
    are canonical keys in order of appearance.
    """

    text: str
    domain: str
    skeleton: str
    entities: tuple[str, ...]
    flags: frozenset[ChangeFlag]
    negations: int
    sides: tuple[int, ...]
    context_entities: frozenset[str]
    history_hash: str
    has_context: bool
    history_turns: tuple[str, ...] = ()   # the kept prior turns' key points, oldest first
    actions: tuple[str, ...] = ()         # what the turn asks to be done (tags.task_actions)
    nouns: tuple[str, ...] = ()           # Chinese content nouns of the turn (nouns.chinese_nouns)
    turns: tuple[TurnRecord, ...] = ()    # every prior turn, with its facts (decide.history aligns them)

    def coarse_tags(self) -> dict[str, object]:
        return {
            "intent_domain": self.domain,
            "task_skeleton": self.skeleton,
            "active_entities": list(self.entities),
            "change_flags": sorted(f.value for f in self.flags),
            "task_actions": list(self.actions),
        }

    def to_json(self) -> dict[str, object]:
        return {
            "text": self.text, "domain": self.domain, "skeleton": self.skeleton,
            "entities": list(self.entities), "flags": sorted(f.value for f in self.flags),
            "negations": self.negations, "sides": list(self.sides),
            "context_entities": sorted(self.context_entities), "history_hash": self.history_hash,
            "has_context": self.has_context, "history_turns": list(self.history_turns),
            "actions": list(self.actions), "nouns": list(self.nouns),
            "turns": [t.to_json() for t in self.turns],
        }

    @classmethod
    def from_json(cls, data: dict) -> "Signature":
        return cls(
            text=data["text"], domain=data["domain"], skeleton=data["skeleton"],
            entities=tuple(data["entities"]), flags=frozenset(ChangeFlag(f) for f in data["flags"]),
            negations=int(data["negations"]), sides=tuple(data["sides"]),
            context_entities=frozenset(data["context_entities"]), history_hash=data["history_hash"],
            has_context=bool(data["has_context"]), history_turns=tuple(data.get("history_turns", ())),
            actions=tuple(data.get("actions", ())), nouns=tuple(data.get("nouns", ())),
            # Entries written before turn records existed have none: the alignment leaves them to the
            # context rules.
            turns=tuple(TurnRecord.from_json(t) for t in data.get("turns", ())),
        )


@dataclass(frozen=True)
class Fingerprint:
    """Everything later stages need about one request."""

    signature: Signature
    turn_vector: np.ndarray
    context_vector: np.ndarray | None
    time_sensitive: bool
    topic_switch: bool
    topic_similarity: float | None   # best cosine of the turn to the last 3 context turns
    view: ContextView

    @property
    def high_risk(self) -> bool:
        return self.signature.domain in HIGH_RISK_DOMAINS

    def context_key(self, version_key: str) -> str:
        """sha256 of the version key and the coarse tags: the entry's context_fingerprint."""
        payload = json.dumps([version_key, self.signature.coarse_tags()], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@lru_cache(maxsize=50_000)
def turn_facts(cased: str) -> tuple[str, ...]:
    """The entity keys of one prior turn, in order, once each. Memoised: a conversation resends
    every earlier turn with each request."""
    return tuple(dict.fromkeys(e.key for e in extract_entities(cased)))


class Fingerprinter:
    """Builds Fingerprints with one encoder; one batched encode call per request."""

    def __init__(self, encoder: Encoder, *, topic_threshold: float = DEFAULTS["topic_threshold"]) -> None:
        self.encoder = encoder
        self.topic_threshold = topic_threshold

    def fingerprint(self, view: ContextView) -> Fingerprint:
        history_texts = [t.text for t in view.history]
        cased_history = [t.cased for t in view.history]
        # Entities are read case-preserving (camelCase, proper nouns); values come out lower-cased.
        resolved_cased = resolve_references(view.current_cased, cased_history)
        resolved = resolved_cased.lower()
        entities = tuple(e.key for e in extract_entities(resolved_cased))
        # Each prior turn's entities are read once (``turn_facts`` memoises them): a conversation
        # resends its history with every request.
        context_entities = frozenset(key for text in cased_history for key in turn_facts(text))
        turn_domain = intent_domain(resolved)
        context_domain = intent_domain(" ".join([view.first_topic, *history_texts])) if view.has_context else "general"
        domain = context_domain if turn_domain == "general" else turn_domain
        texts = [resolved, *history_texts]
        vectors = self.encoder.encode(texts)
        turn_vector = vectors[0]
        context_vector = None
        topic_similarity = None
        if view.history:
            weights = np.asarray([t.weight for t in view.history], np.float32)
            ctx = (weights[:, None] * vectors[1:]).sum(axis=0)
            context_vector = (ctx / max(float(np.linalg.norm(ctx)), 1e-12)).astype(np.float32)
            topic_similarity = float((vectors[1:][-3:] @ turn_vector).max())
        signature = Signature(
            text=resolved,
            domain=domain,
            skeleton=task_skeleton(resolved),
            entities=entities,
            flags=change_flags(view.current),
            negations=negation_count(view.current),
            sides=action_sides(view.current),
            context_entities=context_entities,
            history_hash=view.history_hash,
            has_context=view.has_context,
            history_turns=tuple(history_texts),
            actions=task_actions(resolved),
            nouns=chinese_nouns(resolved),
            # The whole turn is read for facts and dropped: an entry keeps only the excerpt.
            turns=tuple(replace(r, facts=() if r.chatter else turn_facts(r.cased), cased="") for r in view.records),
        )
        return Fingerprint(
            signature=signature,
            turn_vector=turn_vector,
            context_vector=context_vector,
            time_sensitive=is_time_sensitive(view.current) or carries_on(view.current, _previous_user_turn(view)),
            topic_switch=self._topic_switch(view, topic_similarity, turn_domain, context_domain),
            topic_similarity=topic_similarity,
            view=view,
        )

    def _topic_switch(self, view: ContextView, similarity: float | None, turn_domain: str,
                      context_domain: str) -> bool:
        """A turn leaves the conversation's topic when it says so, or when it moves to another
        domain while neither referring back nor resembling any of the last three turns.
        (A bare follow-up instruction such as "翻译成英文" resembles nothing, yet continues.)"""
        if not view.has_context:
            return False
        if announces_topic_switch(view.current):
            return True
        return (similarity is not None and similarity < self.topic_threshold
                and "general" not in (turn_domain, context_domain) and turn_domain != context_domain
                and not has_reference(view.current))


def _previous_user_turn(view: ContextView) -> str | None:
    """The user turn before the current one, normalised (None on a first turn)."""
    return next((r.cased.lower() for r in reversed(view.records) if r.role == "user" and r.cased), None)
