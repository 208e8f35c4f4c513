"""Which process runs the lifecycle's ticks when several share one store.

The workers of ``serve --workers N`` share a store; promotion, purge and eviction need
to run once, not once per worker. A lease decides: a marker in the store that one
process holds for ``ttl_s`` and renews while it ticks; a process that dies stops
renewing, and another takes it over once it expires.

    lease = StoreLease(store, "lease:lifecycle", ttl_s=5.0)
    lease.acquire()     # True: this process runs the tick (and renews its hold)
    lease.mine()        # the answer of the last acquire, without a store call

The lease saves work; it is not what keeps the lifecycle right. Each promotion is a
compare-and-set and a purge deletes what is still there, so two holders at once (one
that stalled past its TTL) promote each entry once all the same.

``ALWAYS`` stands for a process that owns its store alone (a single-process gateway,
the library): it always holds the lease and never touches the store for it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from typing import Callable, Protocol

from smartcache.errors import StoreError

log = logging.getLogger("smartcache.lifecycle")

LIFECYCLE_LEASE = "lease:lifecycle"


class Lease(Protocol):
    always: bool        # True: held by construction (no other process shares the store)

    def acquire(self) -> bool:
        """Take or renew the lease; True while this process holds it."""

    def mine(self) -> bool:
        """Whether the last ``acquire`` held it (no store call)."""


class AlwaysHeld:
    """The lease of a process that has its store to itself."""

    always = True

    def acquire(self) -> bool:
        return True

    def mine(self) -> bool:
        return True


ALWAYS = AlwaysHeld()


class StoreLease:
    """A lease kept as a marker in a shared store (``Store.claim_marker``: a compare-and-set
    that takes the marker when it is absent or expired, and renews it for its holder).

    ``acquire`` asks the store at most every ``ttl_s / 4`` seconds (of ``clock``), so a tick
    per second costs a store write every few seconds; the holder renews well before its
    hold runs out, and a dead holder's lease is taken over within ``ttl_s * 1.25``."""

    always = False

    def __init__(self, store, name: str = LIFECYCLE_LEASE, *, ttl_s: float = 5.0, holder: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl_s <= 0:
            raise ValueError("a lease needs a positive TTL")
        self.store, self.name, self.ttl_s = store, name, ttl_s
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.clock = clock
        self._held = False
        self._asked_at = -float("inf")

    def acquire(self) -> bool:
        now = self.clock()
        if now - self._asked_at < self.ttl_s / 4:
            return self._held
        self._asked_at = now
        try:
            held = bool(self.store.claim_marker(self.name, self.holder, self.ttl_s))
        except StoreError as exc:        # cannot tell who holds it: leave the work to a process that can
            log.warning("smartcache: cannot claim the lifecycle lease: %s", exc)
            held = False
        if held != self._held:
            log.info("smartcache: %s the lifecycle lease (%s)", "took" if held else "lost", self.holder)
        self._held = held
        return held

    def mine(self) -> bool:
        return self._held
