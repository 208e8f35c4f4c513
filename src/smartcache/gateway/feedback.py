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
import threading
import time
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


def _encode(record: Answered) -> str:
    return json.dumps([record.at, record.entry_id, record.was_hit])


def _last_hit_marker(controls: RequestControls) -> str:
    who = hashlib.sha256(f"{controls.tenant}\x00{controls.session}".encode()).hexdigest()
    return f"last-hit:{who}"


class _Behind:
    """A served hit's markers, written behind the request, all those waiting in one call.

    On a shared store a hit's markers were a commit of their own under the markers file's
    write lock, which two SQLite workers took in turns: without them, exact hits on two
    workers went from about 2,040 to 2,660-3,000 a second, p99 from 25-26 to 18-19 ms
    (docs/results.md, issue 29). Until written they are read here: this process never misses
    its own; another worker may, for the milliseconds the write takes, which no user's
    regenerate is quick enough to meet."""

    def __init__(self, cache: SmartCache, ttl_s: float) -> None:
        self.cache, self.ttl_s = cache, ttl_s
        self._lock = threading.Condition()
        self._waiting: dict[str, tuple[str, float]] = {}    # name -> (value, expires on time.monotonic)
        self._writing: dict[str, tuple[str, float]] = {}    # the batch being written
        self._taken: set[str] = set()                       # taken while being written: take them after
        self._thread: threading.Thread | None = None

    def put(self, values: dict[str, str]) -> None:
        until = time.monotonic() + self.ttl_s
        with self._lock:
            self._waiting.update((name, (value, until)) for name, value in values.items())
            self._taken.difference_update(values)
            if self._thread is None:
                self._thread = threading.Thread(target=self._write, name="smartcache-hit-markers", daemon=True)
                self._thread.start()
            self._lock.notify()

    def get(self, name: str, *, take: bool = False) -> str | None:
        """The value waiting or being written (None: not here, ask the store)."""
        with self._lock:
            held = self._waiting.pop(name, None) if take else self._waiting.get(name)
            if held is None and name in self._writing:
                held = self._writing[name]
                if take:
                    self._taken.add(name)
        if held is None or held[1] <= time.monotonic():
            return None
        return held[0]

    def close(self) -> None:
        """Write what waits, and let the thread go (a later put starts another)."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._lock.notify()
        if thread is not None:
            thread.join(timeout=10)

    def _write(self) -> None:
        me = threading.current_thread()
        while True:
            with self._lock:
                while not self._waiting and self._thread is me:
                    self._lock.wait()
                if not self._waiting or self._thread not in (me, None):
                    return          # closed with nothing left, or a writer started after a close took over
                self._writing, self._waiting = self._waiting, {}
                now = time.monotonic()
                batch = {name: value for name, (value, until) in self._writing.items() if until > now}
            try:
                if batch:
                    self.cache.set_markers(batch, self.ttl_s)
            except SmartCacheError as exc:      # feedback is lost, the answer is not
                log.warning("smartcache: cannot record served hits for regenerate detection: %s", exc)
            with self._lock:
                self._writing, taken, self._taken = {}, self._taken, set()
            for name in taken:
                try:
                    self.cache.take_marker(name)
                except SmartCacheError as exc:
                    log.warning("smartcache: cannot take a regenerate marker: %s", exc)


class Feedback:
    """Markers of what was answered, and the feedback a repeat or a correction implies."""

    def __init__(self, cache: SmartCache, telemetry: Telemetry, *, window_s: float) -> None:
        self.cache, self.telemetry, self.window_s = cache, telemetry, window_s
        # In this process's memory a marker is a dict write: nothing to put behind the request.
        self._behind = None if cache.backend.in_memory else _Behind(cache, window_s)

    def close(self) -> None:
        if self._behind is not None:
            self._behind.close()

    # -- markers ------------------------------------------------------------------------

    def answered(self, key: str, record: Answered) -> None:
        """Remember the answer to the request of ``key`` (a repeat of it is a regenerate)."""
        self._remember(f"answered:{key}", record)

    def hit_served(self, key: str, controls: RequestControls, record: Answered) -> None:
        """Remember a served hit: for a repeat of its request, and for a correction in its session."""
        names = [f"answered:{key}"] + ([_last_hit_marker(controls)] if controls.session else [])
        if self._behind is not None:
            self._behind.put(dict.fromkeys(names, _encode(record)))
        else:
            self._remember(names, record)

    def is_repeat(self, key: str) -> bool:
        return self._recall(f"answered:{key}") is not None

    def _remember(self, names: str | list[str], record: Answered) -> None:
        value = _encode(record)
        try:
            self.cache.set_markers(dict.fromkeys([names] if isinstance(names, str) else names, value), self.window_s)
        except SmartCacheError as exc:      # feedback is lost, the answer is not
            log.warning("smartcache: cannot record an answer for regenerate detection: %s", exc)

    def _recall(self, name: str, *, take: bool = False) -> Answered | None:
        # A served hit's marker not yet written is read here first (and a taken one is taken
        # from the store too, where an older one may be).
        waiting = None if self._behind is None else self._behind.get(name, take=take)
        try:
            if take:
                raw = self.cache.take_marker(name)
            else:
                raw = None if waiting is not None else self.cache.get_marker(name)
        except SmartCacheError as exc:
            log.warning("smartcache: cannot read regenerate markers: %s", exc)
            raw = None
        raw = waiting if waiting is not None else raw
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
