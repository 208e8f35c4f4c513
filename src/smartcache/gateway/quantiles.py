"""Latency quantiles in bounded memory: a histogram with log-spaced bins.

The dashboard plots lookup p50 / p99 per 10 s bucket of the timeline. Keeping every
sample would grow with traffic; a bin per 1/8 of a doubling holds any latency from a
microsecond to hours in at most a couple of hundred counters, and a quantile read off it
is within 4.5 % of the true sample (the bin's geometric middle is returned).

    >>> h = LogHistogram()
    >>> for ms in [1.0] * 98 + [50.0, 200.0]:
    ...     h.add(ms / 1000)
    >>> round(h.quantile(0.5) * 1000, 2), round(h.quantile(0.99) * 1000, 1), h.count
    (0.98, 48.4, 100)
"""

from __future__ import annotations

import math
from collections import Counter

_PER_DOUBLING = 8           # bin width 2**(1/8) = 9 %: the middle is within 4.5 % of any sample in it
_FLOOR_S = 1e-6             # bin 0 starts here; anything faster counts as a microsecond


class LogHistogram:
    """Counts of samples (seconds) by log-spaced bin; ``quantile`` by nearest rank."""

    __slots__ = ("bins", "count")

    def __init__(self) -> None:
        self.bins: Counter[int] = Counter()
        self.count = 0

    def add(self, seconds: float) -> None:
        index = int(math.log2(max(seconds, _FLOOR_S) / _FLOOR_S) * _PER_DOUBLING)
        self.bins[index] += 1
        self.count += 1

    def quantile(self, q: float) -> float | None:
        """The ``q`` quantile (0 < q <= 1) in seconds, by nearest rank; None when empty."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index in sorted(self.bins):
            seen += self.bins[index]
            if seen >= rank:
                return _FLOOR_S * 2 ** ((index + 0.5) / _PER_DOUBLING)
        raise AssertionError("unreachable: the bins hold count samples")
