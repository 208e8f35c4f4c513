"""Hits per second through `smartcache serve --workers 1` and `--workers N`, in one run.

Both gateways run at once on free 127.0.0.1 ports, each on its own SQLite file, in front of
the load-test upstream (scripts/load_upstream.py, instant answers) started by
scripts/load_procs.py. Each is warmed alike: every session asks its questions once (answers
stored), and past the promotion window each is asked again until it is a hit. Then, in
rounds alternating which gateway goes first (so the machine's noise reaches both), the
clients (16 by default, each one task on its own keep-alive connection) repeat their
session's questions word for word for ``--seconds``: requests/s counts the hits only, and
anything else is reported beside it. Learning from traffic is off (a config under build/),
and ``--regenerate-window 0`` keeps an exact repeat from counting as a regenerate.

    .venv/bin/python scripts/bench_workers.py --workers 2 --clients 16 --seconds 10 --rounds 3

The client runs in this process on the same cores as the gateways: on a machine with few
cores it takes its share of them, and the figures are the machine's, not the gateway's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load_pool  # noqa: E402
from load_procs import Stack  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"


class WorkersStack(Stack):
    """load_procs.Stack with ``serve --workers N`` and the benchmark's flags."""

    def __init__(self, workers: int, config: Path, window: float) -> None:
        super().__init__(ROOT, engine="load-upstream", store="sqlite", promotion_window=window)
        self.extra = ["--workers", str(workers), "--regenerate-window", "0", "--config", str(config)]

    def _spawn(self, name, argv, env=None):
        return super()._spawn(name, [*argv, *self.extra] if name == "gateway" else argv, env)


def body(text: str) -> dict:
    return {"model": "load-upstream", "max_tokens": 64,
            "messages": [{"role": "system", "content": load_pool.SYSTEM}, {"role": "user", "content": text}]}


async def ask(client: httpx.AsyncClient, url: str, session: str, text: str) -> str:
    r = await client.post(url + "/v1/chat/completions", json=body(text), headers={"x-session-id": session})
    return r.headers.get("x-smartcache-status", f"http-{r.status_code}")


async def warm(url: str, sessions: list[list[str]], window: float) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        await asyncio.gather(*(ask(client, url, f"b{j}", q) for j, qs in enumerate(sessions) for q in qs))
        until = time.monotonic() + 120
        while True:      # past the window every question is a hit (promoted by the lease holder)
            await asyncio.sleep(window + 0.5)
            got = await asyncio.gather(*(ask(client, url, f"b{j}", q) for j, qs in enumerate(sessions) for q in qs))
            if all(s == "hit" for s in got):
                return
            if time.monotonic() > until:
                raise RuntimeError(f"{url}: warm questions not all hits: {Counter(got)}")


async def cell(url: str, sessions: list[list[str]], seconds: float) -> tuple[float, Counter]:
    counts: Counter = Counter()
    stop = time.monotonic() + seconds

    async def client_loop(k: int) -> None:
        qs = sessions[k % len(sessions)]
        async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=1)) as client:
            i = 0
            while time.monotonic() < stop:
                try:
                    counts[await ask(client, url, f"b{k % len(sessions)}", qs[i % len(qs)])] += 1
                except httpx.HTTPError as exc:
                    counts[type(exc).__name__] += 1
                i += 1

    began = time.monotonic()
    await asyncio.gather(*(client_loop(k) for k in range(len(sessions))))
    return counts["hit"] / (time.monotonic() - began), counts


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workers", type=int, default=2, help="the gateway compared with --workers 1 (default 2)")
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=10.0, help="timed seconds a cell")
    p.add_argument("--rounds", type=int, default=3, help="cells a gateway, alternating the order")
    p.add_argument("--questions", type=int, default=4, help="questions each client's session repeats")
    p.add_argument("--promotion-window", type=float, default=1.0)
    p.add_argument("--json", help="write the figures here as well")
    args = p.parse_args(argv)
    pool = load_pool.questions()
    sessions = [[pool[(k * args.questions + i) % len(pool)] for i in range(args.questions)]
                for k in range(args.clients)]
    config = BUILD / "bench-workers" / "no-learning.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("[learning]\nenabled = false\n", encoding="utf-8")
    rps: dict[int, list[float]] = {1: [], args.workers: []}
    other: dict[int, Counter] = {1: Counter(), args.workers: Counter()}
    with contextlib.ExitStack() as stack:
        urls = {}
        for n in rps:
            urls[n] = stack.enter_context(WorkersStack(n, config, args.promotion_window)).gateway_url
            print(f"--workers {n} up at {urls[n]}; warming", file=sys.stderr)
            asyncio.run(warm(urls[n], sessions, args.promotion_window))
        for r in range(args.rounds):
            for n in (list(rps) if r % 2 == 0 else list(rps)[::-1]):
                value, counts = asyncio.run(cell(urls[n], sessions, args.seconds))
                rps[n].append(value)
                other[n].update({k: v for k, v in counts.items() if k != "hit"})
                print(f"round {r + 1} --workers {n}: {value:.1f} hits/s  {dict(counts)}", file=sys.stderr)
    report = {"cpus": len(os.sched_getaffinity(0)), "clients": args.clients, "seconds": args.seconds,
              "rounds": args.rounds, "loadavg_after": [round(x, 2) for x in os.getloadavg()],
              "hits_per_s": {f"workers={n}": [round(v, 1) for v in vs] for n, vs in rps.items()},
              "median_hits_per_s": {f"workers={n}": round(statistics.median(vs), 1) for n, vs in rps.items()},
              "not_hits": {f"workers={n}": dict(c) for n, c in other.items()}}
    one, many = report["median_hits_per_s"].values()
    report["ratio"] = round(many / one, 2) if one else None
    print(json.dumps(report, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0 if not any(other[n] for n in other) else 1


if __name__ == "__main__":
    raise SystemExit(main())
