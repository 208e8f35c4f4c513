"""Implicit feedback: a user who asks the same again, or corrects the answer, rejected it.

What a session was just answered lives in the store as markers that expire with the
regenerate window, so a repeat or a correction landing on another replica still counts:

    answered:<request key>   the last answer to this exact request (served hit or engine answer)
    last-hit:<who>           the last hit served to this tenant's session

A repeat within the window is a regenerate: the answer gets ``regenerate`` feedback, and
if it was a served hit, it polluted the cache. A correction after a hit gives that hit
``negative`` feedback and counts as pollution too. Every store call here runs on a worker
thread (the caller's), and a store fault loses the feedback, never the answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from smartcache.cache import SmartCache
from smartcache.errors import EntryNotFound, SmartCacheError
from smartcache.gateway.controls import RequestControls
from smartcache.gateway.telemetry import Telemetry

log = logging.getLogger("smartcache.gateway")


@dataclass(frozen=True)
class Answered:
    at: float
    entry_id: str | None
    was_hit: bool


def request_key(tenant: str, session: str | None, model: str, messages: list[dict[str, Any]],
                shape: object = None) -> str:
    """The identity of a request, for repeat detection: who asked what of which model, in which
    shape (``shape``: what else the answer depends on; the same messages asked for JSON, or with
    other stop strings or limit, are another request, not a regenerate)."""
    # ASCII escapes: a lone surrogate in a message cannot be encoded as UTF-8 (the lookup refuses it).
    payload = json.dumps([tenant, session, model, messages] + ([shape] if shape is not None else []),
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def _last_hit_marker(controls: RequestControls) -> str:
    who = hashlib.sha256(f"{controls.tenant}\x00{controls.session}".encode()).hexdigest()
    return f"last-hit:{who}"


class Feedback:
    """Markers of what was answered, and the feedback a repeat or a correction implies."""

    def __init__(self, cache: SmartCache, telemetry: Telemetry, *, window_s: float) -> None:
        self.cache, self.telemetry, self.window_s = cache, telemetry, window_s

    # -- markers ------------------------------------------------------------------------

    def answered(self, key: str, record: Answered) -> None:
        """Remember the answer to the request of ``key`` (a repeat of it is a regenerate)."""
        self._remember(f"answered:{key}", record)

    def hit_served(self, key: str, controls: RequestControls, record: Answered) -> None:
        """Remember a served hit: for a repeat of its request, and for a correction in its session."""
        names = [f"answered:{key}"] + ([_last_hit_marker(controls)] if controls.session else [])
        self._remember(names, record)

    def is_repeat(self, key: str) -> bool:
        return self._recall(f"answered:{key}") is not None

    def _remember(self, names: str | list[str], record: Answered) -> None:
        value = json.dumps([record.at, record.entry_id, record.was_hit])
        try:
            self.cache.set_markers(dict.fromkeys([names] if isinstance(names, str) else names, value), self.window_s)
        except SmartCacheError as exc:      # feedback is lost, the answer is not
            log.warning("smartcache: cannot record an answer for regenerate detection: %s", exc)

    def _recall(self, name: str, *, take: bool = False) -> Answered | None:
        try:
            raw = self.cache.take_marker(name) if take else self.cache.get_marker(name)
        except SmartCacheError as exc:
            log.warning("smartcache: cannot read regenerate markers: %s", exc)
            return None
        if raw is None:
            return None
        at, entry_id, was_hit = json.loads(raw)
        return Answered(float(at), entry_id, bool(was_hit))

    # -- what a repeat or a correction means ----------------------------------------------

    def on_regenerate(self, key: str) -> None:
        seen = self._recall(f"answered:{key}", take=True)
        if seen is None or seen.entry_id is None:
            return
        if seen.was_hit:
            self.telemetry.polluted()
        self._apply(seen.entry_id, "regenerate")

    def on_correction(self, controls: RequestControls) -> None:
        if controls.session is None:
            return
        hit = self._recall(_last_hit_marker(controls), take=True)
        if hit is not None and hit.entry_id:
            self.telemetry.polluted()
            self._apply(hit.entry_id, "negative")

    def _apply(self, entry_id: str, kind: str) -> None:
        try:
            self.cache.feedback(entry_id, kind)
        except EntryNotFound:
            pass      # evicted or dropped meanwhile: nothing left to mark
        except SmartCacheError as exc:      # the store is down: the feedback is lost, not the answer
            log.warning("smartcache: cannot apply %s feedback to %s: %s", kind, entry_id, exc)
