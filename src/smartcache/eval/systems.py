"""The systems an evaluation compares: SmartCache and three baselines, behind one contract.

    exact_prefix   hit only when the whole message list matches byte for byte
    last_message   GPTCache's default: embed the last user message, cosine top-1, one threshold
    full_context   embed all messages concatenated, cosine top-1, one threshold

The semantic baselines use SmartCache's encoder, and, like GPTCache's default,
keep one pool with no session scoping. Each reports the top-1 score and answer
as well, so the harness can also find their best threshold (the oracle).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from smartcache.cache import SmartCache
from smartcache.context import parse_messages
from smartcache.decide import ReasonCode, Zone
from smartcache.eval.cases import Case, CachedItem


@dataclass(frozen=True)
class Outcome:
    zone: str                      # hit | half_hit | miss
    answer: str | None             # the cached answer served, on a hit
    top_score: float | None = None  # baselines: the best candidate's cosine, served or not
    top_answer: str | None = None
    decided_by: str = ""           # smartcache: the code of the reason that settled the zone
    reasons: tuple[str, ...] = ()  # smartcache: every reason, rendered


class System(Protocol):
    name: str

    def reset(self) -> None: ...

    def write(self, case: Case, item: CachedItem) -> None: ...

    def probe(self, case: Case) -> Outcome: ...


class SmartCacheSystem:
    name = "smartcache"

    def __init__(self, make_cache: Callable[[], SmartCache], name: str = "smartcache") -> None:
        self.name = name
        self._make = make_cache
        self.cache = make_cache()

    def reset(self) -> None:
        self.cache = self._make()

    def write(self, case: Case, item: CachedItem) -> None:
        result = self.cache.store(item.messages, item.answer, session=case.session, tenant=case.tenant,
                                  versions=item.versions or case.versions, scope=case.scope)
        if result.stored:
            self.cache.promote(result.cache_id, to_global=case.scope == "global")

    def probe(self, case: Case) -> Outcome:
        request = self.cache.prepare(case.probe, session=case.probe_session, tenant=case.tenant,
                                     versions=case.probe_versions)
        if request.gate is not None and request.gate.ends_session:
            # The decision is the gate's either way; the session's entries are left standing, as
            # another case's probe may share the session (``compete``) and must not lose them.
            d = request.gate.decision()
        else:
            d = self.cache.lookup(request)
        return Outcome(d.zone.value, d.answer if d.zone is Zone.HIT else None, d.scores.turn,
                       decided_by=_deciding(d), reasons=tuple(str(r) for r in d.reasons))


def _deciding(decision) -> str:
    """The reason that settled the zone: a gate, a veto, the verifier (``semantic_match`` /
    ``similar_not_same`` / ``constraint_change``), or the similarity floor. A topic switch
    comes first only when it left nothing to judge."""
    codes = [r.code for r in decision.reasons]
    if codes and codes[0] is ReasonCode.TOPIC_SWITCH and len(codes) > 1:
        return codes[1].value
    return codes[0].value if codes else ""


class ExactPrefixSystem:
    name = "exact_prefix"

    def __init__(self) -> None:
        self._answers: dict[str, str] = {}

    @staticmethod
    def _key(messages) -> str:
        conv = parse_messages(messages)
        return json.dumps([conv.system] + [[t.role, t.text] for t in conv.turns], ensure_ascii=False)

    def reset(self) -> None:
        self._answers.clear()

    def write(self, case: Case, item: CachedItem) -> None:
        self._answers[self._key(item.messages)] = item.answer

    def probe(self, case: Case) -> Outcome:
        answer = self._answers.get(self._key(case.probe))
        return Outcome("hit" if answer is not None else "miss", answer, 1.0 if answer is not None else None, answer)


class _VectorBaseline:
    name = "vector"

    def __init__(self, encoder, threshold: float) -> None:
        self.encoder = encoder
        self.threshold = threshold
        self._vectors: list[np.ndarray] = []
        self._answers: list[str] = []

    def text_of(self, messages) -> str:
        raise NotImplementedError

    def reset(self) -> None:
        self._vectors, self._answers = [], []

    def write(self, case: Case, item: CachedItem) -> None:
        self._vectors.append(self.encoder.encode([self.text_of(item.messages)])[0])
        self._answers.append(item.answer)

    def probe(self, case: Case) -> Outcome:
        if not self._vectors:
            return Outcome("miss", None)
        q = self.encoder.encode([self.text_of(case.probe)])[0]
        scores = np.stack(self._vectors) @ q
        best = int(np.argmax(scores))
        score = float(scores[best])
        served = self._answers[best] if score >= self.threshold else None
        return Outcome("hit" if served is not None else "miss", served, score, self._answers[best])


class LastMessageSystem(_VectorBaseline):
    name = "last_message"

    def text_of(self, messages) -> str:
        return parse_messages(messages).current


class FullContextSystem(_VectorBaseline):
    name = "full_context"

    def text_of(self, messages) -> str:
        conv = parse_messages(messages)
        return "\n".join([conv.system] + [t.text for t in conv.turns]).strip()
