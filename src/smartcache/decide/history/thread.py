"""What a request can depend on: the thread of a conversation, and the asides off it.

The thread is the turns that share a content word with the last turn and, for a reply or
a reference, with the first request (the conversation's subject). An aside (an anecdote,
a joke, a closed side question) shares none. A word in more than half of the turns ties
nothing: assistants repeat their own phrasing.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from smartcache.context import TurnRecord
from smartcache.decide.tokens import _is_form_word, _tokens
from smartcache.fingerprint import Signature
from smartcache.fingerprint.lexicon import words_of_kind
from smartcache.fingerprint.nouns import chinese_nouns

_COMMON = words_of_kind("common")
_QUESTION = words_of_kind("question")


def _is_content(token: str) -> bool:
    """A diff token that says what a turn is about: not a form or question word, not a word
    too common to mean anything alone."""
    # The diff's tokens are singular ("works" -> "work"): a common word is looked up both ways.
    common = token in _COMMON or token + "s" in _COMMON
    return not (_is_form_word(token) or common or token in _QUESTION or not token.strip(".,'-"))


@lru_cache(maxsize=50_000)
def content_words(text: str) -> frozenset[str]:
    """The words that tie a turn to a subject: Chinese nouns (jieba) and the other diff tokens
    of three letters or more that are neither common nor numbers.

        >>> sorted(content_words("my router keeps dropping the connection"))
        ['connection', 'dropping', 'router']
    """
    ascii_words = {t for t in _tokens(text) if t.isascii() and len(t) >= 3 and _is_content(t)
                   and not any(ch.isdigit() for ch in t)}
    return frozenset(ascii_words | {w for w in chinese_nouns(text) if w not in _COMMON})


def thread(probe: Signature, cached: Signature, seeds: Sequence[TurnRecord]) -> set[tuple[int, int]]:
    """(side, pos) of the turns on the thread (side 0: the probe's, 1: the cached entry's): the
    ``seeds``, and every turn that shares a content word with them or with the last turns.

    One hop, not a closure: assistant turns repeat their own phrasing ("Here is a short
    answer: …"), and a chain through it would tie every turn to every other. For the same
    reason a word in more than half of the conversation's turns ties nothing."""
    turns = [(side, t, content_words(t.excerpt)) for side, sig in enumerate((probe, cached))
             for t in sig.turns if not t.chatter]
    counts: dict[str, int] = {}
    for _, _, words in turns:
        for w in words:
            counts[w] = counts.get(w, 0) + 1
    boilerplate = {w for w, n in counts.items() if n > max(2, len(turns) // 2)}
    anchor = set(content_words(probe.text)) | content_words(cached.text)
    # An assistant seed is on the thread, but its words tie nothing: assistants repeat
    # their own phrasing from turn to turn.
    anchor |= {w for s in seeds if s.role == "user" for w in content_words(s.excerpt)}
    anchor -= boilerplate
    return {(side, t.pos) for side, t, words in turns if any(t is s for s in seeds) or words & anchor}


def first_request(turns: Sequence[TurnRecord], skipped: set[int]) -> TurnRecord | None:
    return next((t for t in turns if t.role == "user" and not t.chatter and id(t) not in skipped), None)


__all__ = ["content_words", "first_request", "thread"]
