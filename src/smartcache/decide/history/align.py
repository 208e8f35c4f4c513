"""Two histories aligned turn by turn: which turns match, and the pairs and lone turns that differ.

Identical turns match by digest; the few that differ are paired in order (``align``).

    >>> from smartcache.context import turn_records
    >>> a = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I pause it for a month?")])
    >>> b = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I end it now?")])
    >>> diff = align(b, a)
    >>> diff.matched, diff.first_divergence, [c.where for c in diff.changes]
    (1, 2, ['turn 2 (assistant)'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from cydifflib import SequenceMatcher

from smartcache.context import TurnRecord
from smartcache.decide.tokens import _common_share, _tokens


@dataclass(frozen=True)
class TurnChange:
    """One place where the histories differ: two aligned turns that differ (both set), or a
    turn only one side has."""

    probe: TurnRecord | None
    cached: TurnRecord | None

    @property
    def kind(self) -> str:
        return "edited" if self.probe and self.cached else "added" if self.probe else "dropped"

    @property
    def chatter(self) -> bool:
        return all(t.chatter for t in (self.probe, self.cached) if t is not None)

    @property
    def where(self) -> str:
        turn = self.probe or self.cached
        assert turn is not None
        return f"turn {turn.pos} ({turn.role})"


@dataclass(frozen=True)
class HistoryDiff:
    """The probe's history against a cached entry's, turn by turn. ``matched``: turns equal on
    both sides; ``first_divergence``: the probe's first turn that differs (1-based), None when
    the two histories are the same turns."""

    changes: tuple[TurnChange, ...]
    matched: int
    first_divergence: int | None

    @property
    def identical(self) -> bool:
        return not self.changes

    @property
    def pairs(self) -> tuple[TurnChange, ...]:
        return tuple(c for c in self.changes if c.kind == "edited")

    @property
    def only_probe(self) -> tuple[TurnRecord, ...]:
        return tuple(c.probe for c in self.changes if c.kind == "added" and c.probe is not None)

    @property
    def only_cached(self) -> tuple[TurnRecord, ...]:
        return tuple(c.cached for c in self.changes if c.kind == "dropped" and c.cached is not None)


def align(probe: Sequence[TurnRecord], cached: Sequence[TurnRecord]) -> HistoryDiff:
    """Align two histories. Linear in their length when they differ in a few turns: the common
    head and tail are matched by digest first, and only the middle is diffed."""
    n = min(len(probe), len(cached))
    head = 0
    while head < n and probe[head].digest == cached[head].digest:
        head += 1
    tail = 0
    while tail < n - head and probe[-1 - tail].digest == cached[-1 - tail].digest:
        tail += 1
    mid_p, mid_c = probe[head:len(probe) - tail], cached[head:len(cached) - tail]
    matched = head + tail
    changes: list[TurnChange] = []
    matcher = SequenceMatcher(None, [t.digest for t in mid_c], [t.digest for t in mid_p], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            matched += i2 - i1
        else:
            changes += _pair(mid_p[j1:j2], mid_c[i1:i2])
    first = None
    if changes:
        first = probe[head].pos if head < len(probe) else (probe[-1].pos + 1 if probe else 1)
    return HistoryDiff(tuple(changes), matched, first)


def _similarity(a: TurnRecord, b: TurnRecord) -> float:
    return _common_share(_tokens(a.excerpt), _tokens(b.excerpt)) if a.excerpt and b.excerpt else 0.0


def _pair(probe: Sequence[TurnRecord], cached: Sequence[TurnRecord]) -> list[TurnChange]:
    """Pair the differing turns of one stretch: by position when both sides have the same
    speakers in the same order (the usual edit); otherwise the in-order pairing of same-speaker
    turns with the most similarity (an inserted or dropped exchange), the rest unpaired."""
    if len(probe) == len(cached) and all(p.role == c.role for p, c in zip(probe, cached)):
        return [TurnChange(p, c) for p, c in zip(probe, cached)]
    m, n = len(probe), len(cached)
    best = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            paired = (_similarity(probe[i], cached[j]) + 1e-3 + best[i + 1][j + 1]
                      if probe[i].role == cached[j].role else -1.0)
            best[i][j] = max(paired, best[i + 1][j], best[i][j + 1])
    out: list[TurnChange] = []
    i = j = 0
    while i < m or j < n:
        if i < m and j < n and probe[i].role == cached[j].role and \
                best[i][j] == _similarity(probe[i], cached[j]) + 1e-3 + best[i + 1][j + 1]:
            out.append(TurnChange(probe[i], cached[j]))
            i, j = i + 1, j + 1
        elif i < m and (j == n or best[i][j] == best[i + 1][j]):
            out.append(TurnChange(probe[i], None))
            i += 1
        else:
            out.append(TurnChange(None, cached[j]))
            j += 1
    return out


__all__ = ["HistoryDiff", "TurnChange", "align"]
