"""Prometheus metrics of one gateway (its own registry, so several apps can live in one process).

With ``PROMETHEUS_MULTIPROC_DIR`` set (``serve --workers N`` sets it for its workers), the
counters and histograms are prometheus_client's multiprocess values, and ``render`` on any
worker sums every worker's: the totals of the whole gateway. What the cache counts per
process (store failures, labels learned, checks) is published by each worker into a
``sum`` gauge every tick (``publish``: at most a second behind) and rendered as the counter
it is; the hit rate is worked out from the summed lookups; entries by state and the
store's health are read from the shared store by the worker that answers.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from smartcache.store.guard import StoreHealth

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
# The per-process counts of the cache, as (name, help): published into `sum` gauges by each worker.
_PER_PROCESS = (
    ("smartcache_store_failures", "Store calls that failed since start"),
    ("smartcache_learned_observations", "Labels learned from traffic: forwarded requests' answers judged against "
                                        "their candidate, and checks"),
    ("smartcache_checks", "Served answers checked against the engine"),
    ("smartcache_checks_wrong", "Checked served answers the judge found different: the live error is this over "
                                "smartcache_checks"),
)


class _EntriesCollector:
    """Entries by state and the store's health, read from the cache at scrape time."""

    def __init__(self, by_state: Callable[[], Mapping[str, int]],
                 store_health: Callable[[], StoreHealth] | None,
                 learned: Callable[[], tuple[int, int, int]] | None = None, *, per_process: bool = True) -> None:
        self._by_state = by_state
        self._store_health = store_health
        self._learned = learned
        self._per_process = per_process     # False: the counts come summed from every worker instead

    def collect(self):
        family = GaugeMetricFamily("smartcache_entries", "Cache entries by state", labels=["state"])
        for state, n in self._by_state().items():
            family.add_metric([state], n)
        yield family
        if self._store_health is not None:
            health = self._store_health()
            yield GaugeMetricFamily("smartcache_store_up", "1 while the store answers; 0: degraded, the cache "
                                    "passes requests through", value=float(health.up))
            if self._per_process:
                yield CounterMetricFamily("smartcache_store_failures", "Store calls that failed since start",
                                          value=health.failures)
        if self._learned is not None and self._per_process:
            observations, checks, wrong = self._learned()
            yield CounterMetricFamily("smartcache_learned_observations", "Labels learned from traffic: forwarded "
                                      "requests' answers judged against their candidate, and checks",
                                      value=observations)
            yield CounterMetricFamily("smartcache_checks", "Served answers checked against the engine",
                                      value=checks)
            yield CounterMetricFamily("smartcache_checks_wrong", "Checked served answers the judge found "
                                      "different: the live error is this over smartcache_checks", value=wrong)


class GatewayMetrics:
    def __init__(self, entries_by_state: Callable[[], Mapping[str, int]],
                 store_health: Callable[[], StoreHealth] | None = None,
                 learned: Callable[[], tuple[int, int, int]] | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("smartcache_requests_total", "Chat requests by cache status",
                                ["status"], registry=r)
        self.lookups = Counter("smartcache_lookups_total", "Cache lookups by decision zone", ["zone"], registry=r)
        self.hit_rate = Gauge("smartcache_hit_rate", "Hits over lookups since start", registry=r)
        self.saved_prompt_tokens = Counter("smartcache_saved_prompt_tokens_total",
                                           "Prompt tokens not prefilled: served hits and reused KV prefixes",
                                           ["kind"], registry=r)
        self.pollution = Counter("smartcache_cache_pollution_total",
                                 "Served hits the user then regenerated or corrected", registry=r)
        self.latency = Histogram("smartcache_request_seconds", "Total request latency", ["status"],
                                 buckets=_LATENCY_BUCKETS, registry=r)
        self.ttft = Histogram("smartcache_time_to_first_token_seconds", "Time to the first content token",
                              ["status"], buckets=_LATENCY_BUCKETS, registry=r)
        self.lookup_latency = Histogram("smartcache_lookup_seconds", "Cache lookup latency",
                                        buckets=_LATENCY_BUCKETS, registry=r)
        self.stores = Counter("smartcache_stores_total", "Answers offered to the cache by outcome",
                              ["outcome"], registry=r)
        self.shadow = Counter("smartcache_shadow_total", "Background verifications by outcome",
                              ["outcome"], registry=r)
        self.engine_errors = Counter("smartcache_engine_errors_total", "Engine failures by code", ["code"],
                                     registry=r)
        self.multiprocess_dir = os.environ.get(MULTIPROC_ENV) or None
        self._store_health, self._learned = store_health, learned
        entries = _EntriesCollector(entries_by_state, store_health, learned, per_process=not self.multiprocess_dir)
        if self.multiprocess_dir is None:
            r.register(entries)
            self._published: dict[str, Gauge] = {}
            return
        # Not registered anywhere: each writes this process's file, which every worker's render sums.
        self._published = {name: Gauge(name, doc, multiprocess_mode="sum", registry=None) for name, doc in _PER_PROCESS}
        self._scrape = CollectorRegistry()
        self._scrape.register(_Summed(self.multiprocess_dir))
        self._scrape.register(entries)

    def publish(self) -> None:
        """Write this worker's per-process counts where every worker's render sums them (a no-op
        in a single process, whose render reads them directly)."""
        if not self._published:
            return
        values = [self._store_health().failures if self._store_health else 0,
                  *(self._learned() if self._learned else (0, 0, 0))]
        for (name, _), value in zip(_PER_PROCESS, values):
            self._published[name].set(value)

    def render(self) -> bytes:
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        self.publish()
        return generate_latest(self._scrape)


class _Summed:
    """Every worker's metrics summed (prometheus_client's multiprocess files), with the published
    per-process counts as counters and the hit rate worked out from the summed lookups."""

    def __init__(self, path: str) -> None:
        self._collector = MultiProcessCollector(None, path)

    def collect(self):
        docs = dict(_PER_PROCESS)
        lookups = hits = 0.0
        for family in self._collector.collect():
            if family.name == "smartcache_hit_rate":
                continue
            if family.name in docs:
                yield CounterMetricFamily(family.name, docs[family.name], value=sum(s.value for s in family.samples))
                continue
            if family.name == "smartcache_lookups":
                for sample in family.samples:
                    if sample.name.endswith("_total"):
                        lookups += sample.value
                        hits += sample.value if sample.labels.get("zone") == "hit" else 0.0
            yield family
        yield GaugeMetricFamily("smartcache_hit_rate", "Hits over lookups since start",
                                value=hits / lookups if lookups else 0.0)
