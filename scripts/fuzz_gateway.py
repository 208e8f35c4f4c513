"""Fuzz the gateway with schemathesis, in process, on the fake engine and the real encoder.

Every operation of /openapi.json gets schema-valid (positive) and schema-breaking
(negative) requests. Each response is checked: never a 5xx, and every 4xx an OpenAI-style
error body (``{"error": {"message", "type", "param", "code"}}``). Failures are collected,
not raised, so one run reports all of them, each with a curl reproducer.

    .venv/bin/python scripts/fuzz_gateway.py [--requests 10000] [--seed 0]

prints the requests sent, the 4xx by status, the 5xx, the failures and the time taken;
exits 1 when anything failed. tests/test_fuzz_gateway.py runs the same driver, smaller.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import hypothesis
from hypothesis import HealthCheck, Phase, given, settings

from smartcache import SmartCache, load_config
from smartcache.engine import FakeEngine
from smartcache.gateway import create_app

CHAT = ("POST", "/v1/chat/completions")
CHAT_SHARE = 0.6        # the chat endpoint is where the request parsing is: most of the budget goes there
ERROR_KEYS = {"message", "type", "param", "code"}


@dataclass
class FuzzReport:
    """What one run sent and got back. ``failures`` maps a short key to one reproducer."""

    requests: int = 0
    by_status: Counter[int] = field(default_factory=Counter)
    by_operation: Counter[str] = field(default_factory=Counter)
    failures: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def client_errors(self) -> dict[int, int]:
        return {s: n for s, n in sorted(self.by_status.items()) if 400 <= s < 500}

    @property
    def server_errors(self) -> int:
        return sum(n for s, n in self.by_status.items() if s >= 500)

    def summary(self) -> str:
        lines = [f"requests: {self.requests} in {self.seconds:.1f} s ({self.requests / max(self.seconds, 1e-9):.0f}/s)",
                 f"2xx: {sum(n for s, n in self.by_status.items() if s < 300)}",
                 f"4xx: {sum(self.client_errors.values())} {self.client_errors}",
                 f"5xx: {self.server_errors}", f"failures: {len(self.failures)}"]
        lines += [f"  per operation: {op} {n}" for op, n in sorted(self.by_operation.items())]
        lines += [f"  FAIL {key}\n{repro}" for key, repro in self.failures.items()]
        return "\n".join(lines)


def make_app(encoder: Any):
    """The gateway as the fuzz tests see it: real encoder, fake engine that accepts any model,
    promotion window 0 s (so answers become servable and hits happen)."""
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    return create_app(cache, FakeEngine(any_model=True), close_engine=False)


def problem(status: int, response: Any) -> str | None:
    """Why a response breaks the contract, or None."""
    if status >= 500:
        return f"server error {status}"
    if status < 400:
        return None
    try:
        body = response.json()
    except ValueError:
        return f"{status} without a JSON body"
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not ERROR_KEYS <= error.keys() or not isinstance(error["message"], str):
        return f"{status} without an OpenAI error body"
    return None


def _budgets(operations: list[Any], total: int) -> dict[int, int]:
    chat = [i for i, op in enumerate(operations) if (op.method.upper(), op.path) == CHAT]
    rest = len(operations) - len(chat)
    share = CHAT_SHARE if chat and rest else 1.0
    out = {i: int(total * share / 2) for i in chat}           # halved: positive and negative
    for i in range(len(operations)):
        if i not in out:
            out[i] = max(1, int(total * (1 - share) / max(rest, 1) / 2))
    return out


def _sender(report: FuzzReport, label: str, progress: int, began: float):
    """The test body: send one case, count its status, keep the first reproducer of each failure."""
    def send(case: Any) -> None:
        report.requests += 1
        report.by_operation[label] += 1
        if progress and report.requests % progress == 0:      # a long run shows where it is
            print(f"... {report.requests} requests, {time.perf_counter() - began:.0f} s, 5xx {report.server_errors}, "
                  f"failures {len(report.failures)}", file=sys.stderr, flush=True)
        try:
            response = case.call()
        except Exception as exc:        # the app raised through the transport: a crash
            report.by_status[500] += 1
            report.failures.setdefault(f"{label}: {type(exc).__name__}", f"{exc}\n    {case.as_curl_command()}")
            return
        report.by_status[response.status_code] += 1
        why = problem(response.status_code, response)
        if why:
            report.failures.setdefault(f"{label}: {why}", f"{response.text[:300]}\n    {case.as_curl_command()}")
    return send


def fuzz(app: Any, *, requests: int = 10_000, seed: int | None = 0, progress: int = 0) -> FuzzReport:
    """Send about ``requests`` generated requests to ``app`` (fewer where an operation has
    fewer distinct inputs than its share) and check each answer; ``progress``: print a line
    to stderr every that many requests."""
    import schemathesis
    from schemathesis import GenerationMode

    report = FuzzReport()
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    budgets = _budgets(operations, requests)
    began = time.perf_counter()

    def drive(operation: Any, examples: int, run_seed: int | None) -> None:
        send = _sender(report, f"{operation.method.upper()} {operation.path}", progress, began)
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            # Generate only: no shrinking (failures are recorded, not raised), no example database.
            run = settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
                           suppress_health_check=list(HealthCheck))(given(operation.as_strategy(mode))(send))
            if run_seed is not None:
                run = hypothesis.seed(run_seed)(run)
            try:
                run()
            except hypothesis.errors.Unsatisfiable:
                pass        # no negative input exists (an operation without parameters)

    for i, operation in enumerate(operations):
        drive(operation, budgets[i], seed)
    # Operations with few distinct inputs (no parameters) use less than their share: the chat
    # endpoint, whose inputs never run out, makes up the difference under fresh seeds.
    chat = [op for op in operations if (op.method.upper(), op.path) == CHAT]
    for round_ in range(1, 4):
        missing = requests - report.requests
        if not chat or missing <= 0:
            break
        drive(chat[0], max(1, missing // 2 + 1), None if seed is None else seed + round_)
    report.seconds = time.perf_counter() - began
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000, help="about how many requests to send")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (-1: random)")
    parser.add_argument("--progress", type=int, default=500, help="a progress line every N requests (0: none)")
    args = parser.parse_args(argv)
    from smartcache.fingerprint import shared_encoder

    report = fuzz(make_app(shared_encoder("use-multilingual")), requests=args.requests,
                  seed=None if args.seed < 0 else args.seed, progress=args.progress)
    print(report.summary())
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
