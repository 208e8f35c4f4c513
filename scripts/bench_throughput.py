"""Throughput of `smartcache serve` on loopback: exact hits, semantic hits and misses at 1, 16 and 64 clients.

It starts the load-test upstream (scripts/load_upstream.py, instant answers) and the gateway as
processes on free 127.0.0.1 ports (scripts/load_procs.py), warms the cache outside the timed
part, then runs one bounded cell per scenario and client count:

    exact     a request the client's session asked before, sent again word for word
    semantic  a paraphrase of a request the session asked before (zh and en), of the pairs
              checked at warm-up to be served with ``semantic_match`` on every gateway of the run
    miss      a request new to the cache (a pool question with a ticket number of its own)

Each client is one task with a keep-alive connection of its own (a pool shared by the tasks
would be the bottleneck at 64), sending one request after another for
``--seconds``; every response is classified by ``x-smartcache-status`` and ``x-smartcache-reason``,
so each cell reports the share served as meant (hits that were hits, misses that went to the
upstream) beside requests/s, p50 / p99 of whole requests and errors. The client is
scripts/lean_client.py (``--client httpx``: httpx, as before stop 40, when it cost about as much
CPU as the gateway it timed on the same two cores).

The gateway runs with ``--regenerate-window 0``: an identical request within the window is a
regenerate (gateway/feedback.py: a marker kept ``window`` seconds), which would turn every
exact repeat into a forwarded request; with 0 the marker is expired as it is written.
Learning from traffic is off (``[learning] enabled = false``, a config file under build/) unless
``--learning``: the load-test upstream words each answer by a hash of the question, so a
paraphrase is always answered unlike its original; the learning cache reads every forwarded
paraphrase as proof that the stratum's near matches differ and within seconds stops serving
them, and the semantic cells would time misses, then exact hits on the paraphrases' own entries.
``--promotion-window`` (default 1 s) is the wait before a warmed answer is served; the
promotion ticker runs every half window (at least 50 ms), on the idle gateway too.

``--baseline REV`` also runs the gateway of an older revision (a ``git worktree add --detach``
under build/, its ``src`` on PYTHONPATH with this venv; removed at the end), both gateways
up at once and each cell run on both, the order alternating from cell to cell so the machine's
noise reaches both; the table gives new/old of requests/s. ``--workers N`` (default 1) is
passed to ``serve`` when that gateway's ``serve --help`` lists ``--workers``, 1 included: such a
serve would otherwise start one worker a core on SQLite; a revision without it runs one process.
More than one worker needs ``--store sqlite`` (a memory store is one process's).

    python scripts/bench_throughput.py                          # about 2 minutes on 2 cores
    python scripts/bench_throughput.py --baseline 09f29f0       # 3 to 4 minutes
    make bench-throughput ARGS="--baseline 09f29f0 --seconds 5"

Writes build/throughput.json, build/throughput.md (the table, also printed) and
build/throughput.png; the processes' logs are kept in build/throughput-logs/. The client runs
in this process, on the same cores as the gateway: the figures are the machine's, not the
gateway's alone. Exit status 1 when any cell had an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import load_pool  # noqa: E402
from load_procs import Stack, _on_sigterm  # noqa: E402
from load_report import percentiles  # noqa: E402
from lean_client import LeanClient, ask_lean  # noqa: E402
from load_test import Plan, Sample, ask  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build"
SCENARIOS = ("exact", "semantic", "miss")
# Candidates beside load_pool's: orders swapped and the like, which the verifier tends to serve.
# Only the pairs checked at warm-up to hit with semantic_match on every gateway are timed.
EXTRA_PAIRS = [
    ("求韩国电影爱人完整版", "求韩国爱人电影完整版"), ("How long does shipping take?", "How long does shipping usually take?"),
    ("八宝粥哪个牌子的比较好吃？", "哪个牌子的八宝粥比较好吃"), ("How do I clear my browser cache?", "How can I clear the browser cache"),
    ("米饭和面条哪个热量高", "面条和米饭哪个热量高"), ("跑步和游泳哪个更减肥", "游泳和跑步哪个更减肥"),
    ("怎么备份微信聊天记录", "微信聊天记录怎么备份"), ("咖啡和茶哪个更提神", "茶和咖啡哪个更提神"),
    ("求日本电影情书完整版", "求日本情书电影完整版"), ("怎么导出手机通讯录", "手机通讯录怎么导出"),
]
PER_SESSION = 8          # warmed requests per session: one session per client slot


@dataclass(frozen=True)
class Gateway:
    """One gateway of the run: what it runs and how it was started."""

    label: str           # new | old
    rev: str             # the commit its src comes from (new: HEAD, plus the working tree's edits)
    src: Path
    flags: tuple[str, ...]
    workers: int
    hidden: tuple[str, ...] = ()   # packages of this venv its own requirements did not install


# Installed for the new gateway; an older revision that did not require them would still get
# them from this venv (uvicorn takes them when it can import them), and be timed faster than
# it ran. They are hidden from it, so it runs on what its own requirements install.
SPEED_PACKAGES = ("uvloop", "httptools")


def hidden_packages(worktree: Path) -> tuple[str, ...]:
    required = (worktree / "requirements.txt").read_text(encoding="utf-8").lower()
    return tuple(name for name in SPEED_PACKAGES if f"\n{name}==" not in f"\n{required}")


def hiding_folder(names: tuple[str, ...], where: Path) -> Path:
    """A folder that, first on PYTHONPATH, makes ``import NAME`` fail as a missing package does."""
    where.mkdir(parents=True, exist_ok=True)
    for name in names:
        (where / f"{name}.py").write_text(f"raise ImportError('{name} is hidden from this baseline')\n",
                                          encoding="utf-8")
    return where


class GatewayStack(Stack):
    """load_procs.Stack with the gateway's ``src`` chosen (a worktree's for --baseline), extra
    ``serve`` flags, and the logs kept in a folder of build/ rather than a temporary one."""

    def __init__(self, gateway: Gateway, *, store: str, promotion_window: float, logs: Path) -> None:
        super().__init__(ROOT, engine="load-upstream", store=store, promotion_window=promotion_window)
        shutil.rmtree(self.logs, ignore_errors=True)      # Stack's temporary folder, unused
        shutil.rmtree(logs, ignore_errors=True)           # no SQLite file of an earlier run
        logs.mkdir(parents=True)
        self.logs, self.bench, self.keep_logs = logs, gateway, True

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        if name == "gateway":
            argv = [*argv, *self.bench.flags]
            hide = hiding_folder(self.bench.hidden, self.logs / "hidden") if self.bench.hidden else None
            env = {**(env or os.environ), "PYTHONPATH": _pythonpath(self.bench.src, hide)}
        return super()._spawn(name, argv, env)


def _pythonpath(src: Path, hide: Path | None = None) -> str:
    return os.pathsep.join(filter(None, [str(hide) if hide else None, str(src), os.environ.get("PYTHONPATH")]))


def serve_flags(src: Path, workers: int, config: Path | None) -> tuple[tuple[str, ...], int]:
    """The flags this ``src``'s ``serve`` accepts of those the benchmark wants, and its workers.
    ``config`` (learning off) goes only to a revision whose defaults have a ``[learning]`` table."""
    env = {**os.environ, "PYTHONPATH": _pythonpath(src)}

    def python(*argv: str) -> str:
        done = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"python {' '.join(argv)} with {src} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    where = python("-c", "import smartcache; print(smartcache.__file__)").strip()
    if not Path(where).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"smartcache imports from {where}, not from {src}")
    text = python("-m", "smartcache.cli", "serve", "--help")
    flags: list[str] = []
    if config is not None and "[learning]" in (src / "smartcache" / "data" / "defaults.toml").read_text("utf-8"):
        flags += ["--config", str(config)]
    if "--regenerate-window" in text:
        flags += ["--regenerate-window", "0"]
    else:
        print(f"note: {src}'s serve has no --regenerate-window: exact repeats are regenerates", file=sys.stderr)
    if "--workers" in text:
        flags += ["--workers", str(workers)]
        return tuple(flags), workers
    if workers > 1:
        print(f"note: {src}'s serve has no --workers: one process", file=sys.stderr)
    return tuple(flags), 1


# -- the requests ------------------------------------------------------------------------


def candidate_pairs() -> list[tuple[str, str]]:
    """load_pool's paraphrase pairs and the extras, zh and en interleaved."""
    pairs = load_pool.paraphrase_pairs() + EXTRA_PAIRS
    zh = [p for p in pairs if any("\u4e00" <= ch <= "\u9fff" for ch in p[0])]
    en = [p for p in pairs if p not in zh]
    mixed = [p for both in zip(zh, en) for p in both]
    return mixed + zh[len(en):] + en[len(zh):]


def session_pairs(pairs: Sequence[tuple[str, str]], sessions: int, per: int = PER_SESSION
                  ) -> list[list[tuple[str, str]]]:
    """Session j asks ``per`` consecutive pairs from j * per on, wrapping:
    3 pairs, 2 sessions, per 2 -> [[p0, p1], [p2, p0]]."""
    return [[pairs[(j * per + i) % len(pairs)] for i in range(min(per, len(pairs)))] for j in range(sessions)]


def miss_text(k: int, i: int, pool: Sequence[str]) -> str:
    """The i-th request of client k in a miss cell: new to the cache, never repeated."""
    q = pool[(k * 131 + i) % len(pool)]
    n = 100_000 * (k + 1) + i
    return f"{q}（工单{n}）" if any("\u4e00" <= ch <= "\u9fff" for ch in q) else f"{q} (ticket {n})"


Next = Callable[[int, int], tuple[str, str]]      # (client, request number) -> (session, text)


def workload(scenario: str, clients: int, originals: list[list[str]], paraphrases: list[list[str]],
             pool: Sequence[str]) -> Next:
    if scenario == "miss":
        return lambda k, i: (f"tp-miss-c{clients}-k{k}", miss_text(k, i, pool))
    lists = originals if scenario == "exact" else paraphrases
    usable = [j for j, texts in enumerate(lists) if texts]

    def nxt(k: int, i: int) -> tuple[str, str]:
        j = usable[k % len(usable)]
        return f"tp-s{j}", lists[j][i % len(lists[j])]
    return nxt


# -- driving a gateway -------------------------------------------------------------------

PLAN = Plan(model="load-upstream", max_tokens=64, stop=(), window_s=0.0)
SYSTEM = {"role": "system", "content": load_pool.SYSTEM}


async def send_all(url: str, requests: list[tuple[str, str]], concurrency: int = 16) -> list[Sample]:
    """Untimed requests (the warm-up and the paraphrase check), ``concurrency`` at a time."""
    rng, limit = random.Random(0), asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        async def one(session: str, text: str) -> Sample:
            async with limit:
                return (await ask(client, PLAN, [SYSTEM, {"role": "user", "content": text}], session, "warm",
                                  False, rng))[0]
        return list(await asyncio.gather(*(one(s, t) for s, t in requests)))


async def run_cell(url: str, nxt: Next, clients: int, seconds: float, client: str = "lean"
                   ) -> tuple[list[Sample], float]:
    """``clients`` tasks, each with a client of its own holding one keep-alive connection, for
    ``seconds``; requests in flight at the deadline finish and count, and so does the time they take.
    ``client``: "lean" (scripts/lean_client.py: it costs a fraction of what httpx does, so the two
    cores it shares time the gateway) or "httpx", one client per task: a pool shared by 64 tasks
    is itself the bottleneck (httpx 0.28 against the instant upstream: 640 requests/s with a
    client each, 110 through one pool of 64 connections)."""
    rng, out = random.Random(0), []
    async with contextlib.AsyncExitStack() as stack:
        if client == "lean":
            pool = [await stack.enter_async_context(LeanClient(url)) for _ in range(clients)]

            async def send(k: int, session: str, text: str) -> Sample:
                return await ask_lean(pool[k], PLAN, [SYSTEM, {"role": "user", "content": text}], session, "bench")
        else:
            limits = httpx.Limits(max_connections=1, max_keepalive_connections=1, keepalive_expiry=30)
            pool = [await stack.enter_async_context(httpx.AsyncClient(base_url=url, timeout=60, limits=limits))
                    for _ in range(clients)]
            await asyncio.gather(*(c.get("/health") for c in pool))     # connections open first

            async def send(k: int, session: str, text: str) -> Sample:
                return (await ask(pool[k], PLAN, [SYSTEM, {"role": "user", "content": text}], session,
                                  "bench", False, rng))[0]

        async def one(k: int) -> None:
            i = 0
            while time.perf_counter() < deadline:
                session, text = nxt(k, i)
                out.append(await send(k, session, text))
                i += 1

        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(*(one(k) for k in range(clients)))
        return out, time.perf_counter() - started


def summarise_cell(samples: Sequence[Sample], elapsed: float) -> dict[str, Any]:
    """One cell's figures: answered requests/s, p50 / p99 (ms, nearest rank) of answered requests,
    errors, and the shares of answers that were hits, hits by ``semantic_match`` and forwarded."""
    ok = [s for s in samples if s.error is None]
    n = max(len(ok), 1)
    statuses = Counter(s.status for s in ok)
    semantic = sum(s.status == "hit" and "semantic_match" in s.reasons.split(",") for s in ok)
    p = percentiles([s.seconds for s in ok])
    return {"requests": len(samples), "seconds": round(elapsed, 2),
            "rps": round(len(ok) / elapsed, 1) if elapsed > 0 else 0.0,
            "p50_ms": p.get("p50_ms"), "p99_ms": p.get("p99_ms"), "errors": len(samples) - len(ok),
            "hit_share": round(statuses["hit"] / n, 3), "semantic_share": round(semantic / n, 3),
            "forwarded_share": round((statuses["miss"] + statuses["half-hit"]) / n, 3),
            "statuses": dict(statuses), "error_examples": sorted({s.error for s in samples if s.error})[:3]}


def as_meant(scenario: str, cell: dict[str, Any]) -> float:
    return cell[{"exact": "hit_share", "semantic": "semantic_share", "miss": "forwarded_share"}[scenario]]


# -- the report --------------------------------------------------------------------------


def _num(v: float | None, fmt: str = ".1f") -> str:
    return "–" if v is None else format(v, fmt)


def render_table(report: dict[str, Any]) -> str:
    """The markdown table of a report: one row per scenario and client count; with a baseline,
    new and old side by side and new/old of requests/s."""
    labels = [g["label"] for g in report["gateways"]]
    cells = {(c["gateway"], c["scenario"], c["clients"]): c for c in report["cells"]}
    two = len(labels) == 2
    if two:
        head = ("| scenario | clients | req/s new | req/s old | new/old | p50 ms new / old | p99 ms new / old "
                "| errors new / old | as meant new / old |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    else:
        head = "| scenario | clients | req/s | p50 ms | p99 ms | errors | as meant |\n|---|---:|---:|---:|---:|---:|---:|"
    rows = [head]
    for scenario in report["scenarios"]:
        for clients in report["clients"]:
            got = [cells.get((label, scenario, clients)) for label in labels]
            if any(c is None for c in got):
                continue
            if two:
                new, old = got
                ratio = new["rps"] / old["rps"] if old["rps"] else None
                rows.append(f"| {scenario} | {clients} | {new['rps']:.1f} | {old['rps']:.1f} | {_num(ratio, '.2f')} "
                            f"| {_num(new['p50_ms'])} / {_num(old['p50_ms'])} "
                            f"| {_num(new['p99_ms'])} / {_num(old['p99_ms'])} | {new['errors']} / {old['errors']} "
                            f"| {as_meant(scenario, new):.0%} / {as_meant(scenario, old):.0%} |")
            else:
                (c,) = got
                rows.append(f"| {scenario} | {clients} | {c['rps']:.1f} | {_num(c['p50_ms'])} | {_num(c['p99_ms'])} "
                            f"| {c['errors']} | {as_meant(scenario, c):.0%} |")
    gw = "; ".join(f"{g['label']}: {g['rev']}{' + working tree' if g.get('dirty') else ''}, "
                   f"{g['workers']} worker{'s' if g['workers'] > 1 else ''}"
                   + (f", without {' and '.join(g['hidden'])} (not in its requirements)" if g.get("hidden") else "")
                   for g in report["gateways"])
    notes = [f"Gateways: {gw}. {report['store']} store, {report.get('client', 'httpx')} client, "
             f"{report['seconds']:.0f} s a cell, "
             f"{report['cpus']} CPUs, load average {report['loadavg_before']} before the run and "
             f"{report['loadavg_after']} after; "
             f"learning from traffic {'on' if report.get('learning') else 'off'}.",
             "As meant: exact, the share of hits; semantic, of hits by semantic_match; miss, of requests "
             "forwarded to the upstream (miss or half-hit). "
             f"Semantic pairs timed: {report['semantic_pairs']} of {report['candidate_pairs']} candidates "
             "(those served by semantic_match at warm-up on every gateway)."]
    return "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"


def plot(report: dict[str, Any], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [g["label"] for g in report["gateways"]]
    cells = {(c["gateway"], c["scenario"], c["clients"]): c for c in report["cells"]}
    fig, axes = plt.subplots(1, len(report["scenarios"]), figsize=(4 * len(report["scenarios"]), 3.6), sharey=True,
                             squeeze=False)
    axes = axes[0]
    width = 0.8 / len(labels)
    for ax, scenario in zip(axes, report["scenarios"]):
        for n, label in enumerate(labels):
            xs = [i + (n - (len(labels) - 1) / 2) * width for i in range(len(report["clients"]))]
            ys = [cells[(label, scenario, c)]["rps"] if (label, scenario, c) in cells else 0
                  for c in report["clients"]]
            rev = next(g["rev"][:7] for g in report["gateways"] if g["label"] == label)
            ax.bar(xs, ys, width, label=f"{label} ({rev}{' + tree' if label == 'new' and len(labels) > 1 else ''})")
        ax.set_xticks(range(len(report["clients"])), [str(c) for c in report["clients"]])
        ax.set_xlabel("concurrent clients")
        ax.set_title(scenario)
    axes[0].set_ylabel("requests / s")
    axes[-1].legend()
    fig.suptitle(f"smartcache serve on loopback, {report['cpus']} CPUs, {report['seconds']:.0f} s a cell")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


# -- the run -----------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def baseline_worktree(stack: contextlib.ExitStack, rev: str) -> tuple[Path, str]:
    """A detached worktree of ``rev`` under build/, removed when ``stack`` closes."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    path = BUILD / f"throughput-base-{sha[:12]}"
    if path.exists():          # left by an interrupted run
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)
        shutil.rmtree(path, ignore_errors=True)
        _git("worktree", "prune")
    _git("worktree", "add", "--detach", str(path), sha)
    stack.callback(lambda: subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT,
                                          capture_output=True))
    return path, sha


async def warm(url: str, sessions: list[list[tuple[str, str]]], window_s: float, logs: Path
               ) -> list[list[Sample]]:
    """Every session asks its originals; past the promotion window, each paraphrase once.
    Returns the paraphrases' samples, per session."""
    firsts = await send_all(url, [(f"tp-s{j}", a) for j, ps in enumerate(sessions) for a, _ in ps])
    if any(s.error for s in firsts):
        raise RuntimeError(f"warm-up failed: {next(s.error for s in firsts if s.error)}; see {logs}")
    await asyncio.sleep(window_s + 1.0)      # past the window, and a promotion tick
    checks = await send_all(url, [(f"tp-s{j}", b) for j, ps in enumerate(sessions) for _, b in ps])
    it = iter(checks)
    return [[next(it) for _ in ps] for ps in sessions]


def run(args: argparse.Namespace) -> dict[str, Any]:
    started, load_before = time.time(), [round(x, 2) for x in os.getloadavg()]
    head = _git("rev-parse", "HEAD")
    dirty = bool(_git("status", "--porcelain", "--", "src"))
    sessions = session_pairs(candidate_pairs(), max(args.clients))
    pool = load_pool.questions()
    config = None
    if not args.learning:
        config = BUILD / "throughput-logs" / "no-learning.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("[learning]\nenabled = false\n", encoding="utf-8")
    with contextlib.ExitStack() as stack:
        # SIGTERM ends the run as Ctrl-C does: the gateways stop and the worktree goes.
        stack.callback(signal.signal, signal.SIGTERM, signal.signal(signal.SIGTERM, _on_sigterm))
        flags, workers = serve_flags(ROOT / "src", args.workers, config)
        gateways = [Gateway("new", head[:12], ROOT / "src", flags, workers)]
        if args.baseline:
            path, sha = baseline_worktree(stack, args.baseline)
            flags, workers = serve_flags(path / "src", args.workers, config)
            gateways.append(Gateway("old", sha[:12], path / "src", flags, workers, hidden_packages(path)))
        urls, logs = {}, {g.label: BUILD / "throughput-logs" / g.label for g in gateways}
        for g in gateways:
            s = stack.enter_context(GatewayStack(g, store=args.store, promotion_window=args.promotion_window,
                                                 logs=logs[g.label]))
            urls[g.label] = s.gateway_url
            print(f"{g.label} gateway ({g.rev}) up at {s.gateway_url}; warming", file=sys.stderr)
        checks = {g.label: asyncio.run(warm(urls[g.label], sessions, args.promotion_window, logs[g.label]))
                  for g in gateways}
        # A paraphrase is timed where every gateway served it by semantic_match in that session.
        paraphrases = [[b for i, (_, b) in enumerate(ps)
                        if all(checks[g.label][j][i].status == "hit"
                               and "semantic_match" in checks[g.label][j][i].reasons.split(",") for g in gateways)]
                       for j, ps in enumerate(sessions)]
        originals = [[a for a, _ in ps] for ps in sessions]
        timed_pairs = {p for j, ps in enumerate(sessions) for p in ps if p[1] in paraphrases[j]}
        scenarios = [s for s in SCENARIOS if s != "semantic" or timed_pairs]
        if not timed_pairs:
            print("note: no paraphrase was served by semantic_match: no semantic cells", file=sys.stderr)
        cells, n = [], 0
        for scenario in scenarios:
            for clients in args.clients:
                order = gateways if n % 2 == 0 else gateways[::-1]      # alternating: noise on both
                n += 1
                for g in order:
                    nxt = workload(scenario, clients, originals, paraphrases, pool)
                    samples, elapsed = asyncio.run(run_cell(urls[g.label], nxt, clients, args.seconds, args.client))
                    cell = {"gateway": g.label, "scenario": scenario, "clients": clients,
                            **summarise_cell(samples, elapsed), "load1_after": round(os.getloadavg()[0], 2)}
                    cells.append(cell)
                    print(f"{g.label} {scenario} x{clients}: {cell['rps']} req/s, p50 {cell['p50_ms']} ms, "
                          f"p99 {cell['p99_ms']} ms, errors {cell['errors']}", file=sys.stderr)
    return {"started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "cpus": os.cpu_count(), "loadavg_before": load_before,
            "loadavg_after": [round(x, 2) for x in os.getloadavg()],
            "store": args.store, "client": args.client, "seconds": args.seconds, "clients": args.clients, "scenarios": scenarios,
            "promotion_window_s": args.promotion_window, "learning": args.learning,
            "gateways": [{"label": g.label, "rev": g.rev, "workers": g.workers,
                          "flags": [f.replace(f"{ROOT}{os.sep}", "") for f in g.flags],
                          "dirty": dirty and g.label == "new", "hidden": list(g.hidden)} for g in gateways],
            "candidate_pairs": len({p for ps in sessions for p in ps}), "semantic_pairs": len(timed_pairs),
            "warm_paraphrase_hits": {label: dict(Counter(s.status for ss in c for s in ss))
                                     for label, c in checks.items()},
            "cells": cells}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=8.0, help="timed seconds a cell (default 8)")
    p.add_argument("--clients", default="1,16,64", help="concurrent clients, comma-separated (default 1,16,64)")
    p.add_argument("--baseline", metavar="REV", help="also benchmark the gateway of this git revision")
    p.add_argument("--workers", type=int, default=1, help="serve --workers N, where serve accepts it (default 1)")
    p.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    p.add_argument("--client", choices=("lean", "httpx"), default="lean",
                   help="the timing client: lean (scripts/lean_client.py, default) or httpx (figures before stop 40)")
    p.add_argument("--learning", action="store_true",
                   help="keep learning from traffic on (the packaged default); see above why it is off")
    p.add_argument("--promotion-window", type=float, default=1.0, help="the gateway's, in seconds (default 1)")
    p.add_argument("--out", default=str(BUILD / "throughput"), help="writes OUT.json, OUT.md and OUT.png")
    args = p.parse_args(argv)
    args.clients = [int(c) for c in args.clients.split(",")]
    if not args.clients or min(args.clients) < 1 or args.seconds <= 0 or args.workers < 1:
        p.error("--clients and --workers take positive integers and --seconds a positive number")
    if args.workers > 1 and args.store == "memory":
        p.error("--workers N > 1 needs --store sqlite: a memory store lives in one process")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = run(args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    table = render_table(report)
    out.with_suffix(".json").write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    out.with_suffix(".md").write_text(table, encoding="utf-8")
    plot(report, out.with_suffix(".png"))
    print(table)
    print(f"wrote {out.with_suffix('.json')}, .md and .png; logs in build/throughput-logs", file=sys.stderr)
    if any(c["errors"] for c in report["cells"]):
        print("errors: see the cells' error_examples in the JSON and the logs", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:      # the processes are stopped and the worktree removed already
        print("throughput benchmark interrupted; gateways and upstreams stopped", file=sys.stderr)
        sys.exit(130)
