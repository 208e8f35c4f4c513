"""Upper confidence bounds on an error rate, and score histograms that forget slowly.

The learning cache serves a score region only where the one-sided upper bound on the share
of wrong answers there is at most δ. With no wrong answer seen, ``upper(0, n) <= 0.01``
needs ``n >= 299`` observations (the rule of three): the bound is earned, never assumed.

    >>> upper(0, 299) <= 0.01 < upper(0, 298)
    True
    >>> round(upper(1, 100), 4), upper(0, 0)
    (0.0466, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta


def upper(k: float, n: float, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound on a rate seen ``k`` times in ``n`` trials.
    Decayed counts are fractional: they are rounded (k up, n down), the cautious way."""
    k, n = math.ceil(k - 1e-9), math.floor(n + 1e-9)
    if n <= 0:
        return 1.0
    k = min(max(k, 0), n)
    if k >= n:
        return 1.0
    return float(beta.ppf(confidence, k + 1, n - k))


def uppers(k: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> np.ndarray:
    """``upper`` of many (k, n) pairs at once: one scipy call, for every region of a histogram.

        >>> [round(float(v), 4) for v in uppers(np.array([0, 1, 0, 3]), np.array([299, 100, 0, 3]))]
        [0.01, 0.0466, 1.0, 1.0]
    """
    k = np.ceil(np.asarray(k, dtype=float) - 1e-9)
    n = np.floor(np.asarray(n, dtype=float) + 1e-9)
    k = np.clip(k, 0, np.maximum(n, 0))
    open_ = (n > 0) & (k < n)
    out = np.ones(np.broadcast(k, n).shape)
    if open_.any():
        out[open_] = beta.ppf(confidence, k[open_] + 1, n[open_] - k[open_])
    return out


def lower(k: float, n: float, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson lower bound (0 when nothing was seen)."""
    k, n = math.floor(k + 1e-9), math.floor(n + 1e-9)
    if n <= 0 or k <= 0:
        return 0.0
    k = min(k, n)
    return float(beta.ppf(1 - confidence, k, n - k + 1))


# Score bins: P(same) from the verifier crowds near 0 and 1, so the edges are even in logit.
EDGES: tuple[float, ...] = tuple(round(1 / (1 + math.exp(-z / 4)), 4) for z in range(-24, 25))


def bin_of(score: float) -> int:
    """The index of the bin holding ``score``: bin i spans [EDGES[i], EDGES[i+1])."""
    lo, hi = 0, len(EDGES) - 1
    if score < EDGES[0]:
        return 0
    while lo < hi:          # the last edge <= score
        mid = (lo + hi + 1) // 2
        if EDGES[mid] <= score:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class Histogram:
    """Right and wrong observations per score bin, decayed by ``keep`` per new observation,
    so that old traffic (an engine since replaced, a drift) weighs less and less."""

    right: list[float] = field(default_factory=lambda: [0.0] * len(EDGES))
    wrong: list[float] = field(default_factory=lambda: [0.0] * len(EDGES))
    scale: float = 1.0          # lazy decay: stored counts are divided by it when read

    def add(self, score: float, correct: bool, keep: float = 1.0) -> None:
        if keep < 1.0:
            self.scale *= keep
            if self.scale < 1e-6:           # fold the decay in before the floats underflow
                self.right = [v * self.scale for v in self.right]
                self.wrong = [v * self.scale for v in self.wrong]
                self.scale = 1.0
        (self.right if correct else self.wrong)[bin_of(score)] += 1.0 / self.scale

    def counts(self) -> tuple[list[float], list[float]]:
        """(right, wrong) per bin, decay applied."""
        return [v * self.scale for v in self.right], [v * self.scale for v in self.wrong]

    @property
    def total(self) -> float:
        return (sum(self.right) + sum(self.wrong)) * self.scale

    def to_json(self) -> dict[str, list[float]]:
        right, wrong = self.counts()
        return {"right": [round(v, 4) for v in right], "wrong": [round(v, 4) for v in wrong]}

    @classmethod
    def from_json(cls, data: dict[str, list[float]]) -> "Histogram":
        right, wrong = list(map(float, data["right"])), list(map(float, data["wrong"]))
        if len(right) != len(EDGES) or len(wrong) != len(EDGES):
            raise ValueError("a histogram of another bin layout")
        return cls(right, wrong)


__all__ = ["EDGES", "Histogram", "bin_of", "lower", "upper", "uppers"]
