"""Prometheus metrics of one gateway (its own registry, so several apps can live in one process)."""

from __future__ import annotations

from typing import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from smartcache.store.guard import StoreHealth

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


class _EntriesCollector:
    """Entries by state and the store's health, read from the cache at scrape time."""

    def __init__(self, by_state: Callable[[], Mapping[str, int]],
                 store_health: Callable[[], StoreHealth] | None,
                 learned: Callable[[], tuple[int, int, int]] | None = None) -> None:
        self._by_state = by_state
        self._store_health = store_health
        self._learned = learned

    def collect(self):
        family = GaugeMetricFamily("smartcache_entries", "Cache entries by state", labels=["state"])
        for state, n in self._by_state().items():
            family.add_metric([state], n)
        yield family
        if self._store_health is not None:
            health = self._store_health()
            yield GaugeMetricFamily("smartcache_store_up", "1 while the store answers; 0: degraded, the cache "
                                    "passes requests through", value=float(health.up))
            yield CounterMetricFamily("smartcache_store_failures", "Store calls that failed since start",
                                      value=health.failures)
        if self._learned is not None:
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
        r.register(_EntriesCollector(entries_by_state, store_health, learned))

    def render(self) -> bytes:
        return generate_latest(self.registry)
