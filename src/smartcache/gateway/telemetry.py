"""What the gateway served, for the dashboard: totals, a timeline, the recent decisions.

Prometheus gets the same events (``GatewayMetrics``); this keeps the in-process view the
admin API reads, through the methods below only (a request's record, a summary, the
timeline rows, the recent decisions as JSON).

    telemetry.request_done(record, total_s=0.2, ttft_s=0.05)
    telemetry.summary().by_status     # {'hit': 1, 'half-hit': 0, 'miss': 0, 'bypass': 0}
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Any

from smartcache.decide import Zone
from smartcache.gateway.metrics import GatewayMetrics

STATUSES = ("hit", "half-hit", "miss", "bypass")


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


class Telemetry:
    """Counts of one gateway. Requests are counted on the event loop, ``polluted`` on the
    worker threads that read the feedback markers, and the admin API reads on its thread
    pool: one lock (uncontended, well under a microsecond) keeps counts whole and the
    timeline from changing size under a reader."""

    def __init__(self, metrics: GatewayMetrics, *, recent: int = 200, bucket_s: float = 10.0,
                 buckets: int = 360) -> None:
        self.metrics = metrics
        self.bucket_s, self.buckets = bucket_s, buckets
        self._recent: deque[DecisionRecord] = deque(maxlen=recent)
        self._timeline: dict[int, Counter[str]] = {}
        self._totals: Counter[str] = Counter()
        self._lock = threading.Lock()

    def lookup_done(self, zone: Zone, seconds: float) -> None:
        self.metrics.lookup_latency.observe(seconds)
        self.metrics.lookups.labels(zone.value).inc()
        with self._lock:
            self._totals["lookups"] += 1
            self._totals["lookup_hits"] += zone is Zone.HIT
            rate = self._totals["lookup_hits"] / self._totals["lookups"]
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
        bucket = int(time.time() // self.bucket_s)
        with self._lock:
            self._totals[status] += 1
            self._totals["saved_tokens"] += record.saved_tokens
            self._totals["prompt_tokens"] += record.prompt_tokens
            self._timeline.setdefault(bucket, Counter())[status] += 1
            self._timeline[bucket]["saved_tokens"] += record.saved_tokens
            for old in [b for b in self._timeline if b <= bucket - self.buckets]:
                del self._timeline[old]
            self._recent.append(record)

    def summary(self) -> TrafficSummary:
        with self._lock:
            totals = Counter(self._totals)
        return TrafficSummary({k: totals[k] for k in STATUSES}, totals["saved_tokens"], totals["prompt_tokens"],
                              totals["pollution"])

    def timeline_json(self) -> list[dict[str, float]]:
        """One row per bucket, oldest first: its start time, requests by status, saved tokens."""
        with self._lock:
            return [{"t": b * self.bucket_s, **{k: c.get(k, 0) for k in (*STATUSES, "saved_tokens")}}
                    for b, c in sorted(self._timeline.items())]

    def recent_json(self, limit: int = 50) -> list[dict[str, Any]]:
        """The last ``limit`` decisions, newest first."""
        with self._lock:
            recent = list(self._recent)[-limit:]
        return [asdict(r) for r in recent][::-1]
