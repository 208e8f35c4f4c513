"""The layered fingerprint of a request: coarse tags, dense vectors, exact prefix hash.

The current turn and the context are scored separately: the turn says *what* is
asked, the context says *in which conversation*. One vector of the whole chat
cannot tell "same question, other history" from "same history, other question".
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable, TypeVar

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


T = TypeVar("T")
_READER = "smartcache-read"
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _forget_pool() -> None:
    """In a forked child: the parent's pool object came along, its threads did not."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _submit_reading(read: Callable[..., T], args: tuple) -> Future[T] | None:
    """``read(*args)`` on a pool thread (one a core this process may use); None where the
    caller must read itself: the caller is a pool thread, or the interpreter is shutting down
    (the pool takes no new work then)."""
    global _pool
    if threading.current_thread().name.startswith(_READER):
        return None
    with _pool_lock:
        if _pool is None:
            cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 2
            _pool = ThreadPoolExecutor(cores, thread_name_prefix=_READER)
        pool = _pool
    try:
        return pool.submit(read, *args)
    except RuntimeError:        # "cannot schedule new futures after (interpreter) shutdown"
        return None


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
        # The words are read on another thread while this one runs the forward, which lets go
        # of the GIL: the two were a lookup's largest serial costs. (The other way round the
        # reader would hold the GIL and the forward could not start until it let go.)
        args = (view, resolved_cased, resolved, history_texts, cased_history)
        reading = _submit_reading(self._read, args)
        vectors = self.encoder.encode([resolved, *history_texts])
        signature, time_sensitive, turn_domain, context_domain = \
            reading.result() if reading is not None else self._read(*args)
        turn_vector = vectors[0]
        context_vector = None
        topic_similarity = None
        if view.history:
            weights = np.asarray([t.weight for t in view.history], np.float32)
            ctx = (weights[:, None] * vectors[1:]).sum(axis=0)
            context_vector = (ctx / max(float(np.linalg.norm(ctx)), 1e-12)).astype(np.float32)
            topic_similarity = float((vectors[1:][-3:] @ turn_vector).max())
        return Fingerprint(
            signature=signature,
            turn_vector=turn_vector,
            context_vector=context_vector,
            time_sensitive=time_sensitive,
            topic_switch=self._topic_switch(view, topic_similarity, turn_domain, context_domain),
            topic_similarity=topic_similarity,
            view=view,
        )

    @staticmethod
    def _read(view: ContextView, resolved_cased: str, resolved: str, history_texts: list[str],
              cased_history: list[str]) -> tuple[Signature, bool, str, str]:
        """Everything the rules read from the request's words (no vectors)."""
        entities = tuple(e.key for e in extract_entities(resolved_cased))
        # Each prior turn's entities are read once (``turn_facts`` memoises them): a conversation
        # resends its history with every request.
        context_entities = frozenset(key for text in cased_history for key in turn_facts(text))
        turn_domain = intent_domain(resolved)
        context_domain = intent_domain(" ".join([view.first_topic, *history_texts])) if view.has_context else "general"
        domain = context_domain if turn_domain == "general" else turn_domain
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
        time_sensitive = is_time_sensitive(view.current)
        return signature, time_sensitive, turn_domain, context_domain

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

