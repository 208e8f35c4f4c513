"""Two histories aligned turn by turn: where they differ, and whether the request depends on it.

Two conversations that end with the same message share most of their turns, so their
context vectors sit near 1.0 whether an aside or the offer being accepted changed. Read
turn by turn instead (``align``): identical turns match by digest, the few that differ are
paired in order, and each change is judged by what it touches (``weigh``):

- ``reply_target_changed`` (a veto): "sure, go ahead" after "Shall I pause the
  membership?" is not the request it is after "Shall I end the membership?". A last turn
  that accepts and names nothing needs the same last assistant turn; so does a short one
  that points back, when the same question got another answer.
- ``history_fact_changed`` (a veto), on the two versions of one turn: a user sentence
  with its number replaced or the opening request edited ("my flight on the 3rd" / "the
  13th", "close my savings account" / "close my credit card"), wherever it sits; under a
  last turn that points back, a changed name or the same question answered otherwise; on
  the thread, any changed fact or request.
- ``aside_changed`` (a signal): a change off the thread (an anecdote, a joke, a closed
  side question) or a rewording. When every change is one and the request is tied to a
  turn both share, the histories count as the same (``HistoryFinding.equivalent``).
  Small talk changes nothing and is not reported. A turn only one side has is never a
  fact veto.

The thread is what the request can depend on: the turns that share a content word with
the last turn and, for a reply or a reference, with the first request (the conversation's
subject). An aside shares none.

    >>> from smartcache.context import turn_records
    >>> a = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I pause it for a month?")])
    >>> b = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I end it now?")])
    >>> diff = align(b, a)
    >>> diff.matched, diff.first_divergence, [c.where for c in diff.changes]
    (1, 2, ['turn 2 (assistant)'])
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

from smartcache.context import TurnRecord
from smartcache.decide.decision import Reason
from smartcache.decide.rules import ReasonCode as R
from smartcache.decide.tokens import _SHOWN, _common_share, _is_form_word, _tokens
from smartcache.fingerprint import Signature, has_reference
from smartcache.fingerprint.lexicon import words_of_kind
from smartcache.fingerprint.nouns import chinese_nouns

# Entity kinds that are facts of a conversation: one side stating a value the other never
# states is a different conversation ("order 55120" / "order 55210").
FACT_KINDS = frozenset({"name", "num", "money", "date", "time", "code", "version"})
# The facts a reference can point to: a thing named ("how many suitcases fit in it?").
NAMED_KINDS = frozenset({"name", "code", "version"})
# A last turn of at most this many words (after fillers; two Chinese characters a word)
# answers the turn before it ("sure, go ahead", "option b", "那就订吧"), and one of at most
# REFERRING_WORDS that refers back points into the history ("can I still change it?"); twice
# that with a pronoun ("how much of that should I feed him per day?"), which "that" or "one"
# alone are too common to be.
REPLY_TOKENS = 4
REFERRING_WORDS = 6
# Two turns sharing this much of their tokens are one turn with something edited, not a rewording.
NEAR_COPY = 0.5
_COMMON = words_of_kind("common")
_QUESTION = words_of_kind("question")
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


@dataclass(frozen=True)
class TurnChange:
    """One place where the histories differ: two aligned turns that differ (both set), or a
    turn only one side has."""

    probe: TurnRecord | None
    cached: TurnRecord | None

    @property
    def kind(self) -> str:
        return "edited" if self.probe and self.cached else "added" if self.probe else "dropped"

    @property
    def chatter(self) -> bool:
        return all(t.chatter for t in (self.probe, self.cached) if t is not None)

    @property
    def where(self) -> str:
        turn = self.probe or self.cached
        assert turn is not None
        return f"turn {turn.pos} ({turn.role})"


@dataclass(frozen=True)
class HistoryDiff:
    """The probe's history against a cached entry's, turn by turn. ``matched``: turns equal on
    both sides; ``first_divergence``: the probe's first turn that differs (1-based), None when
    the two histories are the same turns."""

    changes: tuple[TurnChange, ...]
    matched: int
    first_divergence: int | None

    @property
    def identical(self) -> bool:
        return not self.changes

    @property
    def pairs(self) -> tuple[TurnChange, ...]:
        return tuple(c for c in self.changes if c.kind == "edited")

    @property
    def only_probe(self) -> tuple[TurnRecord, ...]:
        return tuple(c.probe for c in self.changes if c.kind == "added" and c.probe is not None)

    @property
    def only_cached(self) -> tuple[TurnRecord, ...]:
        return tuple(c.cached for c in self.changes if c.kind == "dropped" and c.cached is not None)


def align(probe: Sequence[TurnRecord], cached: Sequence[TurnRecord]) -> HistoryDiff:
    """Align two histories. Linear in their length when they differ in a few turns: the common
    head and tail are matched by digest first, and only the middle is diffed."""
    n = min(len(probe), len(cached))
    head = 0
    while head < n and probe[head].digest == cached[head].digest:
        head += 1
    tail = 0
    while tail < n - head and probe[-1 - tail].digest == cached[-1 - tail].digest:
        tail += 1
    mid_p, mid_c = probe[head:len(probe) - tail], cached[head:len(cached) - tail]
    matched = head + tail
    changes: list[TurnChange] = []
    matcher = difflib.SequenceMatcher(None, [t.digest for t in mid_c], [t.digest for t in mid_p], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            matched += i2 - i1
        else:
            changes += _pair(mid_p[j1:j2], mid_c[i1:i2])
    first = None
    if changes:
        first = probe[head].pos if head < len(probe) else (probe[-1].pos + 1 if probe else 1)
    return HistoryDiff(tuple(changes), matched, first)


def _similarity(a: TurnRecord, b: TurnRecord) -> float:
    return _common_share(_tokens(a.excerpt), _tokens(b.excerpt)) if a.excerpt and b.excerpt else 0.0


def _pair(probe: Sequence[TurnRecord], cached: Sequence[TurnRecord]) -> list[TurnChange]:
    """Pair the differing turns of one stretch: by position when both sides have the same
    speakers in the same order (the usual edit); otherwise the in-order pairing of same-speaker
    turns with the most similarity (an inserted or dropped exchange), the rest unpaired."""
    if len(probe) == len(cached) and all(p.role == c.role for p, c in zip(probe, cached)):
        return [TurnChange(p, c) for p, c in zip(probe, cached)]
    m, n = len(probe), len(cached)
    best = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(m - 1, -1, -1):
        for j in range(n - 1, -1, -1):
            paired = (_similarity(probe[i], cached[j]) + 1e-3 + best[i + 1][j + 1]
                      if probe[i].role == cached[j].role else -1.0)
            best[i][j] = max(paired, best[i + 1][j], best[i][j + 1])
    out: list[TurnChange] = []
    i = j = 0
    while i < m or j < n:
        if i < m and j < n and probe[i].role == cached[j].role and \
                best[i][j] == _similarity(probe[i], cached[j]) + 1e-3 + best[i + 1][j + 1]:
            out.append(TurnChange(probe[i], cached[j]))
            i, j = i + 1, j + 1
        elif i < m and (j == n or best[i][j] == best[i + 1][j]):
            out.append(TurnChange(probe[i], None))
            i += 1
        else:
            out.append(TurnChange(None, cached[j]))
            j += 1
    return out


# --- what a change touches -------------------------------------------------------------------

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


def _thread(probe: Signature, cached: Signature, seeds: Sequence[TurnRecord]) -> set[tuple[int, int]]:
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


def _first_request(turns: Sequence[TurnRecord], skipped: set[int]) -> TurnRecord | None:
    return next((t for t in turns if t.role == "user" and not t.chatter and id(t) not in skipped), None)


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
    return any(t is not None and t is _first_request(sig.turns, set())
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
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes():
        if op != "equal":
            old += ta[i1:i2]
            new += tb[j1:j2]
    if not any(_is_content(t) for t in old + new):
        return None
    return _shown(old), _shown(new)


def _shown(tokens: Sequence[str]) -> str:
    joined = ("" if all(len(t) == 1 and t >= "\u3400" for t in tokens) else " ").join(tokens)
    return joined.translate(_SHOWN) or "∅"


@dataclass(frozen=True)
class HistoryFinding:
    """What the alignment says about serving an entry: a hard veto, or signals for the verifier.
    ``equivalent``: every difference is small talk, or off the thread while the request is
    tied to a turn both histories share, so the request reads the two histories alike and
    the current turns alone decide."""

    diff: HistoryDiff | None
    veto: Reason | None = None
    signals: tuple[Reason, ...] = ()
    equivalent: bool = False

    @property
    def material(self) -> bool:
        """Whether any change is more than small talk."""
        return self.diff is not None and any(not c.chatter for c in self.diff.changes)


def weigh(probe: Signature, cached: Signature, entry_id: str | None = None, *,
          probe_turn: str | None = None) -> HistoryFinding:
    """Align the two histories and judge what differs (the module docstring says how).
    ``probe_turn``: the request's last turn as written, before reference resolution (which
    rewrites "that one" into a name, and with it the sign that the turn points back).
    Only two histories are aligned: a request without one against an entry with one is the
    context rules' to judge."""
    if not (probe.turns and cached.turns):
        # One side has no history (or was written before turn records existed): the context
        # rules judge that, as before.
        return HistoryFinding(None)
    diff = align(probe.turns, cached.turns)
    changes = [c for c in diff.changes if not c.chatter]
    if not changes:
        return HistoryFinding(diff, equivalent=True)
    texts = [probe.text, cached.text] + ([probe_turn] if probe_turn else [])
    seeds: list[TurnRecord] = []
    mine, theirs = _last_offer(probe.turns), _last_offer(cached.turns)
    offer_changed = (mine is None) != (theirs is None) or bool(mine and theirs and mine.digest != theirs.digest)
    # An acceptance answers the last offer whatever it was; a short turn that points back
    # ("ok, let's do that then") answers it when the same question got another offer.
    if offer_changed and (any(accepts(t) for t in texts) or any(points_back(t) for t in texts)
                          and _answer_changed(TurnChange(mine, theirs), probe, cached)):
        what = _edited_words(TurnChange(mine, theirs), near=0.0)
        turn = mine or theirs
        assert turn is not None
        detail = (f"turn {turn.pos} (assistant), which the reply answers, changed"
                  + (f": {what[0]} → {what[1]}" if what else "")
                  + f"; the histories part at turn {diff.first_divergence}")
        return HistoryFinding(diff, Reason(R.REPLY_TARGET_CHANGED, detail, entry_id))
    referring = any(is_reply(t) for t in texts)
    if referring:
        # A reply or a reference ("can I still change it?") is about the conversation's
        # subject, which its first request names, whatever words the reply itself uses; an
        # earlier topic only one side has is not that subject.
        one_sided = {id(c.probe or c.cached) for c in diff.changes if c.kind != "edited"}
        seeds += [t for t in (_first_request(probe.turns, one_sided), _first_request(cached.turns, one_sided))
                  if t is not None]
    on = _thread(probe, cached, seeds)
    signals: list[Reason] = []
    vouched = True      # every change is one the request cannot depend on
    for change in changes:
        on_thread = any((side, t.pos) in on for side, t in ((0, change.probe), (1, change.cached)) if t is not None)
        request = any(t is not None and t.role == "user" for t in (change.probe, change.cached))
        near = _edited_words(change, near=NEAR_COPY)
        facts = _new_facts(change, probe, cached)
        # A turn only one side has (an earlier topic, an extra exchange) is evidence, never a
        # veto: on public pairs placed after such a topic it refused wanted hits as often as
        # not (scripts/veto_precision.py). A veto needs the two versions of one turn.
        paired = change.kind == "edited"
        named = [f for f in facts if f.split(":", 1)[0] in NAMED_KINDS]
        detail = None
        if paired and request and near and (_has_digits(near) or _is_first_request(change, probe, cached)):
            # One sentence with a number or the opening request changed ("my flight on the 3rd"
            # / "the 13th", "close my savings account" / "my credit card"): a changed detail
            # wherever it sits and whatever the last turn names.
            detail = f"{near[0]} → {near[1]}"
        elif paired and (referring and named
                         or (referring or named or on_thread) and _answer_changed(change, probe, cached)):
            # "how many suitcases fit in it?" after another car was recommended, ten turns
            # back: what a reference points to is a thing named, and this turn names another,
            # or answers the same question with another thing. The same question answered
            # with other names ("乐山大佛" / "都江堰"), or on the thread, is another
            # conversation, reference or not.
            replaced = _edited_words(change, near=0.0)
            detail = (f"{sorted(set(named))[:4]}" if named else f"{replaced[0]} → {replaced[1]}" if replaced
                      else "the same question was answered otherwise")
        elif paired and on_thread:
            # On the thread a request edited in any word asks something else; an assistant
            # turn is reworded freely, so it counts when a fact or one slot of it changed.
            replaced = _edited_words(change, near=0.0) if request else near
            if facts:
                detail = f"{sorted(set(facts))[:4]}"
            elif replaced:
                detail = f"{replaced[0]} → {replaced[1]}"
            elif request and _hidden(change):
                detail = "changed in the middle of a long turn"
        if detail is not None:
            return HistoryFinding(diff, Reason(R.HISTORY_FACT_CHANGED, f"{change.where}: {detail}", entry_id))
        # Off the thread, a user sentence with a slot changed, or a fact changed while the other
        # turn of its exchange stayed the same, is still not vouched for: the thread is read by
        # shared words, and an answer can depend on a detail without them ("I'm vegetarian").
        # An aside exchange reworded whole (its question and its answer) is.
        vouched = vouched and not (on_thread or request and near or facts and not _exchange_changed(change, diff))
        signals.append(Reason(R.ASIDE_CHANGED, f"{change.where} {change.kind}"
                              + ("" if on_thread else ", off the thread"), entry_id))
    # Off the thread is not enough: "my cat is 14" / "my puppy is 3 months" before "what food
    # should I give her?" ties to nothing either. The request must be anchored in a turn both
    # histories share, so that what it is about is known to be the same.
    # A topic only one side has, asked and answered before (public pairs placed after an
    # earlier finished topic), needs no anchor: nothing of the shared history was edited.
    changed = {t.pos for c in changes for t in (c.probe,) if t is not None}
    anchored = any((0, t.pos) in on for t in probe.turns if not t.chatter and t.pos not in changed)
    one_sided_only = all(c.kind != "edited" for c in changes)
    return HistoryFinding(diff, None, tuple(signals[:3]), equivalent=vouched and (anchored or one_sided_only))


__all__ = ["HistoryDiff", "HistoryFinding", "TurnChange", "align", "accepts", "content_words", "is_reply", "points_back", "weigh"]
