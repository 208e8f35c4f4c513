"""Lookup latency beside one encoder forward, with and without the verifier (figures, not a test).

    .venv/bin/python scripts/bench_lookup.py [--n 300] [--entries 2000] [--turns 2,40] [--config FILE]

A session holds ``--entries`` cached turns (zh and en, after a history); each timed
lookup is a fresh paraphrase-like request in that session (never one of the stored requests
word for word: those take the exact path, timed apart), so the encoder memo never
answers it and the verifier weighs the top-k candidates. Prints p50 / p90 of: one
encoder forward of one sentence, lookup with the verifier, lookup with the rules only,
a stored request again word for word (the exact path), and the verifier's own share.

``--config`` configures the verifier's cache (a TOML, as ``load_config`` reads). ``--turns`` gives the histories' lengths, one run each in this process (default 2). In
a history of more than 2 turns one early aside differs between every entry and every
probe, so each candidate's history is aligned turn by turn, the worst case of
``decide.history`` (identical histories are settled by their hash); the last line is
each length's lookup p50 against the first one's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from smartcache import SmartCache, load_config
from smartcache.context import normalize_text, words_only
from smartcache.fingerprint import shared_encoder

ZH = ["周末去{c}玩{n}天，预算{m}元以内，帮我排个行程", "{c}有什么值得去的博物馆", "在{c}坐地铁怎么买票",
      "订单{o}的退款到哪一步了", "怎么把 {c} 的照片导出成 PDF"]
EN = ["Plan a {n}-day trip to {c} under ${m}", "What museums are worth visiting in {c}?",
      "How do I buy a metro ticket in {c}?", "Where is the refund for order {o}?", "How do I export photos of {c} to PDF?"]
CITIES = ["杭州", "苏州", "成都", "Kyoto", "Lisbon", "Porto", "Seoul", "Berlin", "Oslo", "Prague"]


def text(rng: random.Random, i: int) -> str:
    template = rng.choice(ZH + EN)
    return template.format(c=rng.choice(CITIES), n=rng.randint(2, 9), m=rng.randint(10, 99) * 100, o=10000 + i)


_TOPIC = [("我想咨询一下{c}的几个问题", "好的，请说。"), ("我下个月去{c}出差", "明白，需要我帮您安排什么？"),
          ("I'm planning things around {c}", "Happy to help with that."), ("Is {c} busy in spring?", "Spring is popular.")]
_ASIDE = "顺便说一下，我今天跑了{k}公里"


def make_history(turns: int, variant: int, rng: random.Random) -> list[dict[str, str]]:
    """``turns`` prior turns: a topic, then exchanges about it; from 4 turns on, the third turn
    is an aside whose number is ``variant`` (so two variants' histories differ there alone)."""
    out: list[dict[str, str]] = []
    local = random.Random(7)             # the same topic turns for every entry and probe
    while len(out) < turns:
        user, assistant = local.choice(_TOPIC)
        city = local.choice(CITIES)
        out += [{"role": "user", "content": user.format(c=city)}, {"role": "assistant", "content": assistant}]
    out = out[:turns]
    if turns >= 4:
        out[2] = {"role": "user", "content": _ASIDE.format(k=variant)}
    return out


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def run(args: argparse.Namespace, turns: int, encoder) -> dict[str, list[float]]:
    rng = random.Random(0)
    caches = {"verifier": SmartCache(load_config(args.config), encoder=encoder),
              "rules only": SmartCache(load_config(use_verifier=False), encoder=encoder)}
    asked: list[list[dict[str, str]]] = []
    for cache in caches.values():
        for i in range(args.entries):
            history = make_history(turns, 1 + i % 50, rng)
            messages = history + [{"role": "user", "content": text(rng, i)}]
            stored = cache.store(messages, f"answer {i}", session="s")
            if stored.stored:
                cache.promote(stored.cache_id)
                if cache is caches["verifier"]:
                    asked.append(messages)
    # Fresh requests only: a probe that repeats a stored one word for word is the exact path's.
    seen = {words_only(normalize_text(m[-1]["content"])) for m in asked}
    probes: list[str] = []
    while len(probes) < args.n:
        p = text(rng, args.entries + len(probes)) + rng.choice(["", "?", " 谢谢", " please"])
        if words_only(normalize_text(p)) not in seen:
            probes.append(p)
    probe_history = make_history(turns, 99, rng)
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
            cache.lookup(probe_history + [{"role": "user", "content": p}], session="s")
            times.append(time.perf_counter() - started)
        rows[f"lookup, {name}"] = times
    # A stored request again, word for word: the exact path (its key in the store, no model).
    repeats = [asked[rng.randrange(len(asked))] for _ in range(args.n)]
    exact = []
    for messages in repeats:
        started = time.perf_counter()
        found = caches["verifier"].lookup(messages, session="s")
        exact.append(time.perf_counter() - started)
        assert found.has_reason("exact_match"), found.reasons
    rows["lookup, exact repeat"] = exact
    verifier = caches["verifier"].decider.verifier
    x = np.random.default_rng(0).random((8, len(verifier.features))).astype(np.float32)
    walk = []
    for _ in range(200):
        started = time.perf_counter()
        verifier.predict(x)
        walk.append(time.perf_counter() - started)
    rows["verifier, 8 candidates"] = walk
    print(f"{turns} prior turns  {'':18} {'p50 ms':>8} {'p90 ms':>8}")
    for name, times in rows.items():
        print(f"{name:32} {pct(times, 50):8.2f} {pct(times, 90):8.2f}")
    ratio = statistics.median(rows["lookup, verifier"]) / statistics.median(forward)
    print(f"lookup p50 / encoder forward p50 = {ratio:.2f}x ({args.entries} entries in the session, top-k 8)")
    print(f"exact repeat p50 = {pct(exact, 50):.3f} ms, {statistics.median(exact) / statistics.median(forward):.2f}x "
          f"one encoder forward")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300, help="timed lookups")
    parser.add_argument("--entries", type=int, default=2000, help="entries in the session")
    parser.add_argument("--turns", default="2", help="prior turns of every history, comma-separated: one run each")
    parser.add_argument("--config", help="a TOML config for the verifier's cache")
    args = parser.parse_args()
    lengths = [int(t) for t in args.turns.split(",")]
    if any(t < 0 or t % 2 for t in lengths):
        parser.error("--turns takes even numbers of prior turns (user and assistant alternate)")
    encoder = shared_encoder("use-multilingual")
    p50 = {}
    for turns in lengths:
        p50[turns] = statistics.median(run(args, turns, encoder)["lookup, verifier"])
    if len(lengths) > 1:
        base = lengths[0]
        print("lookup p50 with the verifier against", base, "prior turns:",
              ", ".join(f"{t} turns {p50[t] / p50[base]:.2f}x" for t in lengths[1:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
