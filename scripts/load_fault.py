"""The fault of scripts/load_test.py's --kill-redis and --failover modes, and what it is judged by.

While the sessions keep sending, ``Fault.run`` reads the ids of the store's ready entries
from Redis every 0.25 s (each read is the server acknowledging that those promotions were
committed), SIGKILLs the primary at ``kill_at`` seconds into the round, and then either
restarts it on its append-only file after ``down_s`` (``kill``) or lets the sentinels
promote the replica (``sentinel``). Once a primary answers again it reads back:

    lost ready       ids of the last read taken at least 1 s before the kill that the
                     primary now lacks, or has as pending again: must be 0. AOF with
                     appendfsync everysec may lose up to a second of writes to a crash of
                     the machine; a killed process loses nothing it had written to the file,
                     and a replica lags by milliseconds on loopback, so the figure for the
                     last second before the kill is printed too (not held to 0).
    pending          the pending entries the primary has then; after the round every one
                     must have left pending (promoted by the lifecycle, killed by a
                     regenerate, or expired), and no entry older than the promotion window
                     may still be pending anywhere.

Hits again: the sessions' own hits depend on what their walks have left to paraphrase, so
the fault also primes ``PROBE_SESSIONS`` sessions of its own with every pair's original
before the round starts (``prime``: on a saturated gateway it would take most of the round),
and from the moment a primary answers again sends one paraphrase every
``PROBE_EVERY_S`` (each (session, pair) once) until one is a hit: the time from the primary
being back (restarted and loaded, or promoted) to that hit is the "hits again" figure.

``summarise_fault`` adds the client's side: 5xx answers and transport errors (0: the
gateway fails open to the engine), requests over 2 s, how many were answered by the engine
because of the store, and how long after the primary came back the first hit was served.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

SNAPSHOT_S = 0.25
PROBE_SESSIONS = 4           # probe sessions x paraphrase pairs: each probe is asked once (a repeat is a regenerate)
PROBE_EVERY_S = 0.2
ACK_MARGIN_S = 1.0           # the promise covers entries ready this long before the kill
SLOW_S = 2.0
SERVABLE = ("ready", "suspect")
PREFIX = "smartcache:"       # the gateway's [store] prefix (the packaged default)


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def ready_ids(client) -> set[str]:
    """Every entry the index has as ready or suspect (ids only)."""
    reply = client.execute_command("FT.SEARCH", f"{PREFIX}idx", "@state:{ready|suspect}", "NOCONTENT",
                                   "LIMIT", "0", "1000000", "DIALECT", "2")
    return {_s(k)[len(PREFIX) + 2:] for k in reply[1:]}


def states(client, ids: set[str] | list[str]) -> dict[str, str | None]:
    """The state field of each entry's hash, None for a hash that is gone (read directly, not
    through the index, which a restarted server rebuilds)."""
    ids = list(ids)
    pipe = client.pipeline(transaction=False)
    for cache_id in ids:
        pipe.hget(f"{PREFIX}e:{cache_id}", "state")
    return {c: (None if v is None else _s(v)) for c, v in zip(ids, pipe.execute())}


def pending_now(client) -> dict[str, float]:
    """Every pending entry's id and created time: the hashes whose state is pending (a SCAN,
    so an entry missing from the index or the pending set is found too)."""
    keys = list(client.scan_iter(match=f"{PREFIX}e:*", count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.hmget(key, "state", "created")
    out = {}
    for key, (state, created) in zip(keys, pipe.execute()):
        if state is not None and _s(state) == "pending":
            out[_s(key)[len(PREFIX) + 2:]] = float(created or 0.0)
    return out


@dataclass
class Fault:
    setup: Any                  # load_redis.RedisSetup
    kill_at: float              # seconds into the round
    down_s: float               # mode "kill": seconds before the restart
    window_s: float             # the gateway's promotion window
    health_url: str = ""        # the gateway's /health: when it says "ok" again
    # ask(session, text) -> load_test.Sample: one plain request through the gateway
    ask: Callable[[str, str], Awaitable[Any]] | None = None
    pairs: list[tuple[str, str]] = field(default_factory=list)
    events: dict[str, Any] = field(default_factory=dict)
    primed: list[Any] = field(default_factory=list)     # before the round (outside its /metrics scrapes)
    probes: list[Any] = field(default_factory=list)     # during it

    async def prime(self) -> None:
        """Ask every pair's original in each probe session; call before the round."""
        if self.ask is None or not self.pairs:
            return
        limit = asyncio.Semaphore(8)

        async def one(session: str, text: str) -> None:
            async with limit:
                self.primed.append(await self.ask(session, text))

        await asyncio.gather(*(one(f"fault-probe-{i}", a) for i in range(PROBE_SESSIONS) for a, _ in self.pairs))

    async def _probe_hits(self, timeout_s: float = 40.0) -> float | None:
        """Paraphrases of primed originals, one every PROBE_EVERY_S, until one is a hit; its end, or None."""
        started = time.perf_counter()
        for i in range(PROBE_SESSIONS):
            for _, paraphrase in self.pairs:
                if time.perf_counter() - started > timeout_s:
                    return None
                sample = await self.ask(f"fault-probe-{i}", paraphrase)
                self.probes.append(sample)
                if sample.status == "hit":
                    return sample.started + sample.seconds
                await asyncio.sleep(PROBE_EVERY_S)
        return None

    async def run(self, round_started: float) -> None:
        import redis

        snaps: list[tuple[float, set[str]]] = []
        client = self.setup.client()
        while time.perf_counter() < round_started + self.kill_at:
            with contextlib.suppress(redis.RedisError, OSError):
                ids = await asyncio.to_thread(ready_ids, client)
                snaps.append((time.perf_counter(), ids))
                snaps = snaps[-40:]
            await asyncio.sleep(SNAPSHOT_S)
        killed = await asyncio.to_thread(self.setup.kill_primary)
        self.events["killed_at_s"] = round(killed - round_started, 2)
        acked = max((s for s in snaps if s[0] <= killed - ACK_MARGIN_S), default=(0.0, set()), key=lambda s: s[0])
        last = snaps[-1] if snaps else (0.0, set())
        if self.setup.mode == "kill":
            await asyncio.sleep(self.down_s)
            restarted = time.perf_counter()
            await asyncio.to_thread(self.setup.restart_primary)
            self.events["restarted_after_s"] = round(restarted - killed, 2)
        recovered = await asyncio.to_thread(self.setup.wait_primary)
        healthy = asyncio.create_task(self._healthy_again())
        probed = asyncio.create_task(self._probe_hits()) if self.ask is not None and self.pairs else None
        client = self.setup.client()
        after = await asyncio.to_thread(states, client, acked[1] | last[1])
        lost = sorted(c for c in acked[1] if after.get(c) not in SERVABLE + ("invalid",))
        lost_last = sorted(c for c in last[1] - acked[1] if after.get(c) not in SERVABLE + ("invalid",))
        pending = await asyncio.to_thread(pending_now, client)
        self.events.update(
            killed=killed, recovered=recovered, recovered_after_s=round(recovered - killed, 2),
            ready_acknowledged=len(acked[1]), acknowledged_before_kill_s=round(killed - acked[0], 2) if acked[0] else None,
            ready_lost=len(lost), ready_lost_examples=lost[:5],
            ready_last_second=len(last[1] - acked[1]), ready_last_second_lost=len(lost_last),
            pending_at_recovery=len(pending), _pending_ids=sorted(pending))
        at = await healthy
        self.events["gateway_ok_after_recovery_s"] = None if at is None else round(at - recovered, 2)
        hit = await probed if probed is not None else None
        self.events["probe_hit_after_recovery_s"] = None if hit is None else round(max(0.0, hit - recovered), 2)
        self.events["probe_hit_after_kill_s"] = None if hit is None else round(hit - killed, 2)

    async def _healthy_again(self, timeout_s: float = 60.0) -> float | None:
        """When the gateway's /health says "ok" again (its store calls answer), or None."""
        import httpx

        if not self.health_url:
            return None
        started = time.perf_counter()
        async with httpx.AsyncClient(timeout=5) as client:
            while time.perf_counter() - started < timeout_s:
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    if (await client.get(self.health_url)).json().get("status") == "ok":
                        return time.perf_counter()
                await asyncio.sleep(0.1)
        return None

    async def audit_pending(self, timeout_s: float = 40.0) -> None:
        """After the round: wait (bounded) until no pending entry is older than the promotion
        window plus two ticker periods, then count what is left."""
        import redis

        ids = self.events.pop("_pending_ids", [])
        started = time.perf_counter()
        while True:
            client = self.setup.client()
            try:
                now = time.time()
                left = await asyncio.to_thread(states, client, ids)
                pending = await asyncio.to_thread(pending_now, client)
            except (redis.RedisError, OSError):
                left, pending, now = {c: "pending" for c in ids}, {}, time.time()
            stuck = [c for c in ids if left.get(c) == "pending"]
            overdue = [c for c, created in pending.items() if created < now - self.window_s - 2.0]
            if (not stuck and not overdue) or time.perf_counter() - started > timeout_s:
                break
            await asyncio.sleep(0.5)
        outcome: dict[str, int] = {}
        for c in ids:
            name = {"ready": "promoted", "suspect": "promoted", "invalid": "invalidated", None: "expired_or_deleted",
                    "pending": "still_pending"}.get(left.get(c), str(left.get(c)))
            outcome[name] = outcome.get(name, 0) + 1
        self.events.update(pending_outcome=outcome, pending_never_resolved=len(stuck),
                           pending_overdue_at_end=len(overdue),
                           pending_resolved_within_s=round(time.perf_counter() - started, 1))


def summarise_fault(samples: list[Any], events: dict[str, Any], probes: list[Any] = ()) -> dict[str, Any]:
    """The client's side of the fault, from the round's samples and the probes (load_test.Sample)."""
    killed, recovered = events["killed"], events["recovered"]
    hits = sorted(s.started + s.seconds for s in samples if s.started >= killed and s.status == "hit")
    samples = list(samples) + list(probes)      # 5xx, errors and slow requests: the probes' too
    outage = [s for s in samples if s.started + s.seconds >= killed and s.started <= recovered + 15.0]
    by_store = sum(1 for s in samples if "store_" in s.reasons)
    out = {k: v for k, v in events.items() if k not in ("killed", "recovered")}
    out.update(
        http_5xx=sum(1 for s in samples if s.http_status is not None and s.http_status >= 500),
        other_errors=sum(1 for s in samples if s.error and not (s.http_status or 0) >= 500),
        slower_than_2s=sum(1 for s in samples if s.seconds > SLOW_S),
        slower_than_2s_around_fault=sum(1 for s in outage if s.seconds > SLOW_S),
        requests_around_fault=len(outage),
        answered_by_engine_for_the_store=by_store,
        probe_requests=len(probes),
        first_hit_after_kill_s=round(hits[0] - killed, 2) if hits else None,
        hits_again_after_recovery_s=round(max(0.0, hits[0] - recovered), 2) if hits else None,
        hits_after_recovery=sum(1 for h in hits if h >= recovered),
    )
    return out


def format_fault(f: dict[str, Any], mode: str) -> list[str]:
    what = "SIGKILL, restart on the AOF" if mode == "kill" else "primary SIGKILLed, sentinels fail over"
    lines = [f"  fault ({what}): primary back {f['recovered_after_s']} s after the kill"
             + (f" (restarted after {f['restarted_after_s']} s)" if "restarted_after_s" in f else ""),
             f"  5xx answers {f['http_5xx']}; other errors {f['other_errors']}; answered by the engine because of "
             f"the store {f['answered_by_engine_for_the_store']}; requests over 2 s {f['slower_than_2s']} "
             f"({f['slower_than_2s_around_fault']} of {f['requests_around_fault']} around the fault)",
             f"  ready entries lost: {f['ready_lost']} of {f['ready_acknowledged']} read as ready "
             f"{f['acknowledged_before_kill_s']} s before the kill (last second: {f['ready_last_second_lost']} of "
             f"{f['ready_last_second']}, outside the promise)",
             f"  pending at recovery {f['pending_at_recovery']}: {f.get('pending_outcome')}; never resolved "
             f"{f.get('pending_never_resolved')}; overdue pending at the end {f.get('pending_overdue_at_end')}",
             f"  hits again: a probe hit {f.get('probe_hit_after_recovery_s')} s after the primary was back "
             f"({f.get('probe_hit_after_kill_s')} s after the kill); gateway /health ok "
             f"{f.get('gateway_ok_after_recovery_s')} s after it; the sessions' first hit "
             f"{f['hits_again_after_recovery_s']} s after it, {f['hits_after_recovery']} hits after it"]
    return lines
