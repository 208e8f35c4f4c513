"""Which fact changed: two versions of one turn, and whether what differs is a detail a request
can depend on (a number, a name, the opening request, the same question answered otherwise).

``changed_fact`` is the judgement ``weigh`` vetoes on; the helpers say what each change is.
"""

from __future__ import annotations

import re
from typing import Sequence

from smartcache.decide.history.align import HistoryDiff, TurnChange
from smartcache.decide.history.thread import _is_content, first_request
from smartcache.decide.tokens import _SHOWN, _common_share, _tokens, diff
from smartcache.fingerprint import Signature

# Entity kinds that are facts of a conversation: one side stating a value the other never
# states is a different conversation ("order 55120" / "order 55210").
FACT_KINDS = frozenset({"name", "num", "money", "date", "time", "code", "version"})
# The facts a reference can point to: a thing named ("how many suitcases fit in it?").
NAMED_KINDS = frozenset({"name", "code", "version"})
# Two turns sharing this much of their tokens are one turn with something edited, not a rewording.
NEAR_COPY = 0.5


def _facts(sig: Signature) -> set[str]:
    return {f for t in sig.turns for f in t.facts} | set(sig.entities)


def _new_facts(change: TurnChange, probe: Signature, cached: Signature) -> list[str]:
    """Facts a changed turn states that the other conversation never states (a restated fact
    is in both and counts for nothing)."""
    out: list[str] = []
    for turn, other in ((change.cached, probe), (change.probe, cached)):
        if turn is not None:
            elsewhere = _facts(other)
            out += [f for f in turn.facts if f.split(":", 1)[0] in FACT_KINDS and f not in elsewhere]
    return out


def _has_digits(edited: tuple[str, str]) -> bool:
    """A number replaced by another ("3rd" / "13th"): not one said where the other turn used
    words ("my toddler" / "my 2 year old"), nor the same number reworded ("1000 pieces" /
    "1000-piece")."""
    old, new = (set(re.findall(r"\d+(?:\.\d+)?", side)) for side in edited)
    return bool(old and new and old != new)


def _is_first_request(change: TurnChange, probe: Signature, cached: Signature) -> bool:
    return any(t is not None and t is first_request(sig.turns, set())
               for t, sig in ((change.probe, probe), (change.cached, cached)))


def _exchange_changed(change: TurnChange, diff: HistoryDiff) -> bool:
    """Whether the other turn of this turn's exchange (the user turn an assistant turn answers,
    or the answer to a user turn) differs too."""
    turn = change.probe or change.cached
    assert turn is not None
    partner = turn.pos - 1 if turn.role == "assistant" else turn.pos + 1
    return any((c.probe or c.cached).pos == partner for c in diff.changes)   # type: ignore[union-attr]


def _hidden(change: TurnChange) -> bool:
    """Two versions of a turn whose excerpts are the same words although their texts differ:
    what changed is in the middle of a long turn, which the excerpt leaves out."""
    assert change.probe is not None and change.cached is not None
    return _tokens(change.probe.excerpt) == _tokens(change.cached.excerpt) and len(change.probe.excerpt) >= 150


def _answer_changed(change: TurnChange, probe: Signature, cached: Signature) -> bool:
    """An assistant turn that differs although the user turn it answers is the same request
    on both sides: the same question got another answer (another recommendation, another
    option). An aside's reply differs because the aside does, and is not this."""
    if change.probe is None or change.cached is None or change.probe.role != "assistant":
        return False
    before = lambda sig, pos: next((t for t in sig.turns if t.pos == pos - 1), None)
    mine, theirs = before(probe, change.probe.pos), before(cached, change.cached.pos)
    # By digest, not by excerpt: an offer in the middle of a long turn is not in its excerpt.
    return (mine is not None and theirs is not None and mine.role == "user" and not mine.chatter
            and mine.digest == theirs.digest and change.probe.digest != change.cached.digest)


def _edited_words(change: TurnChange, *, near: float) -> tuple[str, str] | None:
    """The content the two turns of an edited pair do not share, when one is a copy of the
    other (``near`` of their tokens shared) with something changed; None for a rewording or
    for turns that differ only in fillers, synonyms and common words."""
    if change.probe is None or change.cached is None:
        return None
    ta, tb = _tokens(change.cached.excerpt), _tokens(change.probe.excerpt)
    if ta == tb or max(_common_share(ta, tb), _common_share(tb, ta)) < near:
        return None
    old: list[str] = []
    new: list[str] = []
    for op, i1, i2, j1, j2 in diff(ta, tb).opcodes:
        if op != "equal":
            old += ta[i1:i2]
            new += tb[j1:j2]
    if not any(_is_content(t) for t in old + new):
        return None
    return _shown(old), _shown(new)


def _shown(tokens: Sequence[str]) -> str:
    joined = ("" if all(len(t) == 1 and t >= "\u3400" for t in tokens) else " ").join(tokens)
    return joined.translate(_SHOWN) or "∅"


def changed_fact(change: TurnChange, probe: Signature, cached: Signature, *, referring: bool,
                 on_thread: bool) -> str | None:
    """What of one turn's two versions changes the request (a detail for people), or None.
    ``referring``: the last turn is a reply or a reference; ``on_thread``: the turn is on the
    conversation's thread. A turn only one side has is never a fact change: on public pairs
    placed after such a topic it refused wanted hits as often as not (scripts/veto_precision.py)."""
    if change.kind != "edited":
        return None
    request = any(t is not None and t.role == "user" for t in (change.probe, change.cached))
    near = _edited_words(change, near=NEAR_COPY)
    facts = _new_facts(change, probe, cached)
    named = [f for f in facts if f.split(":", 1)[0] in NAMED_KINDS]
    if request and near and (_has_digits(near) or _is_first_request(change, probe, cached)):
        # One sentence with a number or the opening request changed ("my flight on the 3rd"
        # / "the 13th", "close my savings account" / "my credit card"): a changed detail
        # wherever it sits and whatever the last turn names.
        return f"{near[0]} → {near[1]}"
    if referring and named or (referring or named or on_thread) and _answer_changed(change, probe, cached):
        # "how many suitcases fit in it?" after another car was recommended, ten turns
        # back: what a reference points to is a thing named, and this turn names another,
        # or answers the same question with another thing. The same question answered
        # with other names ("乐山大佛" / "都江堰"), or on the thread, is another
        # conversation, reference or not.
        replaced = _edited_words(change, near=0.0)
        return (f"{sorted(set(named))[:4]}" if named else f"{replaced[0]} → {replaced[1]}" if replaced
                else "the same question was answered otherwise")
    if on_thread:
        # On the thread a request edited in any word asks something else; an assistant
        # turn is reworded freely, so it counts when a fact or one slot of it changed.
        replaced = _edited_words(change, near=0.0) if request else near
        if facts:
            return f"{sorted(set(facts))[:4]}"
        if replaced:
            return f"{replaced[0]} → {replaced[1]}"
        if request and _hidden(change):
            return "changed in the middle of a long turn"
    return None


def vouched_aside(change: TurnChange, diff: HistoryDiff, probe: Signature, cached: Signature, *,
                  on_thread: bool) -> bool:
    """Whether a change no fact veto caught is one the request cannot depend on. Off the thread,
    a user sentence with a slot changed, or a fact changed while the other turn of its exchange
    stayed the same, is still not: the thread is read by shared words, and an answer can depend
    on a detail without them ("I'm vegetarian"). An aside exchange reworded whole (its question
    and its answer) is."""
    request = any(t is not None and t.role == "user" for t in (change.probe, change.cached))
    near = _edited_words(change, near=NEAR_COPY)
    facts = _new_facts(change, probe, cached)
    return not (on_thread or request and near or facts and not _exchange_changed(change, diff))


__all__ = ["FACT_KINDS", "NAMED_KINDS", "NEAR_COPY", "changed_fact", "vouched_aside"]
