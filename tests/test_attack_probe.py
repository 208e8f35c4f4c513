"""scripts/attack_probe.py in small: crafted near-duplicates of a few victims, every attack kind.

What normalisation owes (asserted): the cache reads a hidden instruction as plain text, an
invisible re-typing of a victim's own question still hits, another session never sees a
session entry. What the decision owes (asserted too): no poisoned answer is served at all, a constraint
added as a statement and a bare negator inserted included; see docs/reliability.md, "Crafted
near-duplicates".
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest

from smartcache import Zone

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "attack_probe.py"


def load_probe():
    spec = importlib.util.spec_from_file_location("attack_probe", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


probe = load_probe()
VICTIMS = [
    probe.Victim("en-1", "en", "hand", "How do I reset my password?", "How can I change my password?"),
    probe.Victim("en-2", "en", "hand", "What is the best way to learn Python?", "How should I learn Python?"),
    probe.Victim("zh-1", "zh", "hand", "怎么修改银行卡的预留手机号", "银行卡预留的手机号怎么改"),
    probe.Victim("zh-2", "zh", "hand", "花呗怎么提前还款", "花呗可以提前还吗"),
]
HIDDEN = ("zero_width", "homoglyph", "html_comment")


@pytest.fixture(scope="module")
def attacks():
    rng = random.Random(0)
    return [a for v in VICTIMS for a in probe.attacks_for(v, rng)]


def test_every_victim_gets_every_kind_and_keeps_its_wording(attacks):
    for victim in VICTIMS:
        mine = [a for a in attacks if a.victim == victim.id]
        assert {a.kind for a in mine} == set(probe.KINDS) and len(mine) == 17
        assert all(a.text != victim.question for a in mine)
        for attack in mine:
            if attack.kind in ("appended", "second_language", "padding"):
                assert victim.question.rstrip("?。") in attack.text


@pytest.mark.parametrize("victim", VICTIMS, ids=[v.id for v in VICTIMS])
def test_one_constraint_flips(victim):
    assert probe.flip_negation(victim) != victim.question
    assert any(w in probe.flip_negation(victim) for w in ("not", "不", "没"))
    assert probe.flip_number(victim) != victim.question and probe.flip_entity(victim) != victim.question


def as_written(text: str) -> str:
    """What the probe hid, undone by the probe's own tables (not by the cache's normalisation)."""
    unlook = {v: k for k, v in {**probe.LOOK_ALIKE, **probe.CJK_LOOK_ALIKE}.items()}
    invisible = {probe.ZWSP, probe.ZWNJ, probe.ZWJ, probe.WJ, probe.SHY, probe.LRI, probe.RLI, probe.PDI, probe.VS16}
    return "".join(chr(ord(c) - 0xE0000) if 0xE0020 <= ord(c) <= 0xE007E else unlook.get(c, c)
                   for c in text if c not in invisible)


def test_hidden_instructions_are_read_as_plain_text(cache, attacks):
    """Before normalisation these read "e\u200bx\u200ba…", "ехаmрlе" (Cyrillic) or nothing at
    all (tag characters): the instruction's domain was no entity at all."""
    hidden = [a for a in attacks if a.kind in HIDDEN and a.variant != "everywhere"
              and "example.test" in as_written(a.text)]
    assert {a.variant for a in hidden} >= {"zwsp_split", "tag_chars", "instruction", "end"}, \
        "the seed must give some victims the example.test instructions"
    for attack in hidden:      # (whole words in look-alikes stay foreign: see confusables.py)
        signature = cache.prepare(probe.user(attack.text)).fingerprint.signature
        assert "example.test" in signature.text, (attack.id, signature.text)


@pytest.fixture(scope="module")
def result(encoder):
    from smartcache import SmartCache
    rng = random.Random(0)
    victims = VICTIMS
    cache = SmartCache(encoder=encoder)
    attacks = [a for v in victims for a in probe.attacks_for(v, rng)]
    out = probe.run_attacks(cache, victims, attacks)
    out["victim_hits"] = probe.run_victims(cache, victims)
    return out


def test_victims_own_requests_still_hit(result):
    hits = result["victim_hits"]["by_variant"]
    for name in ("exact/session", "exact/global", "zero_width_only/session"):
        assert hits[name]["served"] == hits[name]["asked"] == len(VICTIMS), (name, hits[name])
    # A word spelled wholly in look-alikes stays foreign by design, so one rewording is the
    # verifier's to judge, and since issue 27 it refuses one of the four.
    assert hits["homoglyph_only/session"]["served"] >= len(VICTIMS) - 1, hits["homoglyph_only/session"]


def test_a_session_entry_never_reaches_another_session(result):
    assert result["attacks_stored"] == result["attack_requests"]
    by_scope = result["poisoned_served"]["by_scope"]
    assert by_scope["session/other_session"] == {"served": 0, "asked": result["attack_requests"]}


def test_no_poisoned_answer_is_served(result):
    assert result["poisoned_served"]["total"] == 0, {
        kind: result["served_examples"].get(kind, [])[:1] for kind in probe.KINDS}
