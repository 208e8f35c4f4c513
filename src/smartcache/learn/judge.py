"""The answer judge: would serving the cached answer have been as right as the fresh one?

When a request reaches the engine while the cache had a candidate, the engine's fresh
answer is compared with the candidate's cached answer; the label is one observation for
``learn``. A wrong SAME teaches the cache to serve wrong answers, so SAME is claimed only
when nothing checkable differs and the meaning is near-identical; otherwise DIFFERENT (a
fact, number, entity, code block or negation changed, or the meaning is far apart) or
UNDECIDED (too short or generic to tell, or in between).

    >>> judge = AnswerJudge()
    >>> judge.compare("The capital of France is Paris.", "the capital of France is Paris").label
    <Label.SAME: 'same'>
    >>> judge.compare("The flight takes 2 hours.", "The flight takes 3 hours.").reason
    'numbers differ: 2 / 3'
    >>> judge.compare("(zh answer bq-k3483) 借贷时间段", "(zh answer bq-k2596) 7抢购活动").label
    <Label.DIFFERENT: 'different'>
    >>> judge.compare("Yes.", "No.").label
    <Label.UNDECIDED: 'undecided'>
    >>> judge.compare("(en answer qqp-k88024)", "(en answer qqp-k88024)").label   # an oracle's, exact
    <Label.SAME: 'same'>

Checks run cheapest first and stop at the first verdict; one comparison of two answers of
a hundred tokens costs well under a millisecond without an encoder (the encoder adds one
batched call of two texts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from smartcache.context import normalize_text
from smartcache.decide.validate import key_facts
from smartcache.fingerprint.entities import extract_entities
from smartcache.fingerprint.tags import negation_count

if TYPE_CHECKING:
    from smartcache.fingerprint import Encoder


class Label(str, Enum):
    SAME = "same"                # serving the cached answer would have been right
    DIFFERENT = "different"      # it would have been wrong
    UNDECIDED = "undecided"      # the answers do not tell


@dataclass(frozen=True)
class Judgement:
    label: Label
    reason: str                  # which check decided, with the values that differed
    similarity: float | None     # the meaning score read (cosine, or word overlap), if reached


@dataclass(frozen=True)
class JudgeThresholds:
    """Where the meaning score decides. Tuned on QQP and LCQMC answers (docs/eval/judge.md)."""

    same_cosine: float = 0.97        # encoder cosine at or above: SAME (when the overlap agrees)
    same_overlap: float = 0.80       # word / character-pair overlap at or above: SAME
    different_cosine: float = 0.60   # encoder cosine below: DIFFERENT
    different_overlap: float = 0.20  # overlap below (no encoder): DIFFERENT
    min_units: int = 6               # fewer content words (en) or characters (zh): too short to tell


# Answers that say nothing about the question: refusals, apologies, bare acknowledgements.
_GENERIC = re.compile(
    r"^(?:yes|no|ok(?:ay)?|sure|thanks?(?: you)?|i don'?t know|好的?|是的?|对|不是|可以|不可以|没有|不知道|谢谢)\W*$|"
    r"\bi(?:'m| am) (?:sorry|not (?:able|sure)|unable)\b|\bi (?:can(?:'|no)?t|cannot|do not|don'?t) "
    r"(?:help|assist|answer|provide|understand|have (?:access|information))|\bas an ai\b|"
    r"抱歉|对不起|很遗憾|无法(?:回答|提供|帮助|理解)|不能(?:回答|提供|帮助)|我不(?:知道|清楚|理解)|作为(?:一个)?(?:ai|人工智能)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_LIST_MARK = re.compile(r"^\s*\d+[.)、](?!\d)", re.M)
_CODE_BLOCK = re.compile(r"```[^\n]*\n?(.*?)(?:```|$)", re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[\u3400-\u4dbf\u4e00-\u9fff]")
_LOOSE = re.compile(r"\s+|[!?;:。，！？；：、\"'()（）“”‘’]+|(?<!\d)[.,]|[.,](?!\d)")
# Plain negations an answer may flip with ("you can" / "you cannot", "可以" / "不可以");
# negation_count covers the intent forms ("don't", "不要").
_PLAIN_NEGATION = re.compile(r"\b(?:not|no|never|none|nothing|cannot)\b|n't\b|[不没未无非]")


def _units(text: str) -> list[str]:
    """Content units: English words and single CJK characters (normalised, lower case)."""
    return _WORD.findall(text)


def _overlap(a: list[str], b: list[str]) -> float:
    """Jaccard of word unigrams plus adjacent pairs: order counts a little, so a reworded
    answer scores high and a reordered different one lower.

        >>> round(_overlap(list("abcd"), list("abce")), 2)
        0.56
    """
    grams = lambda u: set(u) | {(x, y) for x, y in zip(u, u[1:])}
    ga, gb = grams(a), grams(b)
    return len(ga & gb) / len(ga | gb) if ga or gb else 1.0


def _codes(text: str) -> set[str]:
    blocks = {" ".join(m.split()) for m in _CODE_BLOCK.findall(text)}
    return blocks | {m.strip() for m in _INLINE_CODE.findall(_CODE_BLOCK.sub(" ", text))}


def _negations(text: str) -> int:
    return negation_count(text) + len(_PLAIN_NEGATION.findall(text))


def _diff(a: set[str], b: set[str]) -> str:
    show = lambda s: ",".join(sorted(s)[:3]) or "-"
    return f"{show(a - b)} / {show(b - a)}"


class AnswerJudge:
    """Compares a cached answer with a fresh one. ``encoder`` (the project's Encoder,
    unit vectors) scores meaning by cosine; without one, word overlap does."""

    def __init__(self, encoder: Encoder | None = None, thresholds: JudgeThresholds | None = None) -> None:
        self.encoder = encoder
        self.thresholds = thresholds or JudgeThresholds()

    def identical(self, cached: str, fresh: str) -> bool:
        """Whether ``compare`` would call the two SAME for being one text: the cheap part of it,
        no model run (a few microseconds)."""
        a, b = normalize_text(cached), normalize_text(fresh)
        if _GENERIC.search(a) or _GENERIC.search(b):
            return False
        return self._identical(a, b, min(len(_units(a)), len(_units(b))) < self.thresholds.min_units)

    @staticmethod
    def _identical(a: str, b: str, short: bool) -> bool:
        # Identical and specific: served, the cached text is the engine's answer letter for letter. A
        # short answer counts only when it carries a number or an id ("42", "(answer k3483)"):
        # "Paris." for two questions says nothing about whether they are one question.
        return _bare(a) == _bare(b) and (not short or bool(_NUMBER.search(a)))

    def compare(self, cached: str, fresh: str) -> Judgement:
        t = self.thresholds
        a, b = normalize_text(cached), normalize_text(fresh)
        if _GENERIC.search(a) or _GENERIC.search(b):
            # Before the identity check: two questions answered with one refusal are not one question.
            return Judgement(Label.UNDECIDED, "generic: a refusal, an apology or a bare yes / no", None)
        ua, ub = _units(a), _units(b)
        short = min(len(ua), len(ub)) < t.min_units
        if self._identical(a, b, short):
            return Judgement(Label.SAME, "identical after normalisation", 1.0)
        cheap = _cheap_differences(a, b)
        if cheap:
            return Judgement(Label.DIFFERENT, cheap, None)
        if short:     # a short answer still tells a changed name ("在北京。" / "在上海。")
            facts = _fact_differences(cached, fresh, a, b)
            return Judgement(Label.DIFFERENT, facts, None) if facts else Judgement(
                Label.UNDECIDED, f"too short to tell: {min(len(ua), len(ub))} words", None)
        overlap = _overlap(ua, ub)
        if self.encoder is None:
            score, same, different = overlap, overlap >= t.same_overlap, overlap < t.different_overlap
            why = f"overlap {overlap:.2f}"
        else:
            va, vb = self.encoder.encode([a, b])
            score = float(va @ vb)
            same = score >= t.same_cosine and overlap >= t.same_overlap
            different = score < t.different_cosine
            why = f"cosine {score:.3f}, overlap {overlap:.2f}"
        if different:
            return Judgement(Label.DIFFERENT, f"{why}: far apart", score)
        # Entities and key facts only when the meaning did not already tell DIFFERENT: they
        # cost most (a few ms an answer), and a changed name in a near-identical answer is a
        # DIFFERENT the overlap alone would leave undecided.
        facts = _fact_differences(cached, fresh, a, b)
        if facts:
            return Judgement(Label.DIFFERENT, facts, score)
        if not same:
            return Judgement(Label.UNDECIDED, f"{why}: in between", score)
        return Judgement(Label.SAME, f"{why}: near-identical, no fact differs", score)


def _bare(text: str) -> str:
    """Text without spaces and sentence punctuation, but a point between digits ("3.5" is not "35")."""
    return _LOOSE.sub("", text)


def _cheap_differences(a: str, b: str) -> str:
    """Numbers, code, negations of two normalised answers: the first that differs, as a reason."""
    # List markers ("1.", "2)") are counted by key_facts' list length, not compared as numbers:
    # an answer cut short after "1." would otherwise differ from one cut before it.
    na, nb = set(_NUMBER.findall(_LIST_MARK.sub(" ", a))), set(_NUMBER.findall(_LIST_MARK.sub(" ", b)))
    if na != nb:
        return f"numbers differ: {_diff(na, nb)}"
    ca, cb = _codes(a), _codes(b)
    if ca != cb:
        return f"code differs: {_diff(ca, cb)}"
    if _negations(a) != _negations(b):
        return f"negations differ: {_negations(a)} / {_negations(b)}"
    return ""


def _fact_differences(cached: str, fresh: str, a: str, b: str) -> str:
    """Key facts (validate.key_facts) and entities, read from the case-kept text (names)."""
    fa, fb = set(key_facts(a)), set(key_facts(b))
    if fa != fb:
        return f"key facts differ: {_diff(fa, fb)}"
    ea = {e.key.lower() for e in extract_entities(normalize_text(cached, lower=False))}
    eb = {e.key.lower() for e in extract_entities(normalize_text(fresh, lower=False))}
    if ea != eb:
        return f"entities differ: {_diff(ea, eb)}"
    return ""
