"""Key-fact validation: does a cached answer's content fit the current request's constraints?

A second line of defence behind the matching rules: even when two requests look
alike, a cached itinerary that costs 6000 cannot answer "budget 5000 at most",
and a list of five hotels cannot answer "recommend three".

    >>> constraints_of(["周末去杭州玩3天,预算5000以内,推荐3家酒店"])
    Constraints(budget=5000.0, count=3, days=3, dates=frozenset())
    >>> check_answer(Constraints(budget=5000.0), "总计约6200元")
    ['budget: the answer mentions 6200 over the budget 5000']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

from smartcache.fingerprint.entities import extract_entities


@dataclass(frozen=True)
class Constraints:
    budget: float | None = None     # an upper bound on money
    count: int | None = None        # how many items were asked for
    days: int | None = None         # how many days a plan should cover
    dates: frozenset[str] = frozenset()


# (?<!\d) before a leading \d+: linear time on a long digit run (see context.normalize).
_BUDGET = [re.compile(p, re.I) for p in (
    r"预算(?:是|为|在|大概|大约|控制在)?\s*[$]?(\d+(?:\.\d+)?)",
    r"[$]?(?<!\d)(\d+(?:\.\d+)?)元?(?:以内|以下|之内)",
    r"(?:不超过|不要超过|别超过|最多|至多)\s*[$]?(\d+(?:\.\d+)?)",
    r"(?:budget(?: of| is| around)?|under|below|less than|at most|within|no more than|max(?:imum)?)\s*[$]?(\d+(?:\.\d+)?)",
)]
_COUNT = [re.compile(p, re.I) for p in (
    r"(?:推荐|列出|列举|给我|来|写|提供|找)\s*(\d+)\s*(?:个|家|条|种|点|篇|款|本|首|处)",
    r"\b(?:top|list|give me|recommend|suggest|name|write)\s+(\d+)\b",
)]
_DAYS = [re.compile(p, re.I) for p in (r"(?<!\d)(\d+)\s*天", r"\b(\d+)[- ]days?\b")]
_DAY_MARK = re.compile(r"第\s*(\d+)\s*天|\bday\s*(\d+)\b", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)、]|[-*•])\s*\S", re.M)
_MONEY = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s*元|\$\s?(\d+(?:\.\d+)?)")


def constraints_of(texts: Iterable[str], *, dates: bool = True) -> Constraints:
    """Constraints stated in the user's turns (later turns override earlier ones); ``dates``
    False leaves the dates unread (no answer that names none can contradict them)."""
    budget = count = days = None
    found: set[str] = set()
    for text in texts:
        for pattern in _BUDGET:
            for m in pattern.finditer(text):
                budget = float(m.group(1))
        for pattern in _COUNT:
            for m in pattern.finditer(text):
                count = int(m.group(1))
        for pattern in _DAYS:
            for m in pattern.finditer(text):
                days = int(m.group(1))
        if dates:
            found |= _dates(text)
    return Constraints(budget=budget, count=count, days=days, dates=frozenset(found))


def contradictions(turns: Sequence[str], answer: str) -> list[str]:
    """``check_answer(constraints_of(turns), answer)``, with the turns' dates read only when the
    answer names a date: reading them is most of the work, and most answers name none."""
    return check_answer(constraints_of(turns, dates=bool(_answer_dates(answer))), answer)


def _dates(text: str) -> set[str]:
    return {e.value for e in extract_entities(text) if e.kind == "date"}


@lru_cache(maxsize=2048)
def _answer_dates(answer: str) -> frozenset[str]:
    """Memoised: a cached answer is checked by every lookup it is a candidate of."""
    return frozenset(_dates(answer))


def key_facts(answer: str) -> tuple[str, ...]:
    """Facts of an answer worth checking later: money, list length, day count, dates, names."""
    facts = [f"money:{m.group(1) or m.group(2)}" for m in _MONEY.finditer(answer)]
    items = len(_LIST_ITEM.findall(answer))
    if items:
        facts.append(f"list_items:{items}")
    day_marks = [int(a or b) for a, b in _DAY_MARK.findall(answer)]
    if day_marks:
        facts.append(f"days:{max(day_marks)}")
    facts += [e.key for e in extract_entities(answer) if e.kind in ("date", "name")][:20]
    return tuple(dict.fromkeys(facts))


def check_answer(constraints: Constraints, answer: str) -> list[str]:
    """Every way the answer contradicts the constraints; empty when it fits."""
    problems = []
    if constraints.budget is not None:
        amounts = [float(a or b) for a, b in _MONEY.findall(answer)]
        over = [a for a in amounts if a > constraints.budget]
        if over:
            problems.append(f"budget: the answer mentions {max(over):g} over the budget {constraints.budget:g}")
    if constraints.count is not None:
        items = len(_LIST_ITEM.findall(answer))
        if items >= 2 and items != constraints.count:
            problems.append(f"count: the answer lists {items} items, {constraints.count} were asked for")
    if constraints.days is not None:
        marks = [int(a or b) for a, b in _DAY_MARK.findall(answer)]
        if marks and max(marks) != constraints.days:
            problems.append(f"days: the answer plans {max(marks)} days, {constraints.days} were asked for")
    if constraints.dates:
        answer_dates = _answer_dates(answer)
        if answer_dates and not answer_dates & constraints.dates:
            problems.append(f"dates: the answer is about {sorted(answer_dates)}, not {sorted(constraints.dates)}")
    return problems
