"""The tokens two requests are diffed by, and how much of one the other shares.

Chinese is diffed by character, English by word; fillers are dropped first and every
synonym becomes one placeholder character of its group, so a rephrasing with synonyms
diffs as no change at all.

    >>> _tokens("How many tickets are left?")
    ('how', 'many', 'ticket', 'left')
    >>> _common_share(_tokens("怎么部署这个服务"), _tokens("如何部署这个服务"))
    1.0
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Hashable, NamedTuple, Sequence

from cydifflib import SequenceMatcher     # difflib's algorithm compiled: the same opcodes and blocks, 3x faster

from smartcache.fingerprint.lexicon import synonym_groups, words_of_kind

# Spans that may replace each other without changing what is asked (data/lexicon/*.toml).
_SYNONYMS = [frozenset(words) for words, _ in synonym_groups()]
# Groups that are the form of a question or a courtesy, not its subject: a swap between
# one of these and anything is a rephrasing.
_FORM_GROUPS = frozenset(i for i, (_, form) in enumerate(synonym_groups()) if form)
# Tokens dropped before diffing. Chinese is diffed by character, so only particles
# that are never part of a content word are dropped ("请" is not: "请假").
_FILLER = words_of_kind("filler")
_TOKEN = re.compile(r"[\u3400-\u9fff\ue000-\uf8ff]|[a-z0-9_.+#'-]+", re.I)


# Chinese politeness and measure fillers, stripped as phrases before the per-character diff.
_ZH_FILLER = re.compile(r"一下|请问|麻烦你?|帮忙|帮我|给我|能不能|可不可以|可以|能否|大概|大约|一般|1个|个(?![人税性体])|是|要(?!求)|(?<=\d)[份篇封张条本首]")
# Every synonym becomes its group's placeholder character before the diff, so that
# "多长时间" / "多久" is one token on both sides, not a partial character match.
_SYNONYM_MEMBERS = sorted({m for group in _SYNONYMS for m in group}, key=len, reverse=True)
_SYNONYM_RX = re.compile("|".join(rf"\b{re.escape(m)}\b" if m.isascii() else re.escape(m) for m in _SYNONYM_MEMBERS))
_PLACEHOLDER = {m: chr(0xE000 + i) for i, group in enumerate(_SYNONYMS) for m in group}
# Shortest first, ties in alphabetical order: a frozenset's order changes with the hash seed.
_SHOWN = str.maketrans({chr(0xE000 + i): "|".join(sorted(group, key=lambda w: (len(w), w))[:2])
                        for i, group in enumerate(_SYNONYMS)})


@lru_cache(maxsize=65536)
def _tokens(text: str) -> tuple[str, ...]:
    """The diff's tokens of a text; memoised, since every rule of every candidate diffs the same
    request text (and tuples, so no caller can change a shared result)."""
    text = _ZH_FILLER.sub("", text.lower())
    text = _SYNONYM_RX.sub(lambda m: _PLACEHOLDER[m.group(0)], text)
    tokens = (t.strip(".'-") or t for t in _TOKEN.findall(text))     # quotes around a word are not part of it
    return tuple(_singular(t) for t in tokens if t not in _FILLER)


def _singular(token: str) -> str:
    """'tickets' and 'ticket' are one word to the diff ('status', 'bus' stay)."""
    if len(token) > 4 and token.isascii() and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


class Diff(NamedTuple):
    """What ``difflib.SequenceMatcher(None, a, b, autojunk=False)`` says of two sequences."""

    opcodes: tuple[tuple[str, int, int, int, int], ...]
    blocks: tuple[tuple[int, int, int], ...]      # cydifflib's Match (a, b, size) of each block


@lru_cache(maxsize=4096)
def diff(a: Sequence[Hashable], b: Sequence[Hashable]) -> Diff:
    """The opcodes and matching blocks of ``a`` against ``b`` (token tuples or strings), one
    matcher for both. Memoised: the rules of one candidate diff the same two token tuples (and
    the same two texts character by character) several times over, and a request's candidates
    come back on the next turn.

        >>> diff(("a", "b", "c"), ("a", "x", "c")).opcodes
        (('equal', 0, 1, 0, 1), ('replace', 1, 2, 1, 2), ('equal', 2, 3, 2, 3))
    """
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return Diff(tuple(matcher.get_opcodes()), tuple(matcher.get_matching_blocks()))


@lru_cache(maxsize=16384)
def _running_weight(tokens: tuple[str, ...]) -> tuple[int, ...]:
    """The weight of every prefix of ``tokens`` (0 first), so a block's weight is two look-ups.
    A synonym placeholder stands for a word, so it weighs as two characters. Memoised: the
    rules weigh the same request's tokens against every candidate."""
    out, total = [0], 0
    for t in tokens:
        total += 2 if "\ue000" <= t <= "\uf8ff" else 1
        out.append(total)
    return tuple(out)


def _running(tokens: tuple[str, ...]) -> tuple[int, ...]:
    # A long turn's sums are not kept: a 1,500-token one would hold 50 kB in the memo.
    return _running_weight(tokens) if len(tokens) <= 200 else _running_weight.__wrapped__(tokens)


def _common_share(ta: Sequence[str], tb: Sequence[str]) -> float:
    ta, tb = tuple(ta), tuple(tb)
    wa, wb = _running(ta), _running(tb)
    common = sum(wa[b.a + b.size] - wa[b.a] for b in diff(ta, tb).blocks)
    return common / max(wa[-1], wb[-1], 1)



# Question words: a swap of one for another is a rephrasing the skeleton check already judged.
_QUESTION_WORDS = words_of_kind("question")


def _is_form_word(token: str) -> bool:
    if "\ue000" <= token[:1] <= "\uf8ff":
        return ord(token[0]) - 0xE000 in _FORM_GROUPS
    return token in _QUESTION_WORDS or token in ("这", "那", "它")



def _is_question_words(span: str) -> bool:
    words = span.split() if " " in span or span.isascii() else [span]
    return all(w in _QUESTION_WORDS or "\ue000" <= w[:1] <= "\uf8ff" for w in words)

