"""Lookup latency beside one encoder forward, with and without the verifier (figures, not a test).

    .venv/bin/python scripts/bench_lookup.py [--n 300] [--entries 2000]

A session holds ``--entries`` cached turns (zh and en, with a short history); each
timed lookup is a fresh paraphrase-like request in that session, so the encoder
memo never answers it and the verifier weighs the top-k candidates. Prints p50 /
p90 of: one encoder forward of one sentence, lookup with the verifier, lookup
with the rules only, and the verifier's own share.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from smartcache import SmartCache, load_config
from smartcache.fingerprint import shared_encoder

ZH = ["周末去{c}玩{n}天，预算{m}元以内，帮我排个行程", "{c}有什么值得去的博物馆", "在{c}坐地铁怎么买票",
      "订单{o}的退款到哪一步了", "怎么把 {c} 的照片导出成 PDF"]
EN = ["Plan a {n}-day trip to {c} under ${m}", "What museums are worth visiting in {c}?",
      "How do I buy a metro ticket in {c}?", "Where is the refund for order {o}?", "How do I export photos of {c} to PDF?"]
CITIES = ["杭州", "苏州", "成都", "Kyoto", "Lisbon", "Porto", "Seoul", "Berlin", "Oslo", "Prague"]


def text(rng: random.Random, i: int) -> str:
    template = rng.choice(ZH + EN)
    return template.format(c=rng.choice(CITIES), n=rng.randint(2, 9), m=rng.randint(10, 99) * 100, o=10000 + i)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300, help="timed lookups")
    parser.add_argument("--entries", type=int, default=2000, help="entries in the session")
    args = parser.parse_args()
    rng = random.Random(0)
    encoder = shared_encoder("use-multilingual")
    history = [{"role": "user", "content": "你好，我想咨询几个问题"}, {"role": "assistant", "content": "好的，请说。"}]
    caches = {"verifier": SmartCache(load_config(), encoder=encoder),
              "rules only": SmartCache(load_config(use_verifier=False), encoder=encoder)}
    for cache in caches.values():
        for i in range(args.entries):
            stored = cache.store(history + [{"role": "user", "content": text(rng, i)}], f"answer {i}", session="s")
            if stored.stored:
                cache.promote(stored.cache_id)
    probes = [text(rng, args.entries + i) + rng.choice(["", "?", " 谢谢", " please"]) for i in range(args.n)]
    forward = []
    for p in probes[:100]:
        started = time.perf_counter()
        encoder.encode([p + " x"])           # not memoised: the raw encoder
        forward.append(time.perf_counter() - started)
    rows = {"encoder forward (1 sentence)": forward}
    for name, cache in caches.items():
        times = []
        for p in probes:
            started = time.perf_counter()
            cache.lookup(history + [{"role": "user", "content": p}], session="s")
            times.append(time.perf_counter() - started)
        rows[f"lookup, {name}"] = times
    verifier = caches["verifier"].decider.verifier
    x = np.random.default_rng(0).random((8, len(verifier.features))).astype(np.float32)
    walk = []
    for _ in range(200):
        started = time.perf_counter()
        verifier.predict(x)
        walk.append(time.perf_counter() - started)
    rows["verifier, 8 candidates"] = walk
    print(f"{'':32} {'p50 ms':>8} {'p90 ms':>8}")
    for name, times in rows.items():
        print(f"{name:32} {pct(times, 50):8.2f} {pct(times, 90):8.2f}")
    ratio = statistics.median(rows["lookup, verifier"]) / statistics.median(forward)
    print(f"lookup p50 / encoder forward p50 = {ratio:.2f}x ({args.entries} entries in the session, top-k 8)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
