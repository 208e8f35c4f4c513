"""Replay a traffic stream (``STREAMS.md``) through cache systems and score what they serve.

A stream asks "how much does the cache serve, and how much of it is wrong, as it lives
through this traffic?". Every system replays the same requests, in order, from an empty
cache, on the stream's clock (``t``), so promotion windows and TTLs behave as they would.
The engine is a fake: a request that is not served gets its own ``answer``, and that answer
is stored. ``answer_key`` is read only here, by the scorer: a served answer is right iff the
entry was stored from a request with the same key.

    >>> r = Rate.of(0, 3000)
    >>> (r.k, r.n, r.value, round(r.upper, 5))
    (0, 3000, 0.0, 0.00123)

Systems (``make_system``):

    smartcache            the packaged default, learning from its traffic; scope as each request asks
                          (session when absent); ``:D`` sets its error bound (smartcache@global:0.02)
    smartcache@global     every answer promoted to the tenant's global pool at once
    smartcache@session    every request of a tenant in one session (session scope)
    static[@...]          the same without learning: the packaged operating points alone
    exact                 the normalised messages as a key, tenant-wide
    cosine@T              GPTCache's default: the last message's vector, tenant-wide, top-1 >= T
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

import numpy as np

from smartcache.context import normalize_text, parse_messages
from smartcache.errors import InvalidRequest


@dataclass(frozen=True)
class StreamRequest:
    """One line of a stream. ``answer_key`` is for the scorer only: no system reads it."""

    id: str
    t: float
    tenant: str
    session: str
    scope: str | None
    lang: str
    source: str
    category: str
    messages: list[dict[str, Any]]
    answer_key: str
    answer: str


def parse_request(data: Any, where: str) -> StreamRequest:
    if not isinstance(data, dict):
        raise InvalidRequest(f"{where}: a request must be a JSON object")
    for key in ("id", "t", "messages", "answer_key", "answer"):
        if key not in data:
            raise InvalidRequest(f"{where}: missing '{key}'")
    if not isinstance(data["t"], (int, float)) or isinstance(data["t"], bool) or not math.isfinite(data["t"]):
        raise InvalidRequest(f"{where}: t must be a number of seconds")
    if not isinstance(data["messages"], list) or not data["messages"]:
        raise InvalidRequest(f"{where}: messages must be a non-empty list")
    if not isinstance(data["answer"], str):
        raise InvalidRequest(f"{where}: answer must be a string")
    scope = data.get("scope")
    if scope not in (None, "session", "global"):
        raise InvalidRequest(f"{where}: scope must be 'session' or 'global'")
    rid = str(data["id"])
    return StreamRequest(rid, float(data["t"]), str(data.get("tenant") or "default"), str(data.get("session") or rid),
                         scope, str(data.get("lang", "")), str(data.get("source", "")),
                         str(data.get("category", "")), data["messages"], str(data["answer_key"]), data["answer"])


def load_stream(path: str | Path) -> list[StreamRequest]:
    """Every request of a stream file, in order; a bad line or a clock that runs backwards
    raises InvalidRequest naming the line."""
    out: list[StreamRequest] = []
    seen: set[str] = set()
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidRequest(f"{path}:{n}: not JSON ({exc.msg})") from None
            request = parse_request(data, f"{path}:{n}")
            if request.id in seen:
                raise InvalidRequest(f"{path}:{n}: duplicate id {request.id!r}")
            if out and request.t < out[-1].t:
                raise InvalidRequest(f"{path}:{n}: t runs backwards ({request.t} after {out[-1].t})")
            seen.add(request.id)
            out.append(request)
    return out


# -- systems --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Served:
    """What a system did with a request: the cached answer's key when it served one.
    ``checks``: engine calls the system made for itself beside the request's own (a served
    answer checked against a fresh one); they cost what a miss costs and are counted apart."""

    hit: bool
    served_key: str | None = None
    reason: str = ""
    checks: int = 0


class StreamSystem(Protocol):
    name: str
    settings: dict[str, Any]

    def handle(self, request: StreamRequest) -> Served:
        """Look the request up; on anything but a hit, store the engine's answer."""
        ...


class StreamClock:
    """The stream's clock: the replay sets it to each request's ``t``."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class SmartCacheStream:
    """The library with the packaged defaults (or ``config``), on the stream's clock.

    ``scope``: ``stream`` (each request's own; session when absent), ``global`` (every answer
    promoted to the tenant's global pool at once) or ``session`` (one session per tenant).
    The key a served entry was stored from is kept beside the cache, for the scorer only."""

    def __init__(self, make_cache: Callable[[Callable[[], float]], Any], name: str = "smartcache",
                 scope: str = "stream", promote_at_once: bool = True) -> None:
        if scope not in ("stream", "global", "session"):
            raise ValueError(f"scope must be stream, global or session, not {scope!r}")
        self.name, self.scope, self.promote_at_once = name, scope, promote_at_once
        self.clock = StreamClock()
        self.cache = make_cache(self.clock)
        learning = self.cache.config.learning
        self.settings: dict[str, Any] = {"scope": scope, "promote_at_once": promote_at_once,
                                         "learning": learning.enabled, "error_bound": learning.error_bound}
        self._keys: dict[str, str] = {}

    def handle(self, request: StreamRequest) -> Served:
        from smartcache.decide import Zone

        self.clock.now = request.t
        session = f"{request.tenant}:all" if self.scope == "session" else request.session
        found = self.cache.lookup(request.messages, session=session, tenant=request.tenant)
        reason = ",".join(r.code.value for r in found.reasons)
        if found.zone is Zone.HIT and found.entry is not None:
            checks = 0
            if found.verify:        # the cache asks for a check: the engine answers too, counted apart
                self.cache.check(found, request.answer)
                checks = 1
            return Served(True, self._keys.get(found.entry.cache_id), reason, checks)
        scope = "global" if self.scope == "global" else (request.scope or "session") if self.scope == "stream" \
            else "session"
        stored = self.cache.store(found, request.answer, scope=scope)
        if stored.stored:
            self._keys[stored.cache_id] = request.answer_key
            if self.promote_at_once or scope == "global":
                self.cache.promote(stored.cache_id, to_global=scope == "global")
        return Served(False, reason=reason)


    def learned(self) -> dict[str, Any]:
        """What the cache learned, per tenant and stratum: labels right / wrong per score bin
        (the bins' lower edges), the point it serves at, and the checks. Empty without learning."""
        from smartcache.learn.bound import EDGES

        policy = self.cache.policy
        if policy is None:
            return {}
        out: dict[str, Any] = {}
        for tenant in policy.tenants():
            state = json.loads(policy.state(tenant))
            strata = {}
            for name, hist in state["strata"].items():
                point = policy.point(tenant, name, self.cache.decider.verifier.operating_point(
                    *_stratum_parts(name)))
                strata[name] = {"bins": [[EDGES[i], r, w] for i, (r, w) in enumerate(zip(hist["right"], hist["wrong"]))
                                         if r or w],
                                "point": point.score, "point_source": point.source}
            checked, wrong = policy.live(tenant)
            out[tenant] = {"strata": strata, "checks": checked, "checks_wrong": wrong,
                           "shared": sum(1 for w in state["shared"].values() if w[3]),
                           "sharing": self.cache.sharing(tenant)}
        return out


def _stratum_parts(stratum: str) -> tuple[str, bool, str]:
    """("zh:single:low") -> the verifier's operating_point arguments (tier, has history, language)."""
    lang, kind, tier = stratum.split(":")
    return tier, kind == "history", lang


class ExactStream:
    """Exact match on the normalised messages, one pool per tenant (an exact-prefix cache)."""

    def __init__(self) -> None:
        self.name, self.settings = "exact", {}
        self._answers: dict[tuple[str, str], str] = {}

    @staticmethod
    def _key(messages: list[dict[str, Any]]) -> str:
        conv = parse_messages(messages)
        return json.dumps([normalize_text(conv.system)] + [[t.role, normalize_text(t.text)] for t in conv.turns],
                          ensure_ascii=False)

    def handle(self, request: StreamRequest) -> Served:
        key = (request.tenant, self._key(request.messages))
        if key in self._answers:
            return Served(True, self._answers[key])
        self._answers[key] = request.answer_key
        return Served(False)


class CosineStream:
    """GPTCache's default: the last user message's vector, one pool per tenant, top-1 >= threshold."""

    def __init__(self, encoder, threshold: float) -> None:
        self.encoder, self.threshold = encoder, threshold
        self.name, self.settings = f"cosine@{threshold:g}", {"threshold": threshold}
        self._vectors: dict[str, list[np.ndarray]] = defaultdict(list)
        self._keys: dict[str, list[str]] = defaultdict(list)

    def handle(self, request: StreamRequest) -> Served:
        text = normalize_text(parse_messages(request.messages).current)
        q = self.encoder.encode([text])[0]
        pool = self._vectors[request.tenant]
        if pool:
            scores = np.stack(pool) @ q
            best = int(np.argmax(scores))
            if scores[best] >= self.threshold:
                return Served(True, self._keys[request.tenant][best])
        pool.append(q)
        self._keys[request.tenant].append(request.answer_key)
        return Served(False)


# -- scoring ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rate:
    """k of n with its two-sided 95 % Clopper-Pearson interval."""

    k: int
    n: int
    value: float
    lower: float
    upper: float

    @classmethod
    def of(cls, k: int, n: int) -> "Rate":
        from scipy.stats import beta
        if n == 0:
            return cls(k, n, 0.0, 0.0, 1.0)
        lower = 0.0 if k == 0 else float(beta.ppf(0.025, k, n - k + 1))
        upper = 1.0 if k == n else float(beta.ppf(0.975, k + 1, n - k))
        return cls(k, n, k / n, lower, upper)


@dataclass
class StreamTally:
    n: int = 0
    hits: int = 0
    wrong: int = 0
    engine_calls: int = 0
    checks: int = 0

    def add(self, served: Served, correct: bool) -> None:
        self.n += 1
        self.checks += served.checks
        if served.hit:
            self.hits += 1
            self.wrong += not correct
        else:
            self.engine_calls += 1

    def to_json(self) -> dict[str, Any]:
        hit, err = Rate.of(self.hits, self.n), Rate.of(self.wrong, self.n)
        right = Rate.of(self.hits - self.wrong, self.hits)
        return {"n": self.n, "hits": self.hits, "wrong": self.wrong,
                "hit_rate": round(hit.value, 5), "hit_rate_lower95": round(hit.lower, 5),
                "hit_rate_upper95": round(hit.upper, 5),
                "error_rate": round(err.value, 5), "error_rate_lower95": round(err.lower, 5),
                "error_rate_upper95": round(err.upper, 5),
                "precision_at_hit": round(right.value, 5) if self.hits else None,
                "precision_at_hit_lower95": round(right.lower, 5) if self.hits else None,
                "engine_calls": self.engine_calls + self.checks, "checks": self.checks,
                "saved_engine_calls": self.n - self.engine_calls - self.checks}


@dataclass
class SystemRun:
    overall: StreamTally = field(default_factory=StreamTally)
    by: dict[str, dict[str, StreamTally]] = field(
        default_factory=lambda: {"category": defaultdict(StreamTally), "source": defaultdict(StreamTally),
                                 "lang": defaultdict(StreamTally)})
    windows: list[StreamTally] = field(default_factory=list)
    wrong_examples: list[dict[str, Any]] = field(default_factory=list)


def replay_stream(requests: Sequence[StreamRequest], systems: Iterable[StreamSystem], *, window: int = 500,
                  progress: Callable[[], None] | None = None, examples: int = 20) -> dict[str, Any]:
    """Every system over the whole stream, one after the other; the report of ``STREAMS.md``."""
    report: dict[str, Any] = {"requests": len(requests), "window": window, "systems": {}}
    for system in systems:
        run = SystemRun()
        for i, request in enumerate(requests):
            served = system.handle(request)
            correct = served.hit and served.served_key == request.answer_key
            if i % window == 0:
                run.windows.append(StreamTally())
            for tally in (run.overall, run.by["category"][request.category or "-"],
                          run.by["source"][request.source or "-"], run.by["lang"][request.lang or "-"],
                          run.windows[-1]):
                tally.add(served, correct)
            if served.hit and not correct and len(run.wrong_examples) < examples:
                run.wrong_examples.append({"id": request.id, "category": request.category,
                                           "text": parse_messages(request.messages).current[:200],
                                           "reason": served.reason})
            if progress:
                progress()
        learned = getattr(system, "learned", None)
        report["systems"][system.name] = {
            "settings": dict(system.settings), "overall": run.overall.to_json(),
            **({"learned": learned()} if learned is not None else {}),
            **{f"by_{k}": {name: t.to_json() for name, t in sorted(v.items())} for k, v in run.by.items()},
            "windows": [w.to_json() for w in run.windows], "wrong_examples": run.wrong_examples}
    return report


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.2f} %"


def markdown(report: dict[str, Any], command: str) -> str:
    lines = [f"# Stream replay: {report.get('stream', '')}", "",
             f"Produced by `{command}`: {report['requests']} requests, every system from an empty cache. "
             "Rates with their 95 % Clopper-Pearson interval; error rate = requests served a wrong answer / "
             "requests.", "",
             "| system | hit rate | error rate (95 % CI) | precision@hit | engine calls | checks |",
             "|---|---|---|---|---|---|"]
    for name, s in report["systems"].items():
        o = s["overall"]
        lines.append(f"| {name} | {_pct(o['hit_rate'])} | {_pct(o['error_rate'])} ({_pct(o['error_rate_lower95'])}"
                     f"–{_pct(o['error_rate_upper95'])}) | {_pct(o['precision_at_hit'])} | {o['engine_calls']} | "
                     f"{o['checks']} |")
    for key in ("by_lang", "by_source", "by_category"):
        lines += ["", f"## {key[3:].capitalize()}", "", f"| system | {key[3:]} | n | hit rate | error rate (95 % upper) |",
                  "|---|---|---|---|---|"]
        for name, s in report["systems"].items():
            for label, o in s[key].items():
                lines.append(f"| {name} | {label} | {o['n']} | {_pct(o['hit_rate'])} | {_pct(o['error_rate'])} "
                             f"({_pct(o['error_rate_upper95'])}) |")
    return "\n".join(lines) + "\n"


def plot(report: dict[str, Any], path: Path) -> None:
    """Hit rate and error rate of every system, window by window along the stream."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for name, s in report["systems"].items():
        xs = [(i + 1) * report["window"] for i in range(len(s["windows"]))]
        top.plot(xs, [w["hit_rate"] for w in s["windows"]], marker=".", label=name)
        bottom.plot(xs, [w["error_rate"] for w in s["windows"]], marker=".", label=name)
    top.set_ylabel("hit rate")
    bottom.set_ylabel("error rate")
    bottom.axhline(0.01, ls=":", lw=0.8, color="grey")
    bottom.set_xlabel("requests")
    top.legend(fontsize=7)
    top.set_title(f"{Path(str(report.get('stream', 'stream'))).name}: per window of {report['window']} requests")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["CosineStream", "ExactStream", "Rate", "Served", "SmartCacheStream", "StreamClock", "StreamRequest",
           "StreamSystem", "load_stream", "markdown", "parse_request", "plot", "replay_stream"]
