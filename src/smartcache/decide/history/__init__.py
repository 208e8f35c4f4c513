"""Two histories aligned turn by turn: where they differ, and whether the request depends on it.

Two conversations that end with the same message share most of their turns, so their
context vectors sit near 1.0 whether an aside or the offer being accepted changed. Read
turn by turn instead (``align``): identical turns match by digest, the few that differ are
paired in order, and each change is judged by three readers (``weigh``):

- who points back (``reference``): ``reply_target_changed`` (a veto): "sure, go ahead"
  after "Shall I pause the membership?" is not the request it is after "Shall I end the
  membership?". A last turn that accepts and names nothing needs the same last assistant
  turn; so does a short one that points back, when the same question got another answer.
  ``referent_changed`` (a veto): a last turn with no subject of its own ("is it
  expensive?", "你看过吗", "why?", "多少钱") or one that moves the question just asked to a
  new subject ("and Porto?", "那本书呢") reads the latest exchange, so that exchange must be
  about the same thing on both sides, whatever words it shares with the rest.
- which fact changed (``facts``): ``history_fact_changed`` (a veto), on the two versions of
  one turn: a user sentence with its number replaced or the opening request edited ("my
  flight on the 3rd" / "the 13th", "close my savings account" / "close my credit card"),
  wherever it sits; under a last turn that points back, a changed name or the same
  question answered otherwise; on the thread, any changed fact or request.
- what counts as an aside (``thread``): ``aside_changed`` (a signal): a change off the
  thread (an anecdote, a joke, a closed side question) or a rewording, before the latest
  exchange. When every change is one and the request is tied to a turn both share, the
  histories count as the same (``HistoryFinding.equivalent``). Small talk changes nothing
  and is not reported. A turn only one side has is never a fact veto. An exchange added or
  changed just before the last turn is never an aside.

    >>> from smartcache.context import turn_records
    >>> a = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I pause it for a month?")])
    >>> b = turn_records([("user", "Pause my gym membership"), ("assistant", "Shall I end it now?")])
    >>> diff = align(b, a)
    >>> diff.matched, diff.first_divergence, [c.where for c in diff.changes]
    (1, 2, ['turn 2 (assistant)'])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from smartcache.context import TurnRecord
from smartcache.decide.decision import Reason
from smartcache.decide.history.align import HistoryDiff, TurnChange, align
from smartcache.decide.history.facts import FACT_KINDS, NAMED_KINDS, _answer_changed, _edited_words, changed_fact, \
    vouched_aside
from smartcache.decide.history.reference import (
    _last_offer, accepts, depends_on_latest, is_reply, latest_exchange, points_back, referent_changed,
)
from smartcache.decide.history.thread import content_words, first_request, thread
from smartcache.decide.rules import ReasonCode as R
from smartcache.fingerprint import Signature


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


def _reply_target(diff: HistoryDiff, probe: Signature, cached: Signature, texts: Sequence[str],
                  entry_id: str | None) -> Reason | None:
    """An acceptance answers the last offer whatever it was; a short turn that points back
    ("ok, let's do that then") answers it when the same question got another offer."""
    mine, theirs = _last_offer(probe.turns), _last_offer(cached.turns)
    offer_changed = (mine is None) != (theirs is None) or bool(mine and theirs and mine.digest != theirs.digest)
    if not offer_changed or not (any(accepts(t) for t in texts) or any(points_back(t) for t in texts)
                                 and _answer_changed(TurnChange(mine, theirs), probe, cached)):
        return None
    what = _edited_words(TurnChange(mine, theirs), near=0.0)
    turn = mine or theirs
    assert turn is not None
    return Reason(R.REPLY_TARGET_CHANGED, f"turn {turn.pos} (assistant), which the reply answers, changed"
                  + (f": {what[0]} → {what[1]}" if what else "") + f"; the histories part at turn "
                  f"{diff.first_divergence}", entry_id)


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
    target = _reply_target(diff, probe, cached, texts, entry_id)
    if target is not None:
        return HistoryFinding(diff, target)
    referring = any(is_reply(t) for t in texts)
    seeds: list[TurnRecord] = []
    if referring:
        # A reply or a reference ("can I still change it?") is about the conversation's
        # subject, which its first request names, whatever words the reply itself uses; an
        # earlier topic only one side has is not that subject.
        one_sided = {id(c.probe or c.cached) for c in diff.changes if c.kind != "edited"}
        seeds += [t for t in (first_request(probe.turns, one_sided), first_request(cached.turns, one_sided))
                  if t is not None]
    on = thread(probe, cached, seeds)
    latest = {(0, t.pos) for t in latest_exchange(probe.turns)} | {(1, t.pos) for t in latest_exchange(cached.turns)}
    signals: list[Reason] = []
    vouched = True      # every change is one the request cannot depend on
    for change in changes:
        sides = [(side, t.pos) for side, t in ((0, change.probe), (1, change.cached)) if t is not None]
        on_thread = any(s in on for s in sides)
        detail = changed_fact(change, probe, cached, referring=referring, on_thread=on_thread)
        if detail is not None:
            return HistoryFinding(diff, Reason(R.HISTORY_FACT_CHANGED, f"{change.where}: {detail}", entry_id))
        # The exchange just before the last turn is what the turn is most likely to build on.
        in_latest = any(s in latest for s in sides)
        vouched = vouched and not in_latest and vouched_aside(change, diff, probe, cached, on_thread=on_thread)
        signals.append(Reason(R.ASIDE_CHANGED, f"{change.where} {change.kind}"
                              + (", in the latest exchange" if in_latest else "" if on_thread else ", off the thread"),
                              entry_id))
    # A changed fact above says what changed; failing one, a turn that names nothing of its own
    # needs the same latest exchange, whatever words the rest shares with it.
    if any(depends_on_latest(t) for t in texts):
        moved = referent_changed(probe.turns, cached.turns)
        if moved is not None:
            return HistoryFinding(diff, Reason(R.REFERENT_CHANGED, f"the last turn names nothing of its own and "
                                               f"reads the latest exchange: {moved}", entry_id))
    # Off the thread is not enough: "my cat is 14" / "my puppy is 3 months" before "what food
    # should I give her?" ties to nothing either. The request must be anchored in a turn both
    # histories share, so that what it is about is known to be the same.
    # A topic only one side has, asked and answered before (public pairs placed after an
    # earlier finished topic), needs no anchor: nothing of the shared history was edited.
    changed = {t.pos for c in changes for t in (c.probe,) if t is not None}
    anchored = any((0, t.pos) in on for t in probe.turns if not t.chatter and t.pos not in changed)
    one_sided_only = all(c.kind != "edited" for c in changes)
    return HistoryFinding(diff, None, tuple(signals[:3]), equivalent=vouched and (anchored or one_sided_only))


__all__ = ["FACT_KINDS", "NAMED_KINDS", "HistoryDiff", "HistoryFinding", "TurnChange", "accepts", "align",
           "content_words", "depends_on_latest", "is_reply", "latest_exchange", "points_back", "referent_changed",
           "weigh"]
