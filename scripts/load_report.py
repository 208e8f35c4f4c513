"""Figures of scripts/load_test.py: client samples and two /metrics scrapes -> one round's summary.

    percentiles([0.010, 0.012, 0.030])                       -> {"n": 3, "p50_ms": 12.0, "p99_ms": 30.0}
    estimate_quantiles({0.001: 0, 0.0025: 8, 0.005: 10, inf: 10}, (0.5,))   -> {0.5: 0.00194} (seconds)

Histogram quantiles are read as Prometheus' histogram_quantile reads them: linear
inside the bucket that holds the rank, so they are only as fine as the buckets
(gateway/metrics.py: 1, 2.5, 5, 10, 25 ms ...).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable, Mapping

from prometheus_client.parser import text_string_to_metric_families

Key = tuple[str, tuple[tuple[str, str], ...]]
FORWARDED = ("miss", "half-hit", "bypass")
# stores_total outcomes of an answer that finished normally: written, or refused with a reason.
ACCOUNTED = ("stored", "refused", "not_cacheable", "no_session")


def metric_sums(text: str) -> dict[Key, float]:
    """Every sample of a Prometheus text page, keyed by (name, sorted labels)."""
    out: dict[Key, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.endswith("_created"):
                out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def _delta(before: Mapping[Key, float], after: Mapping[Key, float]) -> dict[Key, float]:
    return {k: v - before.get(k, 0.0) for k, v in after.items()}


def by_label(d: Mapping[Key, float], name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = Counter()
    for (n, labels), v in d.items():
        if n == name:
            out[dict(labels).get(label, "")] += v
    return dict(out)


def _buckets(d: Mapping[Key, float], name: str, **match: str) -> dict[float, float]:
    out: dict[float, float] = Counter()
    for (n, labels), v in d.items():
        lab = dict(labels)
        if n == name + "_bucket" and all(lab.get(k) == want for k, want in match.items()):
            out[float(lab["le"])] += v
    return dict(sorted(out.items()))


def estimate_quantiles(buckets: Mapping[float, float], qs: Iterable[float]) -> dict[float, float | None]:
    """Quantiles (seconds) from cumulative bucket counts {upper bound: count}."""
    bounds = sorted(buckets)
    total = buckets[bounds[-1]] if bounds else 0.0
    out: dict[float, float | None] = {}
    for q in qs:
        if total <= 0:
            out[q] = None
            continue
        rank, lower, below = q * total, 0.0, 0.0
        for upper in bounds:
            count = buckets[upper]
            if count >= rank:
                if math.isinf(upper):      # past the last finite bound: all that can be said
                    out[q] = lower
                else:
                    inside = count - below
                    out[q] = lower + (upper - lower) * ((rank - below) / inside if inside else 1.0)
                break
            lower, below = upper, count
    return out


def percentiles(values: list[float], scale: float = 1000.0) -> dict[str, float]:
    """Nearest-rank p50 / p99 (scaled: seconds -> ms by default)."""
    if not values:
        return {"n": 0}
    v = sorted(values)
    rank = lambda q: v[max(0, math.ceil(q * len(v)) - 1)]      # noqa: E731
    return {"n": len(v), "p50_ms": round(rank(0.5) * scale, 2), "p99_ms": round(rank(0.99) * scale, 2)}


def _hist(d: Mapping[Key, float], name: str, **match: str) -> dict[str, float]:
    buckets = _buckets(d, name, **match)
    q = estimate_quantiles(buckets, (0.5, 0.99))
    n = max(buckets.values(), default=0.0)
    return {"n": int(n), **{f"p{int(k * 100)}_ms": round(v * 1000, 2) for k, v in q.items() if v is not None}}


def summarise(samples: list[Any], elapsed: float, before: Mapping[Key, float], after: Mapping[Key, float],
              store_errors_expected: bool = False) -> dict[str, Any]:
    """One round's figures. ``store_errors_expected`` (a fault run): a write the store refused
    (outcome ``store_error``) is an answer delivered and not cached, counted apart, not lost."""
    d = _delta(before, after)
    ok = [s for s in samples if s.error is None]
    stores = {k: int(v) for k, v in by_label(d, "smartcache_stores_total", "outcome").items() if v}
    forwarded = [s for s in ok if s.status in FORWARDED]
    stop = sum(1 for s in forwarded if s.finish == "stop")
    accounted = sum(stores.get(k, 0) for k in ACCOUNTED + (("store_error",) if store_errors_expected else ()))
    other = sum(v for k, v in stores.items() if k.startswith("finish_"))
    timed = [s.lookup_ms / 1000 for s in ok if s.lookup_ms is not None]
    matrix = {kind: dict(Counter(s.status for s in samples if s.kind == kind)) for kind in ("miss", "half-hit", "hit")}
    attempts = [s for s in samples if s.kind == "hit"]
    surprises = [{"intended": s.kind, "status": s.status, "question": s.question, "reasons": s.reasons}
                 for s in samples if s.error is None and s.status != s.kind]
    entries = sum(by_label(d, "smartcache_entries", "state").values())
    return {
        "requests": len(samples), "seconds": round(elapsed, 2), "throughput_rps": round(len(samples) / elapsed, 1),
        "errors": len(samples) - len(ok), "error_examples": sorted({s.error for s in samples if s.error})[:5],
        "streamed": sum(s.stream for s in samples), "regenerates": sum(s.regenerate for s in samples),
        "mix": dict(Counter(s.status for s in samples)), "intended_vs_status": matrix,
        "surprise_examples": [dict(t) for t in dict.fromkeys(tuple(x.items()) for x in surprises)][:12],
        "paraphrases_that_hit": round(sum(s.status == "hit" for s in attempts) / len(attempts), 3) if attempts else None,
        "latency_by_status": {st: percentiles([s.seconds for s in ok if s.status == st])
                              for st in ("hit", "half-hit", "miss", "bypass") if any(s.status == st for s in ok)},
        "latency_all": percentiles([s.seconds for s in ok]),
        "slower_than_2s": sum(1 for s in samples if s.seconds > 2.0),     # beside a fault run's, a baseline
        "hit_path_server": _hist(d, "smartcache_request_seconds", status="hit"),
        "lookup_server_timing": percentiles(timed) if timed else None,
        "lookup_histogram": _hist(d, "smartcache_lookup_seconds"),
        "forwarded_answers": len(forwarded), "forwarded_finished_stop": stop, "stores_by_outcome": stores,
        "store_errors": stores.get("store_error", 0),
        "lost_writes": (stop - accounted) + (len(forwarded) - stop - other),
        "entries_added": int(entries), "lookups": int(sum(by_label(d, "smartcache_lookups_total", "zone").values())),
    }


def _ms(p: Mapping[str, float] | None) -> str:
    if not p or "p50_ms" not in p:
        return "–"
    return f"{p['p50_ms']:.1f} / {p['p99_ms']:.1f} (n={p['n']})"


def format_report(report: Mapping[str, Any]) -> str:
    rss = report["rss_mb"]
    lines = [f"machine: {report['cpus']} CPUs, load average {report['loadavg_before'][0]} before, "
             f"{report['loadavg_after'][0]} after (other work shares the cores)",
             f"load test {report['label']}: {report['engine']}, {report['store']} store, {report['sessions']} sessions "
             f"x {report['duration_s']:.0f} s x {report['rounds_run']} rounds, seed {report['seed']}",
             f"paraphrase pairs that hit at start-up: {report['pairs_hit']} of {report['pairs_checked']}", ""]
    for i, r in enumerate(report["rounds"], 1):
        mix = ", ".join(f"{k} {v} ({100 * v / r['requests']:.1f} %)" for k, v in sorted(r["mix"].items()))
        lines += [f"round {i}: {r['requests']} requests in {r['seconds']} s = {r['throughput_rps']} req/s; "
                  f"errors {r['errors']}; streamed {r['streamed']}; regenerates {r['regenerates']}; "
                  f"over 2 s {r.get('slower_than_2s')}",
                  f"  outcome mix: {mix}",
                  "  intended -> status: " + "; ".join(f"{k}: {v}" for k, v in r["intended_vs_status"].items()),
                  f"  paraphrases that hit under load: {r['paraphrases_that_hit']}",
                  "  | p50 / p99 ms | " + " | ".join(r["latency_by_status"]) + " | all |",
                  "  | whole request (client) | " + " | ".join(_ms(p) for p in r["latency_by_status"].values())
                  + f" | {_ms(r['latency_all'])} |",
                  f"  hit path (server, smartcache_request_seconds{{status=hit}}): {_ms(r['hit_path_server'])}",
                  f"  lookup (server-timing): {_ms(r['lookup_server_timing']) if r['lookup_server_timing'] else 'not sent'}"
                  f"; lookup (smartcache_lookup_seconds buckets): {_ms(r['lookup_histogram'])}",
                  f"  lost writes: {r['forwarded_answers']} forwarded answers ({r['forwarded_finished_stop']} finished "
                  f"with stop) vs stores_total {r['stores_by_outcome']} -> difference {r['lost_writes']}; "
                  f"entries added {r['entries_added']}",
                  f"  gateway RSS: {rss[i - 1]} MiB before -> {rss[i]} MiB after (+{rss[i] - rss[i - 1]:.1f})"]
        for x in r["surprise_examples"][:4]:
            lines.append(f"  meant {x['intended']}, got {x['status']}: {x['question'][:60]!r} ({x['reasons']})")
        if r.get("fault"):
            from load_fault import format_fault
            lines += format_fault(r["fault"], report.get("fault") or "kill")
        if r["errors"]:
            lines.append("  error examples: " + "; ".join(r["error_examples"]))
        lines.append("")
    return "\n".join(lines)
