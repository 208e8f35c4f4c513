"""The processes of scripts/load_test.py: the load-test upstream, Redis Stack (optional, load_redis.py) and
`smartcache serve`, each on a free 127.0.0.1 port, all stopped when the ``with`` block ends.

    with Stack(root, engine="load-upstream", store="memory", promotion_window=1.0) as stack:
        stack.gateway_url       # http://127.0.0.1:PORT, /health answered

The upstream and the gateway are separate processes so the load the upstream takes
does not share the gateway's interpreter (its GIL, its event loop). Logs go to files
in a temporary folder, named in every error and removed after a run without errors. SIGTERM is turned into SystemExit so a
killed test still stops its children.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

START_TIMEOUT_S = 240.0       # the bundled engine takes about 25 s to load, more on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


class Stack(contextlib.ExitStack):
    def __init__(self, root: Path, *, engine: str, store: str, promotion_window: float,
                 store_delay_ms: float = 0.0, redis_mode: str = "plain") -> None:
        super().__init__()
        self.redis_mode = redis_mode      # plain | kill (AOF, everysec) | sentinel: see load_redis.py
        self.redis = None
        self.root, self.engine, self.store, self.window = root, engine, store, promotion_window
        self.store_delay_ms = store_delay_ms
        self.logs = Path(tempfile.mkdtemp(prefix="smartcache-load-"))
        self.gateway: subprocess.Popen[bytes] | None = None
        self.gateway_url = ""
        self.keep_logs = False        # set by the caller when a run had errors

    def __enter__(self) -> "Stack":
        super().__enter__()
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
            self.callback(signal.signal, signal.SIGTERM, previous)
        try:
            self._start()
        except BaseException:
            self.keep_logs = True     # close() runs __exit__ without an exception: the error names these logs
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> bool:
        suppressed = super().__exit__(*exc)      # the processes are stopped first
        if exc[0] is None and not self.keep_logs:
            shutil.rmtree(self.logs, ignore_errors=True)     # kept after a failure: the errors name it
        return suppressed

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"{name}.log", "wb")
        self.callback(log.close)
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.callback(_stop, proc)
        return proc

    def _start(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(self.root / "src"),
                                                                         os.environ.get("PYTHONPATH")]))}
        flags = ["--store", self.store]
        if self.store == "sqlite":
            flags += ["--store-path", str(self.logs / "cache.db")]
        elif self.store == "redis":
            flags += self._redis()
        if self.engine == "load-upstream":
            port = free_port()
            up = self._spawn("upstream", [sys.executable, str(self.root / "scripts" / "load_upstream.py"),
                                          "--port", str(port)], env)
            _wait(up, f"http://127.0.0.1:{port}/v1/models", self.logs / "upstream.log", 30.0)
            flags += ["--upstream", f"http://127.0.0.1:{port}/v1"]
        port = free_port()
        self.gateway = self._spawn("gateway", [sys.executable, "-m", "smartcache.cli", "serve", "--host", "127.0.0.1",
                                               "--port", str(port), "--promotion-window", str(self.window),
                                               "--log-level", "warning", *flags], env)
        self.gateway_url = f"http://127.0.0.1:{port}"
        _wait(self.gateway, self.gateway_url + "/health", self.logs / "gateway.log", START_TIMEOUT_S)

    def _redis(self) -> list[str]:
        """Redis Stack as tests/conftest.py starts it (scripts/load_redis.py): one server, or for
        ``redis_mode`` "sentinel" a primary, a replica and three sentinels; the gateway's flags."""
        from load_redis import RedisSetup

        self.redis = self.enter_context(RedisSetup(self.root, self.logs, mode=self.redis_mode))
        if self.redis_mode == "sentinel":
            return self.redis.gateway_flags
        return ["--redis-url", f"redis://127.0.0.1:{self._delayed(self.redis.ports['primary'])}/0"]

    def _delayed(self, port: int) -> int:
        """The port the gateway is given for the store: the store's own, or a delay proxy's
        in front of it (scripts/delay_proxy.py) when ``store_delay_ms`` is set."""
        if not self.store_delay_ms:
            return port
        listen = free_port()
        proxy = self._spawn("delay-proxy", [sys.executable, str(self.root / "scripts" / "delay_proxy.py"),
                                            "--listen", str(listen), "--target", str(port),
                                            "--delay-ms", str(self.store_delay_ms)])
        deadline = time.time() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", listen), timeout=0.5):
                return listen
            if proxy.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the delay proxy did not start; see {self.logs / 'delay-proxy.log'}")
            time.sleep(0.1)


def _wait(proc: subprocess.Popen[bytes], url: str, log: Path, timeout: float) -> None:
    deadline = time.time() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[1]} exited with {proc.returncode}; see {log}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return
        if time.time() > deadline:
            raise RuntimeError(f"{url} did not answer in {timeout:.0f} s; see {log}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def gateway_rss(stack: Stack) -> float:
    """The gateway process's resident memory in MiB (psutil)."""
    import psutil
    assert stack.gateway is not None
    return round(psutil.Process(stack.gateway.pid).memory_info().rss / 2**20, 1)
