"""``smartcache serve --workers N`` as processes on 127.0.0.1: one engine process that every worker
reaches, metrics summed over the workers, the lifecycle run by the one worker holding the
lease (and taken over when it dies), and ``--workers 1`` the single process it always was.

Which worker answers is the kernel's choice: a test asks on fresh connections until it has
heard from each worker (``/admin/stats`` names the worker), within a generous bound."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conftest import MODEL, free_port, serve

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
PATIENCE_S = 120.0       # a bound on waiting for the kernel to route to each worker, never a timing claim


@pytest.fixture(scope="module")
def upstream():
    """scripts/load_upstream.py: instant, deterministic answers (no model)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "load_upstream.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        until = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > until or proc.poll() is not None:
                    raise
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the direct children of ``pid`` (Linux)."""
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmd = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            out.append((int(child), cmd))
    return out


def workers_of(pid: int) -> set[int]:
    return {child for child, cmd in children(pid) if "spawn_main" in cmd}


def stats_by_worker(base: str, expected: int) -> dict[int, dict]:
    """/admin/stats of each of ``expected`` workers, asked on fresh connections."""
    seen: dict[int, dict] = {}
    until = time.monotonic() + PATIENCE_S
    while len(seen) < expected:
        assert time.monotonic() < until, f"heard from workers {sorted(seen)} only"
        stats = httpx.get(base + "/admin/stats", timeout=30).json()
        seen[stats["worker"]["pid"]] = stats
    return seen


def ask(base: str, text: str, session: str) -> httpx.Response:
    return httpx.post(base + "/v1/chat/completions", timeout=120, headers={"x-session-id": session},
                      json={"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": text}]})


def requests_total(base: str) -> float:
    text = httpx.get(base + "/metrics", timeout=30).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("smartcache_requests_total{"))


def wait_ready(base: str, cache_id: str) -> None:
    until = time.monotonic() + PATIENCE_S
    while httpx.get(f"{base}/admin/entries/{cache_id}", timeout=30).json()["state"] != "ready":
        assert time.monotonic() < until, f"{cache_id} was never promoted"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def two_workers(upstream, tmp_path_factory):
    path = tmp_path_factory.mktemp("workers") / "cache.db"
    with serve("--workers", "2", "--upstream", upstream, "--store-path", str(path), "--lease-ttl", "2") as base:
        yield base


def test_metrics_on_any_worker_are_the_sum_of_every_worker(two_workers):
    base = two_workers
    sent = 0
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        until = time.monotonic() + PATIENCE_S
        while True:       # batches of concurrent requests until each worker has answered some
            replies = list(pool.map(lambda i: ask(base, f"What is item {sent + i}?", f"m{sent + i}"), range(8)))
            assert all(r.status_code == 200 for r in replies)
            sent += len(replies)
            per_worker = {pid: s["worker"]["requests"] for pid, s in stats_by_worker(base, 2).items()}
            if all(per_worker.values()):
                break
            assert time.monotonic() < until, f"one worker answered everything: {per_worker}"
    assert sum(per_worker.values()) == sent
    assert {requests_total(base) for _ in range(6)} == {sent}      # whichever worker answers /metrics
    until = time.monotonic() + PATIENCE_S
    while True:         # the dashboard's figures too: each worker publishes its own every tick
        shown = {s["requests"] for s in stats_by_worker(base, 2).values()}
        if shown == {sent}:
            break
        assert time.monotonic() < until, f"the admin API shows {shown} requests, not {sent}"
        time.sleep(0.5)
    decisions = httpx.get(base + "/admin/decisions", params={"limit": 500}, timeout=30).json()["data"]
    assert len(decisions) == sent                                   # every worker's decisions, merged


def test_one_worker_runs_the_lifecycle_and_another_takes_over_when_it_dies(two_workers):
    base = two_workers
    gateway = two_workers.proc.pid
    assert len(workers_of(gateway)) == 2
    until = time.monotonic() + PATIENCE_S
    while True:
        holders = {pid for pid, s in stats_by_worker(base, 2).items() if s["worker"]["runs_lifecycle"]}
        if len(holders) == 1:
            break
        assert time.monotonic() < until, f"lease holders: {holders}"
        time.sleep(0.5)
    (holder,) = holders
    assert ask(base, "How do I rotate my API keys?", "lease-1").status_code == 200
    wait_ready(base, _entry_of(base, "lease-1"))     # promoted by the holder
    os.kill(holder, signal.SIGKILL)                  # the holder dies without a word
    until = time.monotonic() + PATIENCE_S
    while True:                                      # another worker (the survivor or the new one) takes it
        try:
            live = stats_by_worker(base, 2)
        except httpx.TransportError:
            # Each worker listens on a socket of its own (SO_REUSEPORT): a connection the kernel
            # queued on the dead worker's socket in the moment before it closed is reset
            # (docs/configuration.md). The next ones go to the live workers.
            assert time.monotonic() < until, "the gateway stayed unreachable after a worker died"
            time.sleep(0.2)
            continue
        if holder not in live and [p for p, s in live.items() if s["worker"]["runs_lifecycle"]]:
            break
        assert time.monotonic() < until, "nobody took the lifecycle over"
        time.sleep(0.5)
    second = ask(base, "How do I delete my account?", "lease-2")
    assert second.status_code == 200
    wait_ready(base, _entry_of(base, "lease-2"))     # promoted by the new holder


def _entry_of(base: str, session: str) -> str:
    found = httpx.get(base + "/admin/entries", params={"session": session}, timeout=30).json()["data"]
    assert len(found) == 1, found
    return found[0]["id"]


def test_the_engine_is_loaded_once_and_every_worker_reaches_it(gateway_server):
    """``gateway_server`` is serve with the bundled engine at two workers: one engine process
    beside them, whose radix tree each worker reports (/admin/stats kv_cache)."""
    gateway = gateway_server.proc.pid
    engines = [cmd for _, cmd in children(gateway) if "smartcache.engine.server" in cmd]
    assert len(engines) == 1 and len(workers_of(gateway)) == 2
    reply = ask(gateway_server, "Name a colour.", "engine-once")
    assert reply.status_code == 200
    trees = [s["kv_cache"] for s in stats_by_worker(gateway_server, 2).values()]
    assert trees[0] == trees[1] and trees[0]["lookups"] >= 1          # one tree, read by both


def test_one_worker_is_the_single_process_it_was(upstream, tmp_path):
    with serve("--workers", "1", "--upstream", upstream, "--store-path", str(tmp_path / "c.db")) as base:
        assert children(base.proc.pid) == []                 # no engine process, no workers
        stats = httpx.get(base + "/admin/stats", timeout=30).json()
        assert stats["worker"] == {"pid": base.proc.pid, "workers": 1, "runs_lifecycle": True, "requests": 0}
        ask(base, "How do I rotate my API keys?", "single")
        wait_ready(base, _entry_of(base, "single"))
        assert "smartcache_requests_total" in httpx.get(base + "/metrics", timeout=30).text


def test_keep_alive_connections_opened_at_once_are_shared_by_the_workers(two_workers):
    # On one shared listening socket, the worker that woke first accepted every connection
    # waiting: sixteen clients connecting at once landed 16 to 0 or 15 to 1, and one core idled
    # all the while. Each worker now listens on a socket of its own (SO_REUSEPORT) and the kernel
    # deals the connections by a hash of each; fewer than 2 of 16 on a worker is a chance of
    # about 1 in 2,000 (binomial).
    if not hasattr(socket, "SO_REUSEPORT"):
        pytest.skip("no SO_REUSEPORT on this system: the workers share one socket")
    host, port = httpx.URL(two_workers).host, httpx.URL(two_workers).port

    async def stats(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        writer.write(f"GET /admin/stats HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        return json.loads(await reader.readexactly(length))["worker"]["pid"]

    async def connect_all() -> list[int]:
        # Connected together, as a client's pool or a load test opens its connections.
        pairs = await asyncio.gather(*(asyncio.open_connection(host, port) for _ in range(16)))
        try:
            first = await asyncio.gather(*(stats(r, w) for r, w in pairs))
            again = await asyncio.gather(*(stats(r, w) for r, w in pairs))
            assert first == again           # each connection kept alive, on its worker
            return first
        finally:
            for _, writer in pairs:
                writer.close()

    pids = asyncio.run(connect_all())
    counts = {pid: pids.count(pid) for pid in set(pids)}
    assert len(counts) == 2 and min(counts.values()) >= 2, counts
