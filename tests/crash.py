"""One kill -9 harness for the crash tests: a writer process on the store, and `smartcache serve`.

A *burst* is a fixed number of writes whose acknowledgements the test counts as they come (a
line the writer prints once a write returned; a 200 from the gateway). ``kill_mid_burst`` waits
until ``after`` of them are acknowledged, sends SIGKILL, lets in the acknowledgements that were
already on their way, and checks that the kill landed inside the burst:
``0 < acknowledged < size``. A kill before the first write, or after the last, would make every
"nothing acknowledged was lost" check pass without testing anything; here it fails instead.

    burst = WriterBurst({"backend": "sqlite", "path": str(path)}, size=2000)
    acknowledged = kill_mid_burst(burst.proc, burst, after=60)    # then reopen the store, check burst.ready
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Callable, Protocol

import pytest


class Burst(Protocol):
    size: int

    def start(self) -> None:
        """Begin the writes (a writer process that writes as it starts does nothing here)."""

    def acknowledged(self) -> int:
        """How many writes of the burst have been acknowledged so far."""

    def settle(self) -> None:
        """After the kill: wait until every acknowledgement sent before it has been counted."""


def kill_mid_burst(proc: subprocess.Popen, burst: Burst, *, after: int = 1, timeout: float = 120.0) -> int:
    """Start ``burst``, SIGKILL ``proc`` once ``after`` writes are acknowledged, and return how many
    were acknowledged before the kill; fails unless that is more than 0 and fewer than the burst."""
    assert 0 < after < burst.size
    try:
        burst.start()
        deadline = time.monotonic() + timeout
        while burst.acknowledged() < after:
            if proc.poll() is not None:
                pytest.fail(f"the process exited with {proc.returncode} before the kill "
                            f"({burst.acknowledged()} of {burst.size} writes acknowledged)")
            if time.monotonic() > deadline:
                pytest.fail(f"only {burst.acknowledged()} of {burst.size} writes acknowledged in {timeout:.0f} s")
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()                          # a failure above: do not leave it running
        proc.wait(timeout=30)
    burst.settle()
    acknowledged = burst.acknowledged()
    assert 0 < acknowledged < burst.size, (
        f"the kill did not land inside the burst: {acknowledged} of {burst.size} writes acknowledged")
    return acknowledged


# The writer: SmartCache.store then promote, one acknowledgement line after each returned; every
# third write also leaves an entry pending, which must never come back servable. After the burst
# it says so and waits, so a kill that comes too late is seen (all acknowledged), not missed.
WRITER = textwrap.dedent("""
    import json, sys, time
    from smartcache import SmartCache, load_config
    config = load_config(store=json.loads(sys.argv[1]), lifecycle={"promotion_window_s": 3600})
    cache = SmartCache(config)
    for i in range(1, int(sys.argv[2]) + 1):
        result = cache.store([{"role": "user", "content": WRITER_QUESTION.format(i=i)}],
                             f"订单{i}：在订单页申请开票。", session=f"s{i % 7}")
        cache.promote(result.cache_id)
        print(f"ready {result.cache_id} {i}", flush=True)
        if i % 3 == 0:
            pending = cache.store([{"role": "user", "content": f"待定问题 {i}"}], "待定", session="p")
            print(f"pending {pending.cache_id}", flush=True)
    print("done", flush=True)
    time.sleep(3600)
""")
WRITER_QUESTION = "第{i}号订单的发票怎么开？请说明步骤 {i}"


def writer_session(i: int) -> str:
    """The session the writer stored its ``i``-th answer in."""
    return f"s{i % 7}"


class WriterBurst:
    """``size`` stores and promotions by a writer process on the store ``store`` (a ``[store]``
    config table); ``ready`` maps each acknowledged cache id to its write's number, ``pending``
    holds the ids left pending."""

    def __init__(self, store: dict, *, size: int) -> None:
        self.size = size
        self.ready: dict[str, int] = {}
        self.pending: set[str] = set()
        self.done = False
        source = f"WRITER_QUESTION = {WRITER_QUESTION!r}\n" + WRITER
        self.proc = subprocess.Popen([sys.executable, "-c", source, json.dumps(store), str(size)],
                                     stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            kind, *rest = line.split()
            if kind == "ready":
                self.ready[rest[0]] = int(rest[1])
            elif kind == "pending":
                self.pending.add(rest[0])
            else:
                self.done = True

    def start(self) -> None:
        pass                                     # it writes from the moment it has loaded

    def acknowledged(self) -> int:
        return len(self.ready)

    def settle(self) -> None:
        self._reader.join(timeout=30)            # the pipe ends when the killed writer's end closes


class RequestBurst:
    """``size`` requests sent at once from threads; a request is acknowledged when it got a 200.
    ``send(i)`` makes the ``i``-th request and returns its status; a connection the kill broke
    counts as not acknowledged."""

    def __init__(self, send: Callable[[int], int], size: int, *, errors: tuple[type[BaseException], ...]) -> None:
        self.size = size
        self._send, self._errors = send, errors
        self._ok = 0
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._one, args=(i,), daemon=True) for i in range(size)]

    def _one(self, i: int) -> None:
        try:
            status = self._send(i)
        except self._errors:
            return                               # the server died under it: that is the point
        if status == 200:
            with self._lock:
                self._ok += 1

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def acknowledged(self) -> int:
        with self._lock:
            return self._ok

    def settle(self) -> None:
        for t in self._threads:
            t.join(timeout=150)
