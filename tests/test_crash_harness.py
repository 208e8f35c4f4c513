"""The kill -9 harness refuses a kill that lands before or after the burst (tests/crash.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crash import kill_mid_burst


class Counted:
    """A burst whose acknowledgements are set by hand: ``at_kill`` before the kill, ``at_end`` after."""

    def __init__(self, size: int, at_kill: int, at_end: int) -> None:
        self.size, self.at_kill, self.at_end, self.killed = size, at_kill, at_end, False

    def start(self) -> None:
        pass

    def acknowledged(self) -> int:
        return self.at_end if self.killed else self.at_kill

    def settle(self) -> None:
        self.killed = True


def sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_kill_inside_the_burst_returns_what_was_acknowledged():
    proc = sleeper()
    assert kill_mid_burst(proc, Counted(10, at_kill=3, at_end=4), after=2) == 4
    assert proc.returncode == -9


def test_a_kill_after_the_last_write_fails():
    proc = sleeper()
    with pytest.raises(AssertionError, match="did not land inside the burst: 10 of 10"):
        kill_mid_burst(proc, Counted(10, at_kill=3, at_end=10), after=2)
    assert proc.returncode == -9


def test_a_burst_that_never_gets_going_fails_without_leaving_the_process():
    proc = sleeper()
    with pytest.raises(pytest.fail.Exception, match="only 0 of 10"):
        kill_mid_burst(proc, Counted(10, at_kill=0, at_end=0), after=1, timeout=0.2)
    assert proc.returncode is not None
