"""A request read once: what ``SmartCache.lookup`` returns and ``SmartCache.store`` takes.

``lookup`` parses, fingerprints and gates a request once. The ``Lookup`` it returns
is its ``Decision`` together with that reading (a ``CacheRequest``), and handing it to
``store`` writes the answer without reading the request again::

    found = cache.lookup(messages, session="s1")
    if found.zone is not Zone.HIT:
        cache.store(found, engine_answer(messages))     # same messages, session, tenant, versions

A ``CacheRequest`` alone (``SmartCache.prepare``) serves a caller that stores an answer
it never looked up (a regenerate, a ``no-cache`` request).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Callable

from smartcache.context import Conversation, RequestKey
from smartcache.decide import Decision, Gate
from smartcache.fingerprint import Fingerprint
from smartcache.store import VersionKey


@dataclass(frozen=True)
class CacheRequest:
    """One request as the cache read it: who asks, the parsed conversation, its exact key,
    its version key; and, read on first use, its fingerprint and the gate's verdict (None:
    the candidates decide). A request the exact path settles never runs the encoder.
    ``made_by`` names the cache that read it (a number unique in the process): only that
    one stores it."""

    tenant: str
    session: str | None
    conversation: Conversation
    key: RequestKey
    version: VersionKey
    read: Callable[[], tuple[Fingerprint, Gate | None]] = field(kw_only=True, repr=False, compare=False)
    made_by: int = field(default=0, kw_only=True, repr=False)

    @cached_property
    def _reading(self) -> tuple[Fingerprint, Gate | None]:
        return self.read()

    @property
    def fingerprint(self) -> Fingerprint:
        return self._reading[0]

    @property
    def gate(self) -> Gate | None:
        return self._reading[1]


@dataclass(frozen=True)
class Lookup(Decision):
    """A ``Decision`` with the request it was made for; it reads as its decision."""

    request: CacheRequest = field(kw_only=True, repr=False, compare=False)

    @classmethod
    def of(cls, decision: Decision, request: CacheRequest) -> Lookup:
        return cls(**{f.name: getattr(decision, f.name) for f in fields(Decision)}, request=request)


__all__ = ["CacheRequest", "Lookup"]
