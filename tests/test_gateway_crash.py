"""kill -9 of `smartcache serve` during a burst of writes, on SQLite and on Redis.

Every entry the gateway listed as ready before the kill must come back intact and be
served by a gateway restarted on the same store; nothing half-written may appear. The kill
lands after some answers of the burst came back and before the rest (tests/crash.py).
"""

from __future__ import annotations

import sqlite3
import time

import httpx
import pytest

from conftest import serve
from crash import RequestBurst, kill_mid_burst

pytestmark = pytest.mark.integration

BODY = {"model": "smollm2-135m-instruct", "max_tokens": 40, "stop": ["\n"]}
SYSTEM = {"role": "system", "content": "You are a concise assistant."}
QUESTIONS = ["What is a vector database?", "How do I reset my password?", "What is an API key?",
             "How does a refund work?", "What is a cache?", "How do I change my email address?"]


def chat(base, question, session):
    return httpx.post(f"{base}/v1/chat/completions", headers={"x-session-id": session}, timeout=120,
                      json={**BODY, "messages": [SYSTEM, {"role": "user", "content": question}]})


def ready_entries(base):
    reply = httpx.get(f"{base}/admin/entries", params={"state": "ready", "limit": 1000}, timeout=30).json()
    return {e["id"]: e for e in reply["data"]}


@pytest.fixture(params=["sqlite", "redis"])
def store_args(request, tmp_path):
    if request.param == "sqlite":
        path = tmp_path / "cache.db"
        return ["--store", "sqlite", "--store-path", str(path)], path
    url = request.getfixturevalue("redis_url")
    return ["--store", "redis", "--redis-url", url], None


def test_kill_minus_nine_during_writes_keeps_every_ready_entry(store_args):
    args, path = store_args
    sessions = {q: f"crash-{i}-{time.time_ns()}" for i, q in enumerate(QUESTIONS)}
    with serve(*args) as gateway:
        for q in QUESTIONS[:4]:
            assert chat(gateway, q, sessions[q]).status_code == 200
        time.sleep(2.5)                         # the background tick promotes them
        before = ready_entries(gateway)
        ours = {i: e for i, e in before.items() if e["session"] in sessions.values()}
        assert ours, "no answer was stored (all cut by length?)"
        # A burst of writes, and the kill in the middle of it: after the first answer and
        # before the last (a kill before or after the burst fails here, not vacuously passes).
        burst = RequestBurst(lambda i: chat(gateway, QUESTIONS[i], sessions[QUESTIONS[i]] + "-b").status_code,
                             len(QUESTIONS), errors=(httpx.HTTPError,))
        kill_mid_burst(gateway.proc, burst, after=1)
    if path is not None:
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with serve(*args) as again:
        after = ready_entries(again)
        for cache_id, entry in ours.items():
            assert cache_id in after and after[cache_id]["answer"] == entry["answer"]
        question = next(q for q in QUESTIONS if sessions[q] == next(iter(ours.values()))["session"])
        served = chat(again, question, sessions[question])
        assert served.headers["x-smartcache-status"] == "hit"
        assert served.headers["x-smartcache-entry"] in ours
