"""A bounded load test of `smartcache serve` on loopback that stops by itself.

It starts the load-test upstream (scripts/load_upstream.py) and the gateway as two
subprocesses on free 127.0.0.1 ports, checks through the gateway which paraphrase
pairs of the pool hit, then drives N concurrent sessions for D seconds, twice (the
second round, by default, with the same walks in new sessions, to see whether memory keeps
growing). Each session walks multi-turn conversations from a fixed, seeded pool of zh
and en questions (scripts/load_pool.py):

    miss      a question new to the session
    half-hit  a follow-up that changes one condition of the previous turn
    hit       a paraphrase of a question the session asked more than the promotion window ago

and about a quarter of the requests stream. Every response is classified by its
``x-smartcache-status``. Printed and written to build/load-<label>.json: requests,
throughput, errors (non-2xx, transport errors, in-band stream errors: must be 0), the
outcome mix against what each request was meant to be, p50 / p99 of whole requests by
status (client side), of the hit path and of the lookup (``server-timing: lookup;dur=``
when the gateway sends it, else the ``smartcache_lookup_seconds`` buckets), lost
writes (forwarded answers against ``smartcache_stores_total``: must be 0) and the
gateway's RSS before, after the first round and after the second. Both processes are
stopped at the end, on errors and on Ctrl-C too.

    python scripts/load_test.py                            # load-test upstream, 64 sessions x 60 s, memory store
    python scripts/load_test.py --store sqlite --sessions 16 --duration 20
    python scripts/load_test.py --engine bundled           # SmolLM2 on the CPU: 8 sessions x 30 s, 1 round
    make load ARGS="--store sqlite"
    make load ARGS="--store redis --kill-redis"            # Redis SIGKILLed mid-round, restarted on its AOF
    make load ARGS="--store redis --failover"              # primary, replica, 3 sentinels; the primary SIGKILLed

The two fault modes (scripts/load_fault.py says what is read and why) run one round and
add to the report: 5xx answers (must be 0: the gateway fails open to the engine), ready
entries lost among those read as ready more than 1 s before the kill (must be 0), pending
entries the lifecycle never promoted or expired after the restart (must be 0), requests
over 2 s, and how long after the primary was back the first hit was served. A write the
outage refused (``stores_total{outcome="store_error"}``) is then an answer delivered and not
cached, so it is counted apart from lost writes.

Exit status: 0 when there were no errors and no lost writes (and, with a fault, no 5xx, no
lost ready entry and no pending entry left unresolved), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load_pool  # noqa: E402
from load_report import format_report, metric_sums, summarise  # noqa: E402
from load_procs import Stack, gateway_rss  # noqa: E402
from load_fault import Fault, format_fault, summarise_fault  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUNDLED_MODEL = "smollm2-135m-instruct"


@dataclass
class Sample:
    """One request as the client saw it."""

    kind: str                     # what it was meant to be: miss | half-hit | hit
    status: str                   # x-smartcache-status, or "error"
    seconds: float                # the whole request, to the last byte
    stream: bool
    finish: str | None = None
    lookup_ms: float | None = None     # from server-timing, when sent
    regenerate: bool = False
    error: str | None = None
    question: str = ""            # the last user turn and the reasons, for examples of surprises
    reasons: str = ""
    started: float = 0.0          # time.perf_counter() when it was sent
    http_status: int | None = None


@dataclass
class Walk:
    """What a session needs besides the client: its material and where it stands."""

    rng: random.Random
    order: list[str]
    pairs: list[tuple[str, str]]
    asked_at: dict[str, float] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    pos: int = 0
    wrapped: int = 0


@dataclass(frozen=True)
class Plan:
    model: str
    max_tokens: int
    stop: tuple[str, ...]
    window_s: float
    stream_share: float = 0.25
    hit_share: float = 0.3        # of turns that could be a hit, how many try it
    pair_share: float = 0.35      # of new questions, how many are pair originals (so hits can follow)


def server_timing(value: str | None, name: str = "lookup") -> float | None:
    """``lookup;dur=1.9, engine;dur=3`` -> 1.9 (ms) for ``name``; None when absent."""
    for part in (value or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        if fields[0] == name:
            for f in fields[1:]:
                if f.startswith("dur="):
                    try:
                        return float(f[4:])
                    except ValueError:
                        return None
    return None


async def ask(client: httpx.AsyncClient, plan: Plan, messages: list[dict[str, str]], session: str, kind: str,
              stream: bool, rng: random.Random) -> tuple[Sample, str]:
    body: dict[str, Any] = {"model": plan.model, "messages": messages, "max_tokens": plan.max_tokens}
    if plan.stop:
        body["stop"] = list(plan.stop)
    if stream:
        body["stream"] = True
        if rng.random() < 0.5:
            body["stream_options"] = {"include_usage": True}
    headers = {"x-session-id": session}
    started = time.perf_counter()
    text: list[str] = []
    finish, error, status, timing, reasons, code = None, None, "error", None, "", None
    try:
        if not stream:
            r = await client.post("/v1/chat/completions", json=body, headers=headers)
            status, timing = r.headers.get("x-smartcache-status", "error"), r.headers.get("server-timing")
            reasons, code = r.headers.get("x-smartcache-reason", ""), r.status_code
            if r.status_code >= 300:
                error = f"http {r.status_code}: {r.text[:200]}"
            else:
                choice = r.json()["choices"][0]
                text.append(choice["message"]["content"] or "")
                finish = choice["finish_reason"]
        else:
            async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
                status, timing = r.headers.get("x-smartcache-status", "error"), r.headers.get("server-timing")
                reasons, code = r.headers.get("x-smartcache-reason", ""), r.status_code
                if r.status_code >= 300:
                    error = f"http {r.status_code}: {(await r.aread())[:200]!r}"
                done = False
                async for line in r.aiter_lines():
                    if not line.startswith("data: "):
                        continue
                    if line == "data: [DONE]":
                        done = True
                        break
                    chunk = json.loads(line[6:])
                    if "error" in chunk:
                        error = f"in-band stream error: {chunk['error']}"
                    for c in chunk.get("choices") or []:
                        text.append(c.get("delta", {}).get("content") or "")
                        finish = c.get("finish_reason") or finish
                if not done and error is None:
                    error = "stream ended without [DONE]"
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:     # transport or a malformed body
        cause = exc.__cause__ or exc.__context__
        while cause is not None and (cause.__cause__ or cause.__context__) is not None:
            cause = cause.__cause__ or cause.__context__      # the socket's own error names the reason
        error = (f"{type(exc).__name__}: {exc} ({'stream' if stream else 'plain'} {kind}, "
                 f"{len(text)} chunks read, {time.perf_counter() - started:.2f} s in; cause {cause!r})")
    if error is None and status not in ("hit", "half-hit", "miss", "bypass"):
        error = f"unknown x-smartcache-status {status!r}"
    sample = Sample(kind, "error" if error else status, time.perf_counter() - started, stream, finish,
                    server_timing(timing), "regenerate" in reasons.split(","), error, messages[-1]["content"], reasons,
                    started, code)
    return sample, "".join(text)


def _next_question(walk: Walk, plan: Plan) -> str:
    fresh = [a for a, _ in walk.pairs if a not in walk.asked_at]
    if fresh and walk.rng.random() < plan.pair_share:
        return walk.rng.choice(fresh)
    while True:
        if walk.pos == len(walk.order):      # the pool ran out: repeats may now count as regenerates
            walk.pos, walk.wrapped = 0, walk.wrapped + 1
        q = walk.order[walk.pos]
        walk.pos += 1
        if q not in walk.asked_at or walk.wrapped:
            return q


async def session(client: httpx.AsyncClient, plan: Plan, name: str, walk: Walk, deadline: float,
                  out: list[Sample]) -> None:
    system = {"role": "system", "content": load_pool.SYSTEM}
    rng = walk.rng
    while time.perf_counter() < deadline:
        now = time.perf_counter()
        ready = [(a, b) for a, b in walk.pairs if b not in walk.used
                 and now - walk.asked_at.get(a, now) >= plan.window_s + 0.5]
        if ready and rng.random() < plan.hit_share:
            _, paraphrase = rng.choice(ready)
            walk.used.add(paraphrase)
            sample, _ = await ask(client, plan, [system, {"role": "user", "content": paraphrase}], name, "hit",
                                  rng.random() < plan.stream_share, rng)
            out.append(sample)
            continue
        question = _next_question(walk, plan)
        history = [system, {"role": "user", "content": question}]
        sample, answer = await ask(client, plan, history, name, "miss", rng.random() < plan.stream_share, rng)
        out.append(sample)
        walk.asked_at.setdefault(question, time.perf_counter())
        follows = list(load_pool.follow_ups(question))
        for follow in rng.sample(follows, min(len(follows), rng.choice((0, 1, 1, 2)))):
            if sample.error or time.perf_counter() >= deadline:
                break
            history = history + [{"role": "assistant", "content": answer}, {"role": "user", "content": follow}]
            sample, answer = await ask(client, plan, history, name, "half-hit", rng.random() < plan.stream_share,
                                       rng)
            out.append(sample)


async def check_pairs(client: httpx.AsyncClient, plan: Plan, pairs: list[tuple[str, str]]
                      ) -> list[tuple[str, str]]:
    """The pairs whose paraphrase hits through this gateway, each checked in a session of its own."""
    system = {"role": "system", "content": load_pool.SYSTEM}
    rng = random.Random(0)
    limit = asyncio.Semaphore(8)

    async def one(i: int, text: str, kind: str) -> Sample:
        async with limit:
            sample, _ = await ask(client, plan, [system, {"role": "user", "content": text}], f"pair-check-{i}", kind,
                                  False, rng)
            return sample

    firsts = await asyncio.gather(*(one(i, a, "miss") for i, (a, _) in enumerate(pairs)))
    await asyncio.sleep(plan.window_s + 1.0)      # past the promotion window, and one ticker period
    seconds = await asyncio.gather(*(one(i, b, "hit") for i, (_, b) in enumerate(pairs)))
    return [p for p, f, s in zip(pairs, firsts, seconds) if f.error is None and s.status == "hit"]


async def run_round(client: httpx.AsyncClient, plan: Plan, args: argparse.Namespace, pairs: list[tuple[str, str]],
                    number: int, fault: Fault | None = None) -> tuple[list[Sample], float]:
    questions = load_pool.questions()
    walks = []
    for i in range(args.sessions):
        rng = random.Random(f"{args.seed}-{i}")      # the same walks every round: equal work
        order = questions[:]
        rng.shuffle(order)
        walks.append(Walk(rng, order, pairs))
    out: list[Sample] = []
    started = time.perf_counter()
    deadline = started + args.duration
    tasks = [session(client, plan, f"load-r{number}-s{i}", w, deadline, out) for i, w in enumerate(walks)]
    if fault is not None:     # the kill, restart or failover, while the sessions keep sending
        tasks.append(fault.run(started))
    # In-flight requests finish after the deadline; the request timeout bounds how long that takes.
    await asyncio.wait_for(asyncio.gather(*tasks), args.duration + args.request_timeout + 90)
    return out, time.perf_counter() - started


async def drive(args: argparse.Namespace, stack: Stack) -> dict[str, Any]:
    bundled = args.engine == "bundled"
    plan = Plan(model=BUNDLED_MODEL if bundled else "load-upstream", max_tokens=args.max_tokens,
                stop=("\n", "。") if bundled else (), window_s=args.promotion_window)
    # keepalive_expiry: httpx's default (5 s) is uvicorn's keep-alive timeout too, as for a stock client.
    limits = httpx.Limits(max_connections=args.sessions + 8, max_keepalive_connections=args.sessions + 8,
                          keepalive_expiry=args.keepalive_expiry)
    async with httpx.AsyncClient(base_url=stack.gateway_url, timeout=args.request_timeout, limits=limits) as client:
        candidates = load_pool.paraphrase_pairs()[:args.pairs]
        print(f"gateway up; checking {len(candidates)} paraphrase pairs", file=sys.stderr)
        pairs = await check_pairs(client, plan, candidates)
        print(f"paraphrase pairs that hit at start-up: {len(pairs)} of {len(candidates)}", file=sys.stderr)
        rss = [gateway_rss(stack)]
        rounds = []
        for number in range(1, args.rounds + 1):
            fault = None
            if args.fault and number == 1:
                probe_rng = random.Random(args.seed)

                async def probe(session_id: str, text: str) -> Sample:
                    system = {"role": "system", "content": load_pool.SYSTEM}
                    sample, _ = await ask(client, plan, [system, {"role": "user", "content": text}], session_id,
                                          "hit", False, probe_rng)
                    return sample

                fault = Fault(stack.redis, kill_at=args.kill_at, down_s=args.down_s, window_s=args.promotion_window,
                              health_url=stack.gateway_url + "/health", ask=probe, pairs=pairs)
            if fault is not None:
                await fault.prime()
            before = metric_sums((await client.get("/metrics")).text)
            samples, elapsed = await run_round(client, plan, args, pairs, number, fault)
            if fault is not None:
                await fault.audit_pending()
            after = metric_sums((await client.get("/metrics")).text)
            rss.append(gateway_rss(stack))
            # The fault's probes went through the gateway between the two scrapes: they count too.
            counted = samples + (fault.probes if fault is not None else [])
            rounds.append(summarise(counted, elapsed, before, after, store_errors_expected=fault is not None))
            if fault is not None:
                rounds[-1]["fault"] = summarise_fault(samples, fault.events, fault.primed + fault.probes)
            print(f"round {number}: {len(samples)} requests in {elapsed:.1f} s", file=sys.stderr)
    return {"pairs_checked": len(candidates), "pairs_hit": len(pairs), "rss_mb": rss, "rounds": rounds}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--upstream", choices=("load",), default="load",
                      help="load: the load-test upstream, started here (the default)")
    mode.add_argument("--engine", choices=("bundled",), help="bundled: the SmolLM2 CPU engine, no upstream")
    p.add_argument("--store", choices=("memory", "sqlite", "redis"), default="memory")
    p.add_argument("--sessions", type=int, help="concurrent sessions (64; bundled 8)")
    p.add_argument("--duration", type=float, help="seconds a round (60; bundled 30)")
    p.add_argument("--rounds", type=int, help="equal rounds; RSS is read after each (2; bundled 1)")
    p.add_argument("--max-tokens", type=int, help="max_tokens of each request (64; bundled 16)")
    p.add_argument("--pairs", type=int, help="paraphrase pairs checked at start-up (all; bundled 4)")
    p.add_argument("--promotion-window", type=float, default=1.0, help="the gateway's, in seconds")
    p.add_argument("--store-delay-ms", type=float, default=0.0,
                   help="with --store redis: relay Redis through scripts/delay_proxy.py, delaying each way by this "
                        "much (a store across a network: a round trip costs twice it)")
    fault = p.add_mutually_exclusive_group()
    fault.add_argument("--kill-redis", action="store_true",
                       help="with --store redis: SIGKILL Redis mid-round and restart it on its AOF (appendfsync "
                            "everysec) --down-s later; one round unless --rounds")
    fault.add_argument("--failover", action="store_true",
                       help="with --store redis: a primary, a replica and three sentinels (the gateway uses "
                            "--redis-sentinel); the primary is SIGKILLed mid-round and the sentinels promote the replica")
    p.add_argument("--kill-at", type=float, help="seconds into the round the primary is killed (default: 40 %% of it)")
    p.add_argument("--down-s", type=float, default=3.0, help="--kill-redis: seconds Redis stays down (default 3)")
    p.add_argument("--request-timeout", type=float, help="seconds (120; bundled 600: one engine thread, "
                                                         "requests queue behind each other)")
    p.add_argument("--keepalive-expiry", type=float, default=5.0,
                   help="seconds the client reuses an idle connection (httpx's default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--label", help="names the JSON file build/load-LABEL.json (default: engine-store)")
    p.add_argument("--json", dest="json_out", help="write the JSON here instead")
    args = p.parse_args(argv)
    args.fault = "kill" if args.kill_redis else "sentinel" if args.failover else None
    if args.fault and args.store != "redis":
        p.error("--kill-redis and --failover need --store redis")
    if args.fault == "sentinel" and args.store_delay_ms:
        p.error("--failover relays nothing through the delay proxy: leave --store-delay-ms out")
    bundled = args.engine == "bundled"
    args.engine = "bundled" if bundled else "load-upstream"
    args.sessions = args.sessions or (8 if bundled else 64)
    args.duration = args.duration or (30.0 if bundled else 60.0)
    # Bundled: every generation queues on one engine thread, a few seconds each on 2 busy cores.
    args.rounds = args.rounds or (1 if bundled or args.fault else 2)
    args.max_tokens = args.max_tokens or (16 if bundled else 64)
    args.pairs = args.pairs or (4 if bundled else None)
    args.request_timeout = args.request_timeout or (600.0 if bundled else 120.0)
    args.kill_at = args.kill_at if args.kill_at is not None else 0.4 * args.duration
    suffix = {"kill": "-kill", "sentinel": "-failover"}.get(args.fault or "", "")
    args.label = args.label or f"{'bundled' if bundled else 'upstream'}-{args.store}{suffix}"
    return args


def _fault_failed(f: dict[str, Any] | None) -> bool:
    """The fault's promises: no 5xx, no ready entry lost, every pending entry resolved, hits again."""
    if f is None:
        return False
    # Nothing read as ready before the kill would make "0 lost" say nothing: that fails too.
    return bool(f["http_5xx"] or f["other_errors"] or f["ready_lost"] or not f["ready_acknowledged"]
                or f.get("pending_never_resolved")
                or f.get("pending_overdue_at_end") or f.get("probe_hit_after_recovery_s") is None)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started, load_before = time.time(), os.getloadavg()
    with Stack(ROOT, engine=args.engine, store=args.store, promotion_window=args.promotion_window,
               store_delay_ms=args.store_delay_ms, redis_mode=args.fault or "plain") as stack:
        result = asyncio.run(drive(args, stack))
        stack.keep_logs = any(r["errors"] or _fault_failed(r.get("fault")) for r in result["rounds"])
        if stack.keep_logs:
            print(f"errors: the gateway's and upstream's logs are kept in {stack.logs}", file=sys.stderr)
    report = {"label": args.label, "engine": args.engine, "store": args.store,
              "store_delay_ms": args.store_delay_ms, "fault": args.fault, "sessions": args.sessions,
              "duration_s": args.duration, "rounds_run": args.rounds, "seed": args.seed,
              "keepalive_expiry_s": args.keepalive_expiry,
              "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              # Other work on the machine shares its cores: the figures are only as quiet as it was.
              "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
              "cpus": os.cpu_count(), **result}
    print(format_report(report))
    out = Path(args.json_out) if args.json_out else ROOT / "build" / f"load-{args.label}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    bad = any(r["errors"] or r["lost_writes"] or _fault_failed(r.get("fault")) for r in result["rounds"])
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:      # the processes are stopped already (Stack's exit)
        print("load test interrupted; gateway and upstream stopped", file=sys.stderr)
        sys.exit(130)
