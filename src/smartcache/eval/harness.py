"""Run systems over cases and score them as CASES.md defines.

Every system sees the same cases in the same order. By default each case runs
in a fresh cache; with ``shared_cache`` every case's entries are written first
into one cache, then every probe is looked up, so other cases' entries compete.

``shared_cache`` alone keeps each case in its own session, so a session-scoped entry
never meets another case's probe. ``competing`` (``"session"`` or ``"global"``) makes
the entries compete as they do in a real cache of thousands (``compete``): every case
written in one session and probed there, or every entry in the tenant's global pool and
each probe from a session of its own. A case that tests session scoping (its probe in
another session than its entries) keeps that shape in both.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from smartcache.context import parse_messages, read_key
from smartcache.eval.cases import Case
from smartcache.eval.systems import Outcome, System


@dataclass
class Tally:
    n: int = 0
    positives: int = 0
    hits: int = 0                # expect-hit cases served the right answer
    served: int = 0              # any cached answer served
    false_hits: int = 0
    zone_correct: int = 0

    def add(self, case: Case, outcome: Outcome) -> None:
        self.n += 1
        correct_hit = outcome.zone == "hit" and outcome.answer == case.expected_answer
        if case.expect == "hit":
            self.positives += 1
            self.hits += correct_hit
        if outcome.zone == "hit":
            self.served += 1
            self.false_hits += not case.serves_right(outcome.answer)
        self.zone_correct += (outcome.zone == case.expect) and (case.expect != "hit" or correct_hit)

    def to_json(self) -> dict[str, Any]:
        negatives = self.n - self.positives
        from smartcache.eval.training import upper_bound, wilson_lower

        return {"n": self.n, "positives": self.positives, "hits": self.hits, "false_hits": self.false_hits,
                "hit_recall": self.hits / self.positives if self.positives else 0.0,
                "hit_recall_lower95": round(wilson_lower(self.hits, self.positives), 4),
                "false_hit_rate": self.false_hits / negatives if negatives else 0.0,
                "false_hit_rate_upper95": round(upper_bound(self.false_hits, negatives), 4),
                "precision_at_hit": (self.served - self.false_hits) / self.served if self.served else 0.0,
                "zone_accuracy": self.zone_correct / self.n if self.n else 0.0}


COMPETING = ("session", "global")
SHARED_SESSION = "competing"


def compete(cases: Sequence[Case], where: str) -> list[Case]:
    """The cases rewritten so their entries compete in one cache (see the module docstring).

        >>> from smartcache.eval.cases import parse_case
        >>> c = parse_case({"id": "a", "expect": "miss", "cached": [{"messages": [{"role": "user",
        ...     "content": "hi"}], "answer": "x"}], "probe": {"messages": [{"role": "user", "content": "hi"}]}})
        >>> [(x.session, x.probe_session, x.scope) for x in compete([c], "session") + compete([c], "global")]
        [('competing', 'competing', 'session'), ('competing', 'probe:a', 'global')]
    """
    if where not in COMPETING:
        raise ValueError(f"competing must be one of {COMPETING}, not {where!r}")
    # One request has one answer: the sets write an answer per case, so what another case
    # cached for this very request (as the exact path reads it, under the versions it was
    # written with) is right for it too; not where the answer holds for one session or one
    # moment, nor for a case that tests session scoping (its own answer is the personal one).
    cached_for: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))   # request -> answer -> cases
    for case in cases:
        if not keeps_own_answer(case):
            for item in case.cached:
                cached_for[_request_identity(case, item.messages, item.versions or case.versions)][item.answer].add(case.id)
    out = []
    for case in cases:
        scoping = _tests_scoping(case)
        if not keeps_own_answer(case):
            given = cached_for.get(_request_identity(case, case.probe, case.probe_versions), {})
            case = dataclasses.replace(case, also_right=tuple(sorted(a for a, by in given.items() if by - {case.id})))
        if scoping:      # the entries stay in their session; the probe comes from another
            out.append(dataclasses.replace(case, session=SHARED_SESSION, probe_session=f"probe:{case.id}"))
        elif where == "session":
            out.append(dataclasses.replace(case, session=SHARED_SESSION, probe_session=SHARED_SESSION))
        else:
            out.append(dataclasses.replace(case, session=SHARED_SESSION, probe_session=f"probe:{case.id}",
                                           scope="global"))
    return out


# Categories whose answers hold for one session (personal) or one moment (time-sensitive): the
# same words asked elsewhere or later do not share them.
OWN_ANSWER_CATEGORIES = frozenset({"other_session", "cross_session", "cross_session_personal", "time_sensitive"})


def keeps_own_answer(case: Case) -> bool:
    """Whether a case's answers hold for it alone: a personal or time-sensitive category, or a
    case testing session scoping (its entries' answers are the personal ones)."""
    return case.category in OWN_ANSWER_CATEGORIES or _tests_scoping(case)


def _tests_scoping(case: Case) -> bool:
    """Its entries stay in their session and the probe comes from another."""
    return case.probe_session != case.session and case.scope == "session"


def _request_identity(case: Case, messages: list[dict[str, Any]], versions: dict[str, Any] | None) -> str:
    key = read_key(parse_messages(messages))
    return f"{case.tenant}|{sorted((versions or {}).items())!r}|{key.system_hash}|{key.digest}"


def run_system(system: System, cases: Sequence[Case], *, shared_cache: bool = False,
               progress=None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    system.reset()
    if shared_cache:
        for case in cases:
            for item in case.cached:
                system.write(case, item)
        for case in cases:
            outcomes.append(system.probe(case))
            if progress:
                progress()
        return outcomes
    for case in cases:
        system.reset()
        for item in case.cached:
            system.write(case, item)
        outcomes.append(system.probe(case))
        if progress:
            progress()
    return outcomes


def score(cases: Sequence[Case], outcomes: Sequence[Outcome]) -> dict[str, Any]:
    overall = Tally()
    by_category: dict[str, Tally] = defaultdict(Tally)
    by_lang: dict[str, Tally] = defaultdict(Tally)
    by_rule: dict[str, Counter[str]] = defaultdict(Counter)
    for case, outcome in zip(cases, outcomes):
        overall.add(case, outcome)
        by_category[case.category or "-"].add(case, outcome)
        by_lang[case.lang or "-"].add(case, outcome)
        if outcome.decided_by:
            by_rule[case.category or "-"][outcome.decided_by] += 1
    result = {"overall": overall.to_json(),
              "by_category": {k: v.to_json() for k, v in sorted(by_category.items())},
              "by_lang": {k: v.to_json() for k, v in sorted(by_lang.items())}}
    if by_rule:
        result["by_rule"] = {k: dict(v.most_common()) for k, v in sorted(by_rule.items())}
    return result


def failures(cases: Sequence[Case], outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Every case whose outcome is not its expected zone (a hit of the wrong entry included),
    with the scores and reasons that produced it: ``eval --failures FILE.jsonl``."""
    out = []
    for case, outcome in zip(cases, outcomes):
        correct_hit = outcome.zone == "hit" and outcome.answer == case.expected_answer
        if outcome.zone == case.expect and (case.expect != "hit" or correct_hit):
            continue
        out.append({"id": case.id, "lang": case.lang, "domain": case.domain, "category": case.category,
                    "expect": case.expect, "zone": outcome.zone,
                    "wrong_answer_served": outcome.zone == "hit" and not case.serves_right(outcome.answer),
                    "turn_cosine": outcome.top_score, "decided_by": outcome.decided_by,
                    "reasons": list(outcome.reasons), "probe": case.probe[-1].get("content") if case.probe else None})
    return out


def oracle_threshold(cases: Sequence[Case], outcomes: Sequence[Outcome], *, max_false_hit_rate: float = 0.01
                     ) -> dict[str, Any] | None:
    """The best hit recall a one-threshold baseline reaches at false-hit rate <= the cap.

    An oracle: the threshold is chosen on the very cases it is scored on."""
    scored = [(o.top_score, c, o) for c, o in zip(cases, outcomes) if o.top_score is not None]
    if not scored:
        return None
    nothing = Tally()
    for case in cases:
        nothing.add(case, Outcome("miss", None))
    best: dict[str, Any] = {"threshold": None, **nothing.to_json()}     # None: serve nothing at all
    for threshold in sorted({s for s, _, _ in scored}, reverse=True):
        tally = Tally()
        for case, outcome in zip(cases, outcomes):
            served = outcome.top_score is not None and outcome.top_score >= threshold
            tally.add(case, Outcome("hit" if served else "miss", outcome.top_answer if served else None))
        result = tally.to_json()
        if result["false_hit_rate"] <= max_false_hit_rate and result["hit_recall"] > best["hit_recall"]:
            best = {"threshold": threshold, **result}
    return best


def evaluate(systems: Iterable[System], cases: Sequence[Case], *, shared_cache: bool = False,
             competing: str | None = None, progress_factory=None, on_outcomes=None) -> dict[str, Any]:
    """Score each system; ``on_outcomes(name, outcomes)`` sees every system's raw outcomes.
    ``competing``: ``"session"`` or ``"global"``, see ``compete`` (implies a shared cache)."""
    report: dict[str, Any] = {"systems": {}}
    run_cases = compete(cases, competing) if competing else cases
    for system in systems:
        started = time.perf_counter()
        progress = progress_factory(system.name, len(cases)) if progress_factory else None
        outcomes = run_system(system, run_cases, shared_cache=shared_cache or competing is not None,
                              progress=progress)
        result = score(run_cases, outcomes)
        if on_outcomes:
            on_outcomes(system.name, outcomes)
        result["seconds"] = round(time.perf_counter() - started, 2)
        threshold = getattr(system, "threshold", None)
        if threshold is not None:
            result["threshold"] = threshold
            result["oracle_at_1pct_false_hits"] = oracle_threshold(run_cases, outcomes)
        report["systems"][system.name] = result
    return report


def format_table(report: dict[str, Any], key: str = "by_category") -> str:
    lines = [f"| system | {key[3:]} | n | hit recall | false-hit rate | precision@hit | zone accuracy |",
             "|---|---|---|---|---|---|---|"]
    for name, result in report["systems"].items():
        rows = [("overall", result["overall"])] + list(result[key].items())
        for label, r in rows:
            lines.append(f"| {name} | {label} | {r['n']} | {r['hit_recall']:.3f} | {r['false_hit_rate']:.3f} "
                         f"| {r['precision_at_hit']:.3f} | {r['zone_accuracy']:.3f} |")
    rules = [(n, r["by_rule"]) for n, r in report["systems"].items() if r.get("by_rule")] if key == "by_category" else []
    for name, table in rules[:1]:
        lines += ["", f"What decided each category ({name}: the settling reason, with its count):", "",
                  "| category | decided by |", "|---|---|"]
        for category, counts in table.items():
            lines.append(f"| {category} | " + ", ".join(f"{code} {n}" for code, n in counts.items()) + " |")
    oracle = [(n, r["oracle_at_1pct_false_hits"]) for n, r in report["systems"].items()
              if r.get("oracle_at_1pct_false_hits")]
    if oracle:
        lines += ["", "Oracle threshold (chosen on these very cases) for false-hit rate <= 1 %:", "",
                  "| system | threshold | hit recall | false-hit rate |", "|---|---|---|---|"]
        for name, o in oracle:
            shown = "none safe" if o["threshold"] is None else f"{o['threshold']:.3f}"
            lines.append(f"| {name} | {shown} | {o['hit_recall']:.3f} | {o['false_hit_rate']:.3f} |")
    return "\n".join(lines)
