"""``smartcache serve --workers N``: N gateway processes on one port, one engine, one store.

    parent ──┬── engine process   the bundled engine (SmolLM2 + its radix tree), loaded once,
             │                    on a Unix socket in the run directory (engine/server.py)
             └── N workers        uvicorn's supervisor: one listening socket, each worker a whole
                                  gateway (encoder, store, auth) whose engine is RemoteEngine
                                  on that socket, or the upstream client with --upstream

The workers share the store: SQLite (WAL; each worker's index follows the others' writes,
regenerate markers and the lifecycle lease live in the file) or Redis. Of the workers,
the holder of the lease in the store runs the lifecycle's ticks. Metrics are
prometheus_client's multiprocess files in the run directory, so ``/metrics`` on any
worker shows the gateway's totals, and each worker's dashboard figures are written there
every tick for the others' admin API to add up (``gateway/shared_telemetry.py``). The run directory is a fresh temporary directory
that the parent removes when it stops; the engine and the workers die with the parent
(``die_with_parent``), even when it is killed.

A worker reads its flags from ``SMARTCACHE_SERVE_WORKER`` (the parent's, as JSON), and
its admin token from where the parent read it (the environment, a file or the flag).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from uvicorn.config import STARTUP_FAILURE, Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors.multiprocess import Process

from smartcache.cli.console import fail
from smartcache.engine.server import PARENT_ENV, die_with_parent
from smartcache.errors import SmartCacheError
from smartcache.gateway.shared_telemetry import ENV as SHARED_TELEMETRY_ENV

WORKER_ENV = "SMARTCACHE_SERVE_WORKER"
ENGINE_START_S = 600.0       # the engine loads in about 25 s on two busy cores; give a slow box room

log = logging.getLogger("smartcache.serve")


def run_workers(args: argparse.Namespace, workers: int) -> int:
    import uvicorn

    from smartcache.cli.serve import prepare

    try:
        config, _, _ = prepare(args)        # a mistake in the flags stops here, once, before any process starts
    except (OSError, SmartCacheError, ValueError) as exc:
        return fail(exc)
    run_dir = tempfile.mkdtemp(prefix="smartcache-serve-")
    engine = None
    os.environ[PARENT_ENV] = str(os.getpid())     # the engine and the workers die with this process
    try:
        metrics_dir = os.path.join(run_dir, "metrics")
        os.mkdir(metrics_dir)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir     # read by each worker as it starts
        telemetry_dir = os.path.join(run_dir, "telemetry")
        os.mkdir(telemetry_dir)
        os.environ[SHARED_TELEMETRY_ENV] = telemetry_dir          # the dashboard's figures, every worker's
        if args.warmup:
            _warmup_once(args, config)
        uds = None
        if not args.upstream:
            uds = os.path.join(run_dir, "engine.sock")
            print("smartcache: loading the bundled engine (SmolLM2-135M-Instruct) in its own process…",
                  file=sys.stderr)
            engine = start_engine(uds, kv_budget_mb=args.kv_budget_mb, log_level=args.log_level)
        spec = {"args": {k: v for k, v in vars(args).items() if k != "run"}, "engine_uds": uds, "workers": workers}
        os.environ[WORKER_ENV] = json.dumps(spec)
        print(f"smartcache: serving on http://{args.host}:{args.port} with {workers} workers "
              "(dashboard: /dashboard)", file=sys.stderr)
        _serve(workers, host=args.host, port=args.port, log_level=args.log_level.lower(),
               timeout_keep_alive=args.keep_alive)
        return 0
    except (OSError, SmartCacheError, RuntimeError, ValueError) as exc:
        return fail(exc)
    finally:
        for name in (WORKER_ENV, SHARED_TELEMETRY_ENV, "PROMETHEUS_MULTIPROC_DIR", PARENT_ENV):
            os.environ.pop(name, None)
        if engine is not None:
            stop(engine)
        shutil.rmtree(run_dir, ignore_errors=True)


def _serve(workers: int, **options) -> None:
    """uvicorn's supervisor, with a listening socket of its own for each worker where the system
    has SO_REUSEPORT. On one shared socket, the worker that wakes first accepts every
    connection waiting: sixteen clients opening their keep-alive connections at once all landed
    on one worker (16 and 0, 15 and 1, by ``ss``), and the other core idled. Sockets of one
    port each in their own worker are dealt connections by the kernel, by a hash of each."""
    import uvicorn
    from uvicorn.supervisors import multiprocess

    config_type = _ReusePortConfig if hasattr(socket, "SO_REUSEPORT") else uvicorn.Config
    config = config_type("smartcache.cli.serve_workers:worker_app", factory=True, workers=workers,
                         loop="uvloop", http=NoDelayHttpTools, **options)
    sock = config.bind_socket()         # the port is taken here, once (port 0: the one each worker binds)
    config.port = sock.getsockname()[1]
    if config_type is _ReusePortConfig:
        # Every worker uvicorn starts or restarts is a _OwnSocketProcess (the supervisor names the
        # class at each start); this parent serves nothing else.
        multiprocess.Process = _OwnSocketProcess
    multiprocess.Multiprocess(config, sockets=[sock]).run()


class _ReusePortConfig(Config):
    def bind_socket(self) -> socket.socket:
        """A TCP socket on host and port with SO_REUSEPORT (``serve`` has no Unix socket or fd
        option). The parent's is never listened on, so the workers' sockets share the port."""
        family = socket.AF_INET6 if self.host and ":" in self.host else socket.AF_INET
        sock = socket.socket(family=family)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        sock.set_inheritable(True)
        return sock


class _OwnSocketProcess(Process):
    def target(self, sockets: list[socket.socket] | None = None) -> None:
        """In the worker: listen on a socket of its own on the same port, not on the parent's."""
        try:
            own = self.config.bind_socket()
        except OSError as exc:
            log.error("smartcache: a worker cannot listen on %s:%s: %s", self.config.host, self.config.port, exc)
            sys.exit(STARTUP_FAILURE)   # the supervisor stops, rather than restart it again and again
        super().target([own])


class NoDelayHttpTools(HttpToolsProtocol):
    """uvicorn's httptools protocol with TCP_NODELAY on each connection. A worker gets the listening
    socket from the supervisor without its protocol number, so asyncio does not set TCP_NODELAY
    on the sockets it accepts, and every response then waited for the client's delayed ACK:
    about 44 ms a request at one client (22 requests/s, against 410 in one process). uvloop
    sets it itself (a review checked); this keeps it so on any loop uvicorn is given."""

    def connection_made(self, transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


def _warmup_once(args: argparse.Namespace, config) -> None:
    """The warm-up runs in the parent, once, into the store the workers then open."""
    from smartcache.cache import SmartCache
    from smartcache.cli.serve import _warmup

    cache = SmartCache(config)
    _warmup(cache, args.warmup)
    close = getattr(cache.backend.inner, "close", None)
    if close is not None:
        close()


def start_engine(uds: str, *, kv_budget_mb: int, log_level: str = "warning",
                 extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """The engine process on ``uds``, answering /health when this returns."""
    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "smartcache.engine.server", "--uds", uds,
                             "--kv-budget-mb", str(kv_budget_mb), "--log-level", log_level, *extra])
    deadline = time.monotonic() + ENGINE_START_S
    with httpx.Client(transport=httpx.HTTPTransport(uds=uds), timeout=2.0) as client:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the engine process exited with {proc.returncode} before it was ready")
            try:
                if client.get("http://engine/health").status_code == 200:
                    return proc
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                stop(proc)
                raise RuntimeError(f"the engine process was not ready within {ENGINE_START_S:.0f} s")
            time.sleep(0.25)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def worker_app():
    """One worker's gateway (uvicorn's factory, in each worker process)."""
    die_with_parent()
    spec = json.loads(os.environ[WORKER_ENV])
    args = argparse.Namespace(**spec["args"])
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from smartcache.cache import SmartCache
    from smartcache.cli.serve import build_app, prepare, upstream_engine
    from smartcache.lifecycle.lease import StoreLease

    config, admin_token, auth = prepare(args, quiet=True)
    cache = SmartCache(config)
    # The lifecycle's ticks run in the one worker that holds the lease in the shared store.
    cache.lifecycle.lease = StoreLease(cache.backend, ttl_s=args.lease_ttl)
    if spec["engine_uds"]:
        from smartcache.engine.remote import RemoteEngine
        engine = RemoteEngine(uds=spec["engine_uds"])
    else:
        engine = upstream_engine(args)
    return build_app(args, cache, engine, admin_token, auth, workers=spec["workers"])
