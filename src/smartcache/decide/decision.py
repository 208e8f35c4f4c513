"""The Decision value: a zone, the entry it refers to, the scores, and every reason.

Reasons are typed (a ``ReasonCode`` a test, a metric or the caller can match, plus
a human detail), so every hit — and every refusal — can be explained.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from smartcache.decide.rules import ReasonCode
from smartcache.store import Entry


class Zone(str, enum.Enum):
    HIT = "hit"            # serve the cached answer
    HALF_HIT = "half_hit"  # forward to the engine; the history prefix is still valid and reused
    MISS = "miss"          # forward; nothing of the cache is used


@dataclass(frozen=True)
class Reason:
    """One rule that fired: ``code`` is stable (tests and metrics use it), ``detail`` is for people.
    A code given as a string must be a registered one (ValueError otherwise)."""

    code: ReasonCode
    detail: str = ""
    entry_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", ReasonCode(self.code))

    def __str__(self) -> str:
        where = f" [{self.entry_id}]" if self.entry_id else ""
        return f"{self.code}{where}: {self.detail}" if self.detail else f"{self.code}{where}"


@dataclass(frozen=True)
class Scores:
    turn: float | None = None      # cosine of the current turns
    context: float | None = None   # cosine of the contexts (1.0 when histories are byte-identical)
    same: float | None = None      # the verifier's P(same) of the best unvetoed candidate


@dataclass(frozen=True)
class Decision:
    """What to do with one request.

    ``entry`` is the served entry on a hit and the entry whose history is reused
    on a half-hit. ``cacheable`` says whether the answer to this request may be
    written afterwards; ``verify`` asks the caller to check a served answer
    in the background (suspect entries).
    """

    zone: Zone
    reasons: tuple[Reason, ...]
    entry: Entry | None = None
    scores: Scores = field(default_factory=Scores)
    cacheable: bool = True
    verify: bool = False
    candidates: int = 0
    # The best unvetoed candidate the verifier weighed (served or not) and the stratum its point
    # belongs to: when the request reaches the engine anyway, its answer labels this candidate.
    nearest: Entry | None = field(default=None, repr=False)
    stratum: str = ""
    # The verifier's evidence on ``nearest`` (its feature row): with the label it gets, an
    # observation the tenant's verifier can be refitted on (learn/observations.py).
    nearest_features: tuple[float, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def answer(self) -> str | None:
        return self.entry.answer.text if self.entry is not None and self.zone is Zone.HIT else None

    def has_reason(self, code: ReasonCode | str) -> bool:
        """Whether a reason of ``code`` is among the reasons (a string must be a registered code)."""
        wanted = ReasonCode(code)
        return any(r.code is wanted for r in self.reasons)

    def to_json(self) -> dict[str, object]:
        return {
            "zone": self.zone.value,
            "entry": self.entry.cache_id if self.entry is not None else None,
            "answer": self.answer,
            "scores": {"turn": self.scores.turn, "context": self.scores.context, "same": self.scores.same},
            "reasons": [{"code": r.code.value, "detail": r.detail, "entry": r.entry_id} for r in self.reasons],
            "cacheable": self.cacheable,
            "verify": self.verify,
            "candidates": self.candidates,
        }
