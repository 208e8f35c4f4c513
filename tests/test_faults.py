"""Injected faults, each with the promise it must keep.

    upstream down, slow past the timeout,   502 / 504 with an OpenAI error body; nothing of a
    answering 5xx, cutting a stream         failed or cut answer is cached; hits are still
                                            served while the upstream is down
    Redis stopped mid-traffic, restarted    requests still answered (pass-through); /health and
                                            smartcache_store_up say degraded; recovery without
                                            a restart
    SQLite locked, SQLite disk full         fail open, say so, lose no entry reported ready

The upstream is a real HTTP server on 127.0.0.1 whose behaviour each test sets; the store
tests answer from the FakeEngine; Redis is a Redis Stack server of this test's own, so
stopping it touches no other test.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tempfile
import threading
import time

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from conftest import MODEL, U, chat, free_port, redis_server_missing, start_redis
from smartcache import SmartCache, load_config
from smartcache.engine import FakeEngine
from smartcache.engine.upstream import UpstreamEngine
from smartcache.gateway import GatewaySettings, create_app

QUESTION = "How do I reset my password?"
PARAPHRASE = "How can I reset my password?"


class FaultyUpstream:
    """An OpenAI-compatible server whose ``mode`` says how it misbehaves:
    ok | error_500 | slow | cut (the stream stops mid-answer, no finish, no [DONE])."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0
        self.port = free_port()
        app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "FaultyUpstream":
        self._thread.start()
        deadline = time.time() + 10
        while not self._server.started:
            assert time.time() < deadline, "the test upstream did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

    async def _chat(self, request: Request):
        self.calls += 1
        body = await request.json()
        if self.mode == "error_500":
            return JSONResponse({"error": {"message": "model crashed", "type": "server_error"}}, status_code=500)
        if self.mode == "slow":
            await asyncio.sleep(3)
        question = body["messages"][-1]["content"]
        words = f"To answer '{question}': open settings, choose security and follow the steps.".split(" ")

        def chunk(delta: dict, finish: str | None = None) -> bytes:
            data = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            return f"data: {json.dumps(data)}\n\n".encode()

        async def events():
            yield chunk({"role": "assistant", "content": ""})
            for i, word in enumerate(words):
                yield chunk({"content": word + " "})
                if self.mode == "cut" and i == 3:
                    return                      # the connection closes mid-answer
            yield chunk({}, "stop")
            usage = {"prompt_tokens": 12, "completion_tokens": len(words), "total_tokens": 12 + len(words)}
            yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")


def _stores(client) -> dict[str, float]:
    """smartcache_stores_total by outcome, from /metrics."""
    out = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("smartcache_stores_total{"):
            outcome = line.split('outcome="')[1].split('"')[0]
            out[outcome] = float(line.rsplit(" ", 1)[1])
    return out


def _metric(client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


@pytest.fixture
def upstream_gateway(encoder):
    """(upstream, client, cache): a gateway on the faulty upstream with a 1 s timeout."""
    with FaultyUpstream() as upstream:
        cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
        engine = UpstreamEngine(upstream.url, model=MODEL, timeout_s=1.0, connect_timeout_s=1.0)
        with TestClient(create_app(cache, engine, GatewaySettings())) as client:
            yield upstream, client, cache


@pytest.mark.parametrize("mode,status,code", [("error_500", 502, "upstream_error"),
                                              ("slow", 504, "upstream_timeout"),
                                              ("cut", 502, "upstream_cut")])
def test_a_failing_upstream_gets_an_error_body_and_nothing_is_cached(upstream_gateway, mode, status, code):
    upstream, client, cache = upstream_gateway
    upstream.mode = mode
    r = chat(client, [U(QUESTION)], session=f"fault-{mode}")
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["message"] and error["type"]
    if mode != "error_500":         # a 5xx passes the upstream's own error body through
        assert error["code"] == code
    assert len(cache.backend) == 0
    assert _stores(client).get("stored", 0) == 0


def test_a_stream_cut_midway_is_reported_in_band_and_not_cached(upstream_gateway):
    upstream, client, cache = upstream_gateway
    upstream.mode = "cut"
    with client.stream("POST", "/v1/chat/completions", headers={"x-session-id": "cut-stream"},
                       json={"model": MODEL, "messages": [U(QUESTION)], "stream": True}) as r:
        assert r.status_code == 200                 # headers went out with the first token
        events = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["error"]["code"] == "upstream_cut"
    assert not any(json.loads(e).get("choices", [{}])[0].get("finish_reason") for e in events[:-2])
    assert len(cache.backend) == 0


def test_hits_are_served_while_the_upstream_is_down(upstream_gateway, encoder):
    upstream, client, cache = upstream_gateway
    assert chat(client, [U(QUESTION)], session="down").headers["x-smartcache-status"] == "miss"
    upstream.__exit__()                              # the upstream goes away
    calls = upstream.calls
    hit = chat(client, [U(PARAPHRASE)], session="down")
    assert hit.status_code == 200 and hit.headers["x-smartcache-status"] == "hit", hit.text
    down = chat(client, [U("What is an API key used for?")], session="down")
    assert down.status_code == 502 and down.json()["error"]["code"] == "upstream_unreachable"
    assert upstream.calls == calls
    assert len(cache.backend) == 1


# -- Redis stopped mid-traffic ---------------------------------------------------------------


@pytest.fixture
def own_redis():
    missing = redis_server_missing()
    if missing:
        pytest.skip(missing)
    port, workdir = free_port(), tempfile.mkdtemp(prefix="smartcache-redis-fault-")
    box = {"proc": start_redis(port, workdir, durable=True)}

    def restart() -> None:
        box["proc"] = start_redis(port, workdir, durable=True)

    yield f"redis://127.0.0.1:{port}/0", box, restart
    box["proc"].terminate()
    box["proc"].wait(timeout=10)


def _wait_health(client, status: str, timeout: float = 40.0) -> dict:
    deadline = time.time() + timeout
    while True:
        health = client.get("/health").json()
        if health["status"] == status or time.time() > deadline:
            return health
        time.sleep(0.25)


@pytest.mark.integration
def test_redis_stopped_mid_traffic_fails_open_and_recovers_by_itself(own_redis, encoder):
    url, box, restart = own_redis
    config = load_config(lifecycle={"promotion_window_s": 0.0},
                         store={"backend": "redis", "url": url, "prefix": f"fault{time.time_ns()}:"})
    cache = SmartCache(config, encoder=encoder)
    # A 1 s regenerate window: the paraphrase asked again after the outage is not a repeat.
    settings = GatewaySettings(regenerate_window_s=1.0)
    with TestClient(create_app(cache, FakeEngine(any_model=True), settings)) as client:
        first = chat(client, [U(QUESTION)], session="r1")
        assert first.headers["x-smartcache-status"] == "miss"
        assert chat(client, [U(PARAPHRASE)], session="r1").headers["x-smartcache-status"] == "hit"
        assert _metric(client, "smartcache_store_up") == 1.0

        box["proc"].kill()                              # Redis dies under traffic
        box["proc"].wait(timeout=10)
        for i, question in enumerate([PARAPHRASE, "What is an API key?", "How does a refund work?"]):
            r = chat(client, [U(question)], session="r1")
            assert r.status_code == 200, r.text         # answered by the engine
            assert r.headers["x-smartcache-status"] in ("bypass", "miss")
            assert r.json()["choices"][0]["message"]["content"]
        health = client.get("/health").json()
        assert health["status"] == "degraded" and health["store"]["up"] is False
        assert _metric(client, "smartcache_store_up") == 0.0

        restart()                                       # the same data comes back (AOF)
        time.sleep(1.0)                                 # the regenerate window passes
        assert _wait_health(client, "ok")["status"] == "ok"
        assert _metric(client, "smartcache_store_up") == 1.0
        back = chat(client, [U(PARAPHRASE)], session="r1")
        assert back.headers["x-smartcache-status"] == "hit", back.headers


# -- SQLite locked, SQLite full ------------------------------------------------------------


@pytest.fixture
def sqlite_gateway(tmp_path, encoder):
    path = tmp_path / "cache.db"
    config = load_config(lifecycle={"promotion_window_s": 0.0}, store={"backend": "sqlite", "path": str(path)})
    cache = SmartCache(config, encoder=encoder)
    # A 0.5 s regenerate window: the paraphrase asked again after the fault is not a repeat.
    with TestClient(create_app(cache, FakeEngine(any_model=True), GatewaySettings(regenerate_window_s=0.5))) as client:
        yield path, client, cache


def _ready_ids(path) -> set[str]:
    db = sqlite3.connect(str(path))
    try:
        return {row[0] for row in db.execute("SELECT cache_id FROM entries WHERE state = 'ready'")}
    finally:
        db.close()


@pytest.mark.integration
def test_a_locked_sqlite_file_fails_open_and_keeps_what_was_ready(sqlite_gateway):
    path, client, cache = sqlite_gateway
    assert chat(client, [U(QUESTION)], session="l1").headers["x-smartcache-status"] == "miss"
    assert chat(client, [U(PARAPHRASE)], session="l1").headers["x-smartcache-status"] == "hit"
    ready = _ready_ids(path)
    assert ready

    locker = sqlite3.connect(str(path), timeout=0.1)
    locker.execute("BEGIN EXCLUSIVE")                   # another process holds the write lock
    try:
        r = chat(client, [U("What is an API key?")], session="l1")
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
        assert _stores(client).get("store_error", 0) == 1
        assert client.get("/health").json()["status"] == "degraded"
    finally:
        locker.rollback()
        locker.close()
    assert _wait_health(client, "ok")["status"] == "ok"
    assert ready <= _ready_ids(path)
    time.sleep(0.5)
    assert chat(client, [U(PARAPHRASE)], session="l1").headers["x-smartcache-status"] == "hit"


def test_a_full_sqlite_disk_fails_open_and_keeps_what_was_ready(sqlite_gateway):
    path, client, cache = sqlite_gateway
    assert chat(client, [U(QUESTION)], session="f1").headers["x-smartcache-status"] == "miss"
    assert chat(client, [U(PARAPHRASE)], session="f1").headers["x-smartcache-status"] == "hit"
    ready = _ready_ids(path)
    assert ready

    db = cache.backend.inner._db
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages}")      # the disk is full: no page can be added
    try:
        for i in range(3):
            question = f"Explain error code {7000 + i} of the billing service in detail, please."
            r = chat(client, [U(question)], session="f1")
            assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"]
        assert _stores(client).get("store_error", 0) >= 1
        assert client.get("/health").json()["status"] == "degraded"
        time.sleep(0.5)                                 # past the regenerate window: a hit, not a repeat
        hit = chat(client, [U(PARAPHRASE)], session="f1")
        assert hit.status_code == 200 and hit.headers["x-smartcache-status"] in ("hit", "miss")
    finally:
        db.execute("PRAGMA max_page_count = 1073741823")
    assert _wait_health(client, "ok")["status"] == "ok"
    assert ready <= _ready_ids(path)
    assert sqlite3.connect(str(path)).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # Every answer the store acknowledged is in the file: the in-process index holds nothing more.
    in_memory = {e.cache_id for e in cache.backend.find()}
    db2 = sqlite3.connect(str(path))
    on_disk = {row[0] for row in db2.execute("SELECT cache_id FROM entries")}
    db2.close()
    assert in_memory == on_disk
