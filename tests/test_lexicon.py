"""The lexicon files: every concept's own examples, checked against the rules built from it.

A `same` pair must agree on every use the concept has (synonym group, action class,
antonym side, word opposites, filler, question words, common words); a `different` pair
must be told apart by at least one of them.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from smartcache.context import normalize_text
from smartcache.decide import history, match
from smartcache.decide.appended import appended_constraint
from smartcache.decide.near_exact import near_exact
from smartcache.decide.swaps import person_swapped, substituted_spans
from smartcache.errors import ConfigError
from smartcache.fingerprint import lexicon, tags
from smartcache.fingerprint.lexicon import Concept, Lexicon, load_lexicon, parse_lexicon

LEXICONS = {lang: load_lexicon(lang) for lang in lexicon.LANGUAGES}
CONCEPTS = [(lex, c) for lex in LEXICONS.values() for c in lex.concepts]
IDS = [f"{lex.lang}-{c.name}" for lex, c in CONCEPTS]


def uses(lex: Lexicon, c: Concept) -> list[str]:
    out = ["synonyms"] if c.synonyms else []
    out += ["action"] if c.kind == "action" else []
    out += ["antonym"] if c.name in lex.antonym_names() else []
    out += ["pairs"] if c.pairs else []
    out += [c.kind] if c.kind in ("filler", "question", "common", "constraint") else []
    out += ["near_exact"] if c.kind in ("courtesy", "courtesy_inner", "courtesy_lead", "confusable", "asking") else []
    out += ["frame"] if c.kind == "question_frame" else []   # read by near_exact too, as a use of its own
    out += ["generic"] if c.kind == "generic_action" else []
    out += ["role"] if c.kind == "role" else []
    return out


def agree(use: str, c: Concept, a: str, b: str) -> bool:
    """Whether the rules of one use read ``a`` and ``b`` (normalised) as the same request."""
    if use == "synonyms" or use == "question":
        return match.substituted_spans(a, b) == []
    if use == "action":
        return tags.task_actions(a) == tags.task_actions(b) and c.name in tags.task_actions(a)
    if use == "antonym":
        return tags.action_sides(a) == tags.action_sides(b)
    if use == "pairs":
        return match._opposite_swap(a, b) is None
    if use == "filler":
        return match._tokens(a) == match._tokens(b)
    if use == "common":     # a same pair is one subject: a content word ties the two turns
        return bool(history.content_words(a) & history.content_words(b))
    if use == "constraint":  # the opener in both, or in a rewording: nothing is added
        return appended_constraint(a, b) is None and appended_constraint(b, a) is None
    if use in ("near_exact", "frame"):  # a repeat but for courtesy, a slip or a question's frame
        return near_exact(a, b) is not None
    if use == "generic":    # the verb stands for the other side's class
        return not _actions_conflict(a, b) and c.name in tags.generic_verbs(a) + tags.generic_verbs(b)
    if use == "role":       # the words of one role are one person
        return person_swapped(a, b, substituted_spans(a, b)) is None
    raise AssertionError(use)


def _actions_conflict(a: str, b: str) -> bool:
    return tags.actions_conflict(a, tags.task_actions(a), b, tags.task_actions(b))


def told_apart(use: str, a: str, b: str) -> bool:
    if use == "synonyms":
        return match.substituted_spans(a, b) != []
    if use == "action":
        return tags.task_actions(a) != tags.task_actions(b)
    if use == "antonym":
        return any(x * y < 0 for x, y in zip(tags.action_sides(a), tags.action_sides(b)))
    if use == "pairs":
        return match._opposite_swap(a, b) is not None
    if use == "common":     # a different pair shares only common words: nothing ties the turns
        return not history.content_words(a) & history.content_words(b)
    if use == "constraint":  # one way round: the side that adds the clause is the cached one
        return appended_constraint(a, b) is not None or appended_constraint(b, a) is not None
    if use in ("near_exact", "frame"):
        return near_exact(a, b) is None
    if use == "generic":
        return _actions_conflict(a, b)
    if use == "role":
        return person_swapped(a, b, substituted_spans(a, b)) is not None
    return False


def mentions(c: Concept, text: str) -> bool:
    """An example is about its concept: one side holds a member, a pattern or a pair word."""
    words = [w.rstrip("*") for w in c.words] + [w for p in c.pairs for w in p]
    return any(w in text for w in words) or any(re.search(p, text) for p in c.patterns)


@pytest.mark.parametrize("lex, concept", CONCEPTS, ids=IDS)
def test_examples(lex: Lexicon, concept: Concept) -> None:
    concept_uses = uses(lex, concept)
    assert concept_uses, f"{concept.name} feeds no table"
    for a, b in concept.same:
        a, b = normalize_text(a), normalize_text(b)
        assert mentions(concept, a) or mentions(concept, b), (a, b)
        failed = [u for u in concept_uses if not agree(u, concept, a, b)]
        assert not failed, f"same pair {a!r} / {b!r} told apart by {failed}"
    for a, b in concept.different:
        a, b = normalize_text(a), normalize_text(b)
        assert mentions(concept, a) or mentions(concept, b), (a, b)
        assert any(told_apart(u, a, b) for u in concept_uses), f"different pair {a!r} / {b!r} read alike"


def test_each_word_in_one_concept_per_use() -> None:
    """A concept is defined once: no member sits in two synonym groups, two action classes,
    two antonym sides or two concepts' opposite pairs (across both languages)."""
    owners: dict[tuple[str, str], set[str]] = defaultdict(set)
    for lex, c in CONCEPTS:
        for use in uses(lex, c):
            members = [w for p in c.pairs for w in p] if use == "pairs" else c.members(use)
            for m in members:
                owners[(use, m.rstrip("*"))].add(c.name)
    # Action classes and opposite pairs are joined by name across the two files.
    shared = {key: names for key, names in owners.items() if len(names) > 1}
    assert not shared


def test_versions_and_order() -> None:
    for lex in LEXICONS.values():
        assert isinstance(lex.version, int) and lex.version >= 1
    # Fingerprint.sides is positional and stored with entries: the first pair stays enable / disable.
    assert tags.action_sides("怎么开启自动备份")[0] == 1 and tags.action_sides("how do i disable it")[0] == -1
    assert len(tags.ANTONYMS) == len(lexicon.antonym_pairs())


def test_load_is_cached() -> None:
    assert load_lexicon("zh") is load_lexicon("zh")


GOOD = """version = 1
[concept.enable]
kind = "action"
words = ["开启"]
examples.same = [["怎么开启", "如何开启"]]
"""


@pytest.mark.parametrize("text, message", [
    ("version = 1\n[concept.enable\n", "not valid TOML"),
    (GOOD.replace("version = 1\n", ""), "version"),
    (GOOD.replace("version = 1", 'version = "1"'), "version"),
    (GOOD.replace('"action"', '"verb"'), "kind"),
    (GOOD.replace('examples.same = [["怎么开启", "如何开启"]]', ""), "no examples"),
    (GOOD.replace('["开启"]', '"开启"'), "list of non-empty strings"),
    (GOOD + "patterns = ['(?<!取消']\n", "not a regex"),
    (GOOD + 'opposite = "disable"\n', "names no concept"),
    (GOOD + 'not_in = { action = ["打开"] }\n', "not its members"),
    (GOOD + 'colour = "red"\n', "unknown keys"),
    (GOOD.replace('["怎么开启", "如何开启"]', '["怎么开启"]'), "pairs"),
    (GOOD + "form = true\n", "needs a synonym group"),
    (GOOD + 'stands_for = ["enable"]\n', "and only one"),
    (GOOD.replace('"action"', '"generic_action"'), "and only one"),
    (GOOD.replace('"action"', '"generic_action"') + 'stands_for = ["refund"]\n', "names no action class"),
], ids=["toml", "no-version", "version-type", "kind", "no-examples", "words-type", "regex", "opposite",
        "not-in", "unknown-key", "example-pair", "form-without-group", "stands-for-on-action", "generic-without",
        "stands-for-stranger"])
def test_malformed_file_is_a_config_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_lexicon(text, "zh", "test.toml")


def test_good_text_parses() -> None:
    lex = parse_lexicon(GOOD, "zh")
    assert lex.version == 1 and lex.concepts[0].members("action") == ("开启",)


def test_unknown_language() -> None:
    with pytest.raises(ConfigError, match="no lexicon"):
        load_lexicon("fr")


def test_files_are_package_data() -> None:
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/lexicon/*.toml"' in pyproject
