"""Evaluation cases in the CASES.md format, read and checked line by line."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smartcache.errors import InvalidRequest

EXPECTS = ("hit", "half_hit", "miss")


@dataclass(frozen=True)
class CachedItem:
    messages: list[dict[str, Any]]
    answer: str
    versions: dict[str, Any] | None = None


@dataclass(frozen=True)
class Case:
    id: str
    expect: str
    cached: tuple[CachedItem, ...]
    probe: list[dict[str, Any]]
    session: str
    probe_session: str
    lang: str = ""
    domain: str = ""
    category: str = ""
    scope: str = "session"
    expect_index: int = -1
    versions: dict[str, Any] | None = None
    probe_versions: dict[str, Any] | None = None
    tenant: str = "default"
    probe_answer: str | None = None
    also_right: tuple[str, ...] = ()      # answers other cases cached for this very request (competing runs)
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def expected_answer(self) -> str | None:
        return self.cached[self.expect_index].answer if self.expect == "hit" and self.cached else None

    def serves_right(self, answer: str | None) -> bool:
        """Whether serving ``answer`` to the probe is right: the expected hit's answer, or the
        probe's own answer (``probe.answer``, where the set knows it), which in a competing
        run another case's entry may hold, or what another case cached for this very request
        (``also_right``: one request has one answer)."""
        return answer is not None and (answer in (self.expected_answer, self.probe_answer) or answer in self.also_right)


def parse_case(data: Any, where: str = "case") -> Case:
    if not isinstance(data, dict):
        raise InvalidRequest(f"{where}: a case must be a JSON object")
    for key in ("id", "probe", "expect"):
        if key not in data:
            raise InvalidRequest(f"{where}: missing '{key}'")
    if data["expect"] not in EXPECTS:
        raise InvalidRequest(f"{where}: expect must be one of {EXPECTS}, got {data['expect']!r}")
    probe = data["probe"]
    if not isinstance(probe, dict) or not isinstance(probe.get("messages"), list) or not probe["messages"]:
        raise InvalidRequest(f"{where}: probe needs a non-empty 'messages' list")
    cached = []
    for i, item in enumerate(data.get("cached") or []):
        if not isinstance(item, dict) or not isinstance(item.get("messages"), list) \
                or not isinstance(item.get("answer"), str):
            raise InvalidRequest(f"{where}: cached[{i}] needs 'messages' (a list) and 'answer' (a string)")
        cached.append(CachedItem(item["messages"], item["answer"], item.get("versions")))
    index = data.get("expect_index", -1)
    if data["expect"] == "hit":
        if not cached:
            raise InvalidRequest(f"{where}: an expected hit needs at least one cached entry")
        if not isinstance(index, int) or not -len(cached) <= index < len(cached):
            raise InvalidRequest(f"{where}: expect_index {index!r} is out of range")
    probe_answer = probe.get("answer")
    if probe_answer is not None and not isinstance(probe_answer, str):
        raise InvalidRequest(f"{where}: probe.answer must be a string")
    if data["expect"] == "hit" and probe_answer is not None and probe_answer != cached[index].answer:
        raise InvalidRequest(f"{where}: probe.answer differs from the expected hit's answer")
    if data["expect"] != "hit" and probe_answer is not None and any(c.answer == probe_answer for c in cached):
        raise InvalidRequest(f"{where}: probe.answer is a cached answer the probe must not be served")
    session = str(data.get("session") or data["id"])
    scope = data.get("scope", "session")
    if scope not in ("session", "global"):
        raise InvalidRequest(f"{where}: scope must be 'session' or 'global'")
    return Case(id=str(data["id"]), expect=data["expect"], cached=tuple(cached), probe=probe["messages"],
                session=session, probe_session=str(data.get("probe_session") or session),
                lang=str(data.get("lang", "")), domain=str(data.get("domain", "")),
                category=str(data.get("category", "")), scope=scope, expect_index=index,
                versions=data.get("versions"), probe_versions=probe.get("versions", data.get("versions")),
                tenant=str(data.get("tenant", "default")), probe_answer=probe_answer, raw=data)


def load_cases(path: str | Path) -> list[Case]:
    """Every case of a JSONL file; a bad line raises InvalidRequest naming the line."""
    cases, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"{path}:{n}: not JSON ({exc.msg})") from None
            case = parse_case(data, f"{path}:{n}")
            if case.id in seen:
                raise InvalidRequest(f"{path}:{n}: duplicate id {case.id!r}")
            seen.add(case.id)
            cases.append(case)
    return cases
