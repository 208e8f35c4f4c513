"""The reason-code registry names every code the decide stage can emit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smartcache.decide.rules import FAMILIES, RULES, family_of

DECIDE = Path(__file__).resolve().parents[1] / "src" / "smartcache" / "decide"
# Reason("code", ...), a signal("code", ...) of evidence.py and a verdict(zone, "code", ...) of match.py,
# or the same with a member: Reason(R.CODE, ...) / Reason(ReasonCode.CODE, ...).
_EMITTED = re.compile(r'(?:\bReason|\bsignal|\bverdict)\(\s*(?:Zone\.\w+\s*,\s*|zone\s*,\s*)?'
                      r'(?:"(\w+)"|(?:R|ReasonCode)\.([A-Z_]+)\b)')


def emitted_codes() -> dict[str, str]:
    """Every code the decide stage's source emits (a member name as its lower-case value)."""
    found = {}
    for path in sorted(DECIDE.glob("*.py")):
        for literal, member in _EMITTED.findall(path.read_text(encoding="utf-8")):
            found.setdefault(literal or member.lower(), path.name)
    return found


def test_the_scan_finds_codes() -> None:
    codes = emitted_codes()
    assert {"semantic_match", "time_sensitive", "opposite_words", "quantity_change"} <= set(codes)


@pytest.mark.parametrize("code, where", sorted(emitted_codes().items()), ids=lambda v: str(v))
def test_every_emitted_code_is_registered(code: str, where: str) -> None:
    assert code in RULES, f"{where} emits {code!r}, which smartcache.decide.rules does not register"


def test_registry_is_well_formed() -> None:
    for code, rule in RULES.items():
        assert rule.code == code and rule.family in FAMILIES and rule.description
    assert {rule.family for rule in RULES.values()} == set(FAMILIES)
    with pytest.raises(KeyError):
        family_of("no_such_rule")


def test_a_code_is_a_registered_member() -> None:
    from smartcache.decide import Decision, Reason, ReasonCode, Zone
    assert Reason("reset").code is ReasonCode.RESET
    with pytest.raises(ValueError):
        Reason("no_such_rule")              # a misspelt code fails where it is made
    decision = Decision(Zone.MISS, (Reason(ReasonCode.CORRECTION),))
    assert decision.has_reason("correction") and decision.has_reason(ReasonCode.CORRECTION)
    assert not decision.has_reason(ReasonCode.RESET)
    with pytest.raises(ValueError):
        decision.has_reason("corection")
    assert decision.to_json()["reasons"][0]["code"] == "correction"


def test_hard_vetoes_are_registered() -> None:
    from smartcache.decide.evidence import HARD_VETOES
    assert HARD_VETOES <= set(RULES)
