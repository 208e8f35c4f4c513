"""What one side of a comparison brings to the evidence, read once per text, not once per pair.

A lookup weighs the request against a few candidates, and the next lookup meets most of
those candidates again: everything the rules read from one request alone (its diff tokens,
character n-grams, nouns, entities, the term it defines, whether it names a route) is a
function of that request's signature. ``side_of`` computes it once and memoises it on the
fields it is read from (text, nouns, entities), so a cached entry is read once however many
lookups meet it, and the request once however many candidates it meets. Keyed by content,
not by entry id: an entry rewritten with another signature is another key, and two entries
with one text share one reading.

    >>> s = side_of("where is order 48213?", (), ("num:48213",))
    >>> s.tokens[-2:], sorted(s.grams[2])[:3], s.lang_zh, s.entities
    (('order', '48213'), ['213', '482', '821'], False, frozenset({'num:48213'}))
    >>> side_of("where is order 48213?", (), ("num:48213",)) is s
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from smartcache.decide.match import _UNRESOLVED_REFERENCE
from smartcache.decide.swaps import _ORDER_MATTERS, _canonical_noun, _defined_term
from smartcache.decide.tokens import _tokens

# Readings kept: a lookup meets a few candidates, and a cache's hot entries come back on
# every lookup near them. A reading holds three n-gram sets: about 15 KB for a 40-character
# request, 440 KB for 2,000 characters: up to MEMO_CHARS, MEMO_SIZE readings are kept (at
# most about 100 MB); of longer texts (a turn is clipped at 1,500), only the last LONG_SIZE,
# enough for the request of each lookup in flight.
MEMO_SIZE = 2048
MEMO_CHARS = 200
LONG_SIZE = 32


def _ngrams(text: str, n: int) -> frozenset[str]:
    """The character n-grams of ``text``'s letters and digits (the whole of a shorter text)."""
    text = "".join(ch for ch in text if ch.isalnum())
    return frozenset({text[i:i + n] for i in range(max(len(text) - n + 1, 0))} if len(text) >= n
                     else ({text} if text else set()))


@dataclass(frozen=True, eq=False)
class Side:
    """One request's share of the evidence. ``grams``: its character 1-, 2- and 3-grams."""

    text: str
    tokens: tuple[str, ...]
    token_set: frozenset[str]
    grams: tuple[frozenset[str], frozenset[str], frozenset[str]]
    log_len: float
    lang_zh: bool
    nouns: frozenset[str]
    canonical_nouns: frozenset[str]
    entities: frozenset[str]
    defined_term: str | None
    order_matters: bool
    unresolved_reference: bool


def side_of(text: str, nouns: tuple[str, ...], entities: tuple[str, ...]) -> Side:
    """The reading of a signature's ``text``, ``nouns`` and ``entities`` (memoised on them, for
    a text of at most ``MEMO_CHARS`` characters)."""
    return (_memoised if len(text) <= MEMO_CHARS else _memoised_long)(text, nouns, entities)


def _read(text: str, nouns: tuple[str, ...], entities: tuple[str, ...]) -> Side:
    tokens = _tokens(text)
    return Side(
        text=text, tokens=tokens, token_set=frozenset(tokens),
        grams=(_ngrams(text, 1), _ngrams(text, 2), _ngrams(text, 3)),
        log_len=math.log1p(len(text)),
        lang_zh=any("\u4e00" <= ch <= "\u9fff" for ch in text),
        nouns=frozenset(nouns), canonical_nouns=frozenset(_canonical_noun(n) for n in nouns),
        entities=frozenset(entities),
        defined_term=_defined_term(text),
        order_matters=bool(_ORDER_MATTERS.search(text)),
        unresolved_reference=bool(_UNRESOLVED_REFERENCE.search(text)),
    )


_memoised = lru_cache(maxsize=MEMO_SIZE)(_read)
_memoised_long = lru_cache(maxsize=LONG_SIZE)(_read)


__all__ = ["LONG_SIZE", "MEMO_CHARS", "MEMO_SIZE", "Side", "side_of"]
