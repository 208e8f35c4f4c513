"""What the gateway served, for the dashboard: totals, a timeline, tenants, the recent decisions.

Prometheus gets the same events (``GatewayMetrics``); this keeps the in-process view the
admin API reads, through the methods below only (a request's record, a summary, the
timeline rows, the rows per tenant, the recent decisions as JSON). A timeline bucket
holds requests by status, prompt and saved tokens, and the lookups' latency (a
``LogHistogram``, so p50 / p99 cost bounded memory at any rate).

    telemetry.request_done(record, total_s=0.2, ttft_s=0.05)
    telemetry.summary().by_status     # {'hit': 1, 'half-hit': 0, 'miss': 0, 'bypass': 0}
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from smartcache.decide import Zone
from smartcache.gateway.metrics import GatewayMetrics
from smartcache.gateway.quantiles import LogHistogram

STATUSES = ("hit", "half-hit", "miss", "bypass")
# Tenants counted by name; later ones share one row (tenant None): with a trusted tenant
# header a client could otherwise grow this without bound, one made-up name at a time.
MAX_TENANTS = 100


@dataclass(frozen=True)
class DecisionRecord:
    at: float
    tenant: str
    session: str | None
    status: str
    entry: str | None
    similarity: float | None
    reasons: list[str]
    prompt_tokens: int
    saved_tokens: int
    latency_ms: float
    question: str


@dataclass(frozen=True)
class TrafficSummary:
    """Requests answered since start, by status, and what they saved."""

    by_status: dict[str, int]
    saved_tokens: int
    prompt_tokens: int
    pollution: int

    @property
    def requests(self) -> int:
        return sum(self.by_status.values())

    @property
    def pollution_rate(self) -> float:
        """Served hits the user then regenerated or corrected, over served hits."""
        hits = self.by_status["hit"]
        return self.pollution / hits if hits else 0.0


@dataclass
class _Bucket:
    """One slice of the timeline: requests by status and tokens (``counts``), lookup times."""

    counts: Counter[str] = field(default_factory=Counter)
    lookup: LogHistogram = field(default_factory=LogHistogram)


class Telemetry:
    """Counts of one gateway. Requests are counted on the event loop, ``polluted`` on the
    worker threads that read the feedback markers, and the admin API reads on its thread
    pool: one lock (uncontended, well under a microsecond) keeps counts whole and the
    timeline from changing size under a reader. ``clock`` puts events in their buckets."""

    def __init__(self, metrics: GatewayMetrics, *, recent: int = 200, bucket_s: float = 10.0,
                 buckets: int = 360, clock: Callable[[], float] = time.time) -> None:
        self.metrics = metrics
        self.bucket_s, self.buckets = bucket_s, buckets
        self.clock = clock
        self._recent: deque[DecisionRecord] = deque(maxlen=recent)
        self._timeline: dict[int, _Bucket] = {}
        self._tenants: dict[str | None, Counter[str]] = {}
        self._totals: Counter[str] = Counter()
        self._lock = threading.Lock()

    def _bucket(self) -> _Bucket:
        """The current bucket, made if new and the ones past the window dropped (lock held)."""
        now = int(self.clock() // self.bucket_s)
        bucket = self._timeline.get(now)
        if bucket is None:
            bucket = self._timeline[now] = _Bucket()
            for old in [b for b in self._timeline if b <= now - self.buckets]:
                del self._timeline[old]
        return bucket

    def lookup_done(self, zone: Zone, seconds: float) -> None:
        self.metrics.lookup_latency.observe(seconds)
        self.metrics.lookups.labels(zone.value).inc()
        with self._lock:
            self._totals["lookups"] += 1
            self._totals["lookup_hits"] += zone is Zone.HIT
            rate = self._totals["lookup_hits"] / self._totals["lookups"]
            self._bucket().lookup.add(seconds)
        self.metrics.hit_rate.set(rate)

    def polluted(self) -> None:
        """A served hit was regenerated or corrected."""
        self.metrics.pollution.inc()
        with self._lock:
            self._totals["pollution"] += 1

    def request_done(self, record: DecisionRecord, *, total_s: float, ttft_s: float | None) -> None:
        """One answered request: its metrics, totals, timeline bucket and decision record."""
        status = record.status
        self.metrics.requests.labels(status).inc()
        self.metrics.latency.labels(status).observe(total_s)
        if ttft_s is not None:
            self.metrics.ttft.labels(status).observe(ttft_s)
        with self._lock:
            for counts in (self._totals, self._bucket().counts):
                counts[status] += 1
                counts["saved_tokens"] += record.saved_tokens
                counts["prompt_tokens"] += record.prompt_tokens
            tenant: str | None = record.tenant
            if tenant not in self._tenants and len(self._tenants) >= MAX_TENANTS:
                tenant = None
            self._tenants.setdefault(tenant, Counter())[status] += 1
            self._recent.append(record)

    def summary(self) -> TrafficSummary:
        with self._lock:
            totals = Counter(self._totals)
        return TrafficSummary({k: totals[k] for k in STATUSES}, totals["saved_tokens"], totals["prompt_tokens"],
                              totals["pollution"])

    def timeline_json(self) -> list[dict[str, float | None]]:
        """One row per bucket, oldest first: its start time, requests by status, prompt and
        saved tokens, and its lookups: how many, p50 and p99 in ms (None without any)."""
        rows: list[dict[str, float | None]] = []
        with self._lock:
            for b, bucket in sorted(self._timeline.items()):
                counts, lookup = bucket.counts, bucket.lookup
                p50, p99 = lookup.quantile(0.5), lookup.quantile(0.99)
                rows.append({"t": b * self.bucket_s,
                             **{k: counts.get(k, 0) for k in (*STATUSES, "saved_tokens", "prompt_tokens")},
                             "lookups": lookup.count,
                             "lookup_p50_ms": None if p50 is None else round(p50 * 1000, 3),
                             "lookup_p99_ms": None if p99 is None else round(p99 * 1000, 3)})
        return rows

    def tenants_json(self) -> list[dict[str, Any]]:
        """Requests by status per tenant (``tenant/namespace`` where one is named), the busiest
        first; past MAX_TENANTS names the rest are one row with ``tenant`` None."""
        with self._lock:
            rows = [{"tenant": t, **{k: c.get(k, 0) for k in STATUSES}} for t, c in self._tenants.items()]
        return sorted(rows, key=lambda r: (r["tenant"] is None, -sum(r[k] for k in STATUSES), r["tenant"] or ""))

    # -- several workers: each one's counts as plain data, and a view that adds them up -------

    def export(self) -> dict[str, Any]:
        """Everything the admin API reads, as JSON-able data (``absorb`` adds it to another)."""
        with self._lock:
            return {"totals": dict(self._totals),
                    "timeline": {str(b): {"counts": dict(bucket.counts), "bins": dict(bucket.lookup.bins),
                                          "count": bucket.lookup.count} for b, bucket in self._timeline.items()},
                    "tenants": [[t, dict(c)] for t, c in self._tenants.items()],
                    "recent": [asdict(r) for r in self._recent]}

    def absorb(self, data: dict[str, Any]) -> None:
        """Add another worker's ``export``: totals, buckets and tenants summed, latency bins
        merged, recent decisions interleaved by time (the newest ``recent`` kept)."""
        with self._lock:
            self._totals.update(data["totals"])
            for b, bucket in data["timeline"].items():
                mine = self._timeline.setdefault(int(b), _Bucket())
                mine.counts.update(bucket["counts"])
                mine.lookup.bins.update({int(i): n for i, n in bucket["bins"].items()})
                mine.lookup.count += bucket["count"]
            for tenant, counts in data["tenants"]:
                self._tenants.setdefault(tenant, Counter()).update(counts)
            merged = sorted([*self._recent, *(DecisionRecord(**r) for r in data["recent"])], key=lambda r: r.at)
            self._recent.clear()
            self._recent.extend(merged[-(self._recent.maxlen or len(merged)):])

    def recent_json(self, limit: int = 50) -> list[dict[str, Any]]:
        """The last ``limit`` decisions, newest first."""
        with self._lock:
            recent = list(self._recent)[-limit:]
        return [asdict(r) for r in recent][::-1]
