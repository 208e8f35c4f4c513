"""Who points back: last turns that mean nothing without the turns before them, and what they point to.

- ``accepts``: a short reply to the last offer ("sure, go ahead", "那就订吧");
- ``points_back``: a short turn with a pronoun or a reference ("can I still change it?");
- ``depends_on_latest``: a turn with no subject of its own ("is it expensive?", "你看过吗",
  "why?", "多少钱") or one that moves the question just asked to a new subject ("and
  Porto?", "那本书呢"): it reads the latest exchange, whatever words it shares with the rest;
- ``latest_exchange``: that exchange, the last user request and the assistant turn after it.
"""

from __future__ import annotations

import re
from typing import Sequence

from smartcache.context import TurnRecord
from smartcache.decide.history.thread import content_words
from smartcache.decide.tokens import _tokens
from smartcache.fingerprint import has_reference

# A last turn of at most this many words (after fillers; two Chinese characters a word)
# answers the turn before it ("sure, go ahead", "option b", "那就订吧"), and one of at most
# REFERRING_WORDS that refers back points into the history ("can I still change it?"); twice
# that with a pronoun ("how much of that should I feed him per day?"), which "that" or "one"
# alone are too common to be.
REPLY_TOKENS = 4
REFERRING_WORDS = 6
# Pronouns for a person or a thing named before ("他最快什么时候能来", "what food should I give her",
# "how much would that one cost me per month?").
_PRONOUN = re.compile(r"[他她它]|[那这][个家种款位]|\b(?:he|she|him|her|his|its|they|them|their)\b"
                      r"|\b(?:that|this|the same) one\b"
                      # a definite description of something said before ("the cheaper option",
                      # "the second place you mentioned", "你刚说的第二家", "便宜的那个")
                      r"|\byou (?:just )?(?:mentioned|said|suggested|recommended|listed|offered)\b"
                      r"|\bthe (?:first|second|third|last|other|cheaper|cheapest|bigger|smaller|earlier|later) "
                      r"(?:one|option|choice|place|plan)\b"
                      r"|你(?:刚才?|之前|上面)?(?:说|提|推荐|列|讲)(?:的|过)|(?:刚才|上面|前面|之前)(?:说|提)?的"
                      r"|第[一二三四五12345][个家种款套条]", re.I)
# A turn that asks something is a request of its own, however short: read on the raw text,
# since the diff's tokens turn 怎么 / 如何 into a synonym placeholder.
_ASKS = re.compile(r"[?？]|[吗么呢嘛]\s*$|怎|什么|多少|几|哪|如何|为何|是否|能否|可否|有没有|是不是|能不能|可不可以|"
                   r"^\s*(?:what|how|why|when|where|who|which|whose|can|could|would|will|is|are|am|do|does|did|"
                   r"should|shall|may|have|has)\b", re.I)


def _size(text: str) -> float:
    """Words after fillers; a Chinese token is one character, and two make about one word."""
    tokens = [t for t in _tokens(text) if t.strip(".,!?;:'-")]
    return sum(0.5 if t >= "\u3400" and len(t) == 1 else 1.0 for t in tokens)


def accepts(text: str) -> bool:
    """A last turn that answers the assistant's last turn and says nothing of its own: short,
    asking nothing, naming nothing ("sure, go ahead", "option b", "那就订吧", "好的，就这个").

        >>> accepts("sure, go ahead"), accepts("yes please"), accepts("开通微粒贷"), accepts("what is a cname?")
        (True, True, False, False)
    """
    # A short request names what it asks for ("开通微粒贷", "track parcel"); a reply names nothing.
    return _size(text) <= REPLY_TOKENS and not _ASKS.search(text) and not content_words(text)


def points_back(text: str) -> bool:
    """A short last turn that refers into the history ("when will it arrive?", "那个一年多少钱？",
    "how much of that should I feed him per day?"). A longer sentence with a "that" or a
    "one" in it says what it is about.

        >>> points_back("can i still change it?"), points_back("他最快什么时候能来?")
        (True, True)
        >>> points_back("how can one defend oneself against an aggressive dog?"), points_back("sure")
        (False, False)
    """
    size = _size(text)
    return bool(_PRONOUN.search(text) and size <= 2 * REFERRING_WORDS
                or has_reference(text) and size <= REFERRING_WORDS)


def is_reply(text: str) -> bool:
    """A last turn that means nothing without the turns before it: ``accepts`` or ``points_back``."""
    return accepts(text) or points_back(text)


def _last_offer(turns: Sequence[TurnRecord]) -> TurnRecord | None:
    """The turn a reply answers: the last assistant turn that is not small talk."""
    return next((t for t in reversed(turns) if t.role == "assistant" and not t.chatter), None)


# A new subject for the question just asked: "and Porto?", "what about the Honda?", "那本书呢",
# "重庆呢". Not a whole question that starts with "and" ("and how do I cancel it?"), nor one
# that ends in 呢 as a particle ("怎么申请信用卡呢").
_ELLIPTICAL = re.compile(
    r"^\s*(?:and|what about|how about|same for)\s+(?!(?:how|what|why|when|where|who|which|can|could|would|is|are|"
    r"do|does|did|should|will|i|you)\b)[^?]{1,40}\??\s*$"
    r"|^[^怎什多几哪如为是能可有吗么谁\s]{1,10}呢\s*[?？]?\s*$", re.I)


def depends_on_latest(text: str) -> bool:
    """A last turn whose subject is the latest exchange's: a pronoun or nothing stands for it,
    or it asks the question just asked of something new. Short turns only.

        >>> [depends_on_latest(t) for t in ("is it expensive?", "你看过吗", "why?", "多少钱", "and porto?",
        ...                                 "那本书呢", "what about the honda?")]
        [True, True, True, True, True, True, True]
        >>> [depends_on_latest(t) for t in ("is the louvre expensive?", "怎么申请信用卡呢", "how do i reset my password?",
        ...                                 "and how do i cancel my subscription?", "成都三天怎么玩")]
        [False, False, False, False, False]
    """
    size = _size(text)
    if points_back(text) or _ELLIPTICAL.search(text) and size <= REFERRING_WORDS:
        return True
    # A bare question: it asks, and names nothing ("why?", "多少钱", "你看过吗", "how much?").
    return size <= REPLY_TOKENS and bool(_ASKS.search(text)) and not content_words(text)


def _aside(request: TurnRecord, reply: TurnRecord | None) -> bool:
    """An exchange the conversation goes on around: a user turn that neither asks nor states a
    fact, answered in a few words ("my dog is snoring next to me" / "Cute!", "刚才走开了一下" /
    "没事，欢迎回来～"). A statement answered at length gives the context ("我买了一条鲈鱼，想清蒸"),
    and one that names a thing or a number ("I'm now in Porto") may change the subject."""
    return (not _ASKS.search(request.excerpt) and not request.facts and not accepts(request.excerpt)
            and reply is not None and _size(reply.excerpt) <= ASIDE_REPLY_WORDS)


# An aside's reply is an acknowledgement: at most this many words (two Chinese characters a word).
ASIDE_REPLY_WORDS = 5


def latest_exchange(turns: Sequence[TurnRecord]) -> tuple[TurnRecord, ...]:
    """The last request of a history and the assistant turn that answered it, small talk and
    asides skipped: what a turn with no subject of its own is about. Empty for no history.

        >>> from smartcache.context import turn_records
        >>> recs = turn_records([("user", "Tell me about Lisbon."), ("assistant", "A hilly capital."),
        ...                      ("user", "my dog is snoring next to me"), ("assistant", "Cute!")])
        >>> [t.pos for t in latest_exchange(recs)]
        [1, 2]
    """
    turns = [t for t in turns if not t.chatter]
    while turns:
        offer = _last_offer(turns)
        before = turns if offer is None else [t for t in turns if t.pos < offer.pos]
        request = next((t for t in reversed(before) if t.role == "user"), None)
        found = tuple(t for t in (request, offer) if t is not None)
        if request is None or not _aside(request, offer) or request is turns[0]:
            return found
        turns = [t for t in turns if t.pos < request.pos]
    return ()


def _referent(turns: Sequence[TurnRecord]) -> tuple[frozenset[str], frozenset[str]]:
    """What the latest exchange is about: the request's content words and facts, and the facts
    (names, numbers, codes) of the answer to it. Rewordings of the answer keep the same."""
    words: set[str] = set()
    facts: set[str] = set()
    for t in latest_exchange(turns):
        if t.role == "user":
            words |= content_words(t.excerpt)
        facts |= set(t.facts)
    return frozenset(words), frozenset(facts)


def referent_changed(probe: Sequence[TurnRecord], cached: Sequence[TurnRecord]) -> str | None:
    """Why the latest exchanges of two histories are about different things (a detail for
    people), or None when they are about the same: requests with the same facts and mostly
    the same content words (more than half of them shared), answered with the same facts.

        >>> from smartcache.context import turn_records
        >>> lisbon = [("user", "Tell me about Lisbon."), ("assistant", "Lisbon is Portugal's hilly capital.")]
        >>> porto = lisbon + [("user", "And Porto?"), ("assistant", "Porto is known for port wine.")]
        >>> referent_changed(turn_records(porto), turn_records(lisbon))
        "the latest request: ['lisbon'] -> ['porto']"
        >>> referent_changed(turn_records(lisbon), turn_records(lisbon)) is None
        True
    """
    (mine, my_facts), (theirs, their_facts) = _referent(probe), _referent(cached)
    union = mine | theirs
    alike = mine == theirs or len(mine & theirs) > len(union) / 2
    if alike and my_facts == their_facts:
        return None
    if not alike or not union:
        return f"the latest request: {sorted(theirs)[:4]} -> {sorted(mine)[:4]}"
    return f"the latest exchange names {sorted(my_facts ^ their_facts)[:4]}"


__all__ = ["REFERRING_WORDS", "REPLY_TOKENS", "accepts", "depends_on_latest", "is_reply", "latest_exchange",
           "points_back", "referent_changed"]
