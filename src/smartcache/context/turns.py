"""Every prior turn as a short record, so that two histories can be aligned turn by turn.

The view keeps only the last few turns, as key points, and drops small talk: right for a
context vector, blind to a changed detail ten turns back or to the offer a "sure, go ahead"
accepts. A record per prior turn keeps what an alignment needs (``decide.history``):

- ``digest``: equal normalised texts, equal digests, so identical turns match by hash;
- ``chatter``: small talk, or the assistant's short answer to it (it changes no answer);
- ``excerpt``: what is compared when the digests differ: a user turn's first and last
  sentence, an assistant turn's first sentence, its list heads and its last sentence (where
  an offer or a question to the user sits).

    >>> recs = turn_records([("user", "My flight on the 3rd, can I move it?"),
    ...     ("assistant", "Let me check. Shall I look for later flights?"),
    ...     ("user", "thanks!"), ("assistant", "You're welcome!")])
    >>> [(r.pos, r.role, r.chatter) for r in recs]
    [(1, 'user', False), (2, 'assistant', False), (3, 'user', True), (4, 'assistant', True)]
    >>> recs[1].excerpt
    'let me check. … shall i look for later flights?'
    >>> [r.chatter for r in turn_records([("user", "ok"), ("assistant", "Then I'd book the 9:40 flight, ok?")])]
    [True, False]
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Sequence

# Records kept of a very long history: its opening (where the first request and its details
# sit) and its most recent turns; the history hash still covers every turn.
HEAD_TURNS, TAIL_TURNS = 16, 48
_EXCERPT_CHARS = {"user": 200, "assistant": 280}
_SENTENCE = re.compile(r"(?<=[.!?;。！？；])(?![\d.])|\n")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)、]|第\d+[天步点条])\s*")

# 嗯++, 哦++, 哈++ are possessive: inside the repeated group below, a plain 嗯+ lets "嗯嗯嗯…x" be
# split 2^n ways before the match fails (24 characters took 30 s, each one more doubles it).
_SMALL_TALK_WORD = (r"(?:你好|您好|嗨|哈喽|早上好|晚上好|谢谢你?|谢谢您|多谢|感谢|非常感谢|好的|好|行|可以|嗯++|哦++|"
                    r"收到|明白了?|知道了|了解|懂了|不客气|没事|没关系|哈++|再见|拜拜|辛苦了|"
                    r"hi|hello|hey|thanks|thank you|thx|ok|okay|sure|got it|great|cool|nice|bye|good|i see|"
                    r"you're welcome|no problem|alright|a lot|so much|very much)")
# One or more acknowledgements and nothing else ("Ok, got it.", "嗯嗯，明白了").
_SMALL_TALK = re.compile(rf"^(?:{_SMALL_TALK_WORD}[\s,.!?~:)]*)+$", re.IGNORECASE)


def is_small_talk(text: str) -> bool:
    """True for greetings, thanks and acknowledgements that carry no request."""
    return bool(_SMALL_TALK.match(text.strip()))


@dataclass(frozen=True)
class TurnRecord:
    """One prior turn, as an alignment reads it. ``pos`` is its place in the conversation
    (1 = the first turn after the system prompt); ``facts`` are its entity keys, filled in
    by the fingerprint stage (``extract_entities``), oldest first."""

    pos: int
    role: str
    digest: str
    chatter: bool
    excerpt: str
    facts: tuple[str, ...] = ()
    cased: str = field(default="", compare=False, repr=False)   # the whole turn, case kept; not stored

    def to_json(self) -> list[object]:
        return [self.pos, self.role[0], self.digest, int(self.chatter), self.excerpt, list(self.facts)]

    @classmethod
    def from_json(cls, data: Sequence[object]) -> TurnRecord:
        pos, role, digest, chatter, excerpt, facts = data
        return cls(int(pos), "user" if role == "u" else "assistant", str(digest), bool(chatter), str(excerpt),
                   tuple(map(str, facts)))


def turn_digest(normalised: str) -> str:
    """48 bits of sha256: two different turns of one pair of conversations collide with odds
    of about 1 in 10^14, and a record stays short."""
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:12]


def _excerpt(role: str, text: str) -> str:
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    if not sentences:
        return ""
    limit = _EXCERPT_CHARS[role]
    if role == "user":
        parts = sentences[:1] + sentences[-1:] if len(text) > limit and len(sentences) > 1 else [text]
    else:
        heads = [_BULLET.sub("", line)[:40] for line in text.split("\n")[1:] if _BULLET.match(line)]
        parts = [sentences[0], *heads] + ([sentences[-1]] if len(sentences) > 1 and sentences[-1] not in heads else [])
    out = " … ".join(p.replace("\n", " ") for p in parts)
    # The end of an assistant turn is where its offer sits: clip the middle, never the end.
    return out if len(out) <= limit else f"{out[:limit // 2].rstrip()} … {out[-limit // 2:].lstrip()}"


_DIGIT = re.compile(r"\d")


def turn_records(turns: Sequence[tuple[str, str]]) -> tuple[TurnRecord, ...]:
    """One record per prior turn, from ``(role, normalised text with case kept)`` pairs, oldest
    first; of a history longer than ``HEAD_TURNS + TAIL_TURNS``, its head and its tail."""
    n = len(turns)
    keep = (lambda i: True) if n <= HEAD_TURNS + TAIL_TURNS else (lambda i: i < HEAD_TURNS or i >= n - TAIL_TURNS)
    out: list[TurnRecord] = []
    after_chatter = False
    for i, (role, cased) in enumerate(turns):
        norm = cased.lower()
        if role == "user":
            chatter = after_chatter = is_small_talk(norm)
        else:
            # The assistant's short answer to small talk is small talk too ("You're welcome!"),
            # unless it names a number: "好的" may be followed by the offer itself ("我建议直接帮您
            # 办退卡，大概能退回2,390元。您看可以吗？"), which a "行，就这么办吧" then accepts.
            chatter = (after_chatter and len(norm) <= 60 and not _DIGIT.search(norm)) or is_small_talk(norm)
            after_chatter = False
        if keep(i):
            out.append(TurnRecord(i + 1, role, turn_digest(norm), chatter, "" if chatter else _excerpt(role, norm),
                                  cased=cased))
    return tuple(out)


__all__ = ["HEAD_TURNS", "TAIL_TURNS", "TurnRecord", "is_small_talk", "turn_digest", "turn_records"]
