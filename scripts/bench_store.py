"""Memory, restart time and lookup latency of the stores with real multi-turn entries.

    .venv/bin/python scripts/bench_store.py [--sizes 100000,1000000] [--queries 300] [--keep DIR]

Every entry sits in one tenant's global pool (the worst case: every lookup
searches the whole pool, and the pool gets an HNSW graph) with the real
encoder's dimension (512). Entries are what a multi-turn conversation stores:
a signature with entities, change flags, context entities, kept history turns
and a history hash; an answer of a few hundred characters of Chinese and
English; a turn and a context vector. Vectors are clustered, as text
embeddings are; queries are near-duplicates of stored turns (what a lookup
must find).

For each size it prints, per row (each open in a fresh process):
- ``memory``: a MemoryStore filled and its graph built once; RSS the process
  grew by per entry (entries, vectors, graph: everything), search p50 / p99,
  recall@8 and top-1 against an exact numpy scan of the float32 vectors;
- ``sqlite rows only`` / ``sqlite cold`` / ``sqlite snapshot`` / ``sqlite saved graph``:
  the same entries in a SQLite file, opened with no graph at all (the rows' share
  of an open), then with neither a snapshot nor a saved graph (rows read, graph
  rebuilt, both saved), then from the index snapshot (cold rows), then from the
  rows with the saved graph (the snapshot put aside); open time and its parts, RSS
  per entry after open (and its anonymous part: what the process itself holds),
  search p50 / p99.
It also prints the largest cosine error half precision causes: a context vector
against itself, and a query's cosine to stored vectors. Figures, not
assertions: the machine is shared.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from smartcache.fingerprint import Signature  # noqa: E402
from smartcache.fingerprint.tags import ChangeFlag  # noqa: E402
from smartcache.store import Answer, Entry, EntryId, EntryState, MemoryStore, Scope, SearchFilter  # noqa: E402
from smartcache.store import VersionKeyHash  # noqa: E402
from smartcache.store.sqlite import SqliteStore  # noqa: E402

DIM = 512
CHUNK = 20_000
VERSION = VersionKeyHash(hashlib.sha256(b"model|tokenizer|system|kb").hexdigest())
ZH = ["第一天上午去西湖，沿苏堤步行到花港观鱼，中午在湖边吃杭帮菜。", "下午去灵隐寺和飞来峰，门票四十五元，建议提前预约。",
      "第二天早上坐地铁到河坊街，逛南宋御街，晚上看宋城千古情。", "如果预算在三千元以内，可以选西湖附近的经济型酒店。",
      "订单发票可以在订单详情页申请，一般三个工作日内开出。", "退款会原路返回，信用卡通常需要五到七个工作日到账。"]
EN = ["Day one covers the lake walk and a temple visit in the afternoon.", "Book the evening show a week ahead;",
      "tickets sell out on weekends.", "A budget hotel near the lake keeps the total under the limit.",
      "Invoices are issued from the order page within three working days."]
FLAGS = [frozenset(), frozenset({ChangeFlag.ADDITION}), frozenset({ChangeFlag.REPLACEMENT, ChangeFlag.NEGATION})]


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20


def anon_mb() -> float:
    """Resident anonymous memory: the process's own, not pages of files it mapped."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssAnon:")) / 1024


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def vectors(start: int, n: int, salt: int) -> np.ndarray:
    """Rows ``start..start+n`` of a clustered set, the same on every call (any process)."""
    centres = np.random.default_rng(salt).standard_normal((2000, DIM)).astype(np.float32)
    rng = np.random.default_rng([salt, start])
    out = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM)).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def entry(i: int, turn: np.ndarray, context: np.ndarray) -> Entry:
    history = sha(f"history {i // 3}")       # three turns of a conversation share a history
    signature = Signature(
        text=f"周末去杭州玩{i % 7 + 1}天，预算{i % 50 * 100}元，帮我排个行程 order {i}", domain="travel", skeleton="plan",
        entities=(f"num:{i % 7 + 1}", f"money:{i % 50 * 100}cny", f"id:order-{i}"), flags=FLAGS[i % 3],
        negations=i % 2, sides=(1,) if i % 2 else (), context_entities=frozenset({"name:杭州", f"num:{i % 5}",
                                                                                    f"date:2025-05-{i % 28 + 1:02d}"}),
        history_hash=history, has_context=True,
        history_turns=(f"user: 我想五一去杭州玩 {i % 11}", "assistant: 好的，几天？预算多少？"),
        actions=("plan",), nouns=("行程", "预算"))
    text = "".join(ZH[(i + k) % len(ZH)] for k in range(4)) + "\n" + " ".join(EN[(i + k) % len(EN)] for k in range(3))
    return Entry(cache_id=EntryId(sha(f"id {i}")[:32]), scope=Scope.GLOBAL, tenant="tenant-a", session_id="",
                 version_key=VersionKeyHash("".join(VERSION)), context_fingerprint=sha(f"ctx {i}"),
                 signature=signature, turn_vector=turn, context_vector=context, prefix_hash=history,
                 conversation_hash=sha(f"conversation {i}"), answer=Answer(text, (f"num:{i % 7 + 1}", "name:西湖")),
                 state=EntryState.READY, created_at=1.7e9 + i, expires_at=float("inf"), domain="travel",
                 prompt_tokens=200 + i % 300)


def entries(n: int):
    for start in range(0, n, CHUNK):
        count = min(CHUNK, n - start)
        turns, contexts = vectors(start, count, 1), vectors(start, count, 2)
        for j in range(count):
            yield entry(start + j, turns[j], contexts[j])


def queries(n: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Near-duplicates of stored turns, and their exact top-8 rows by a float32 scan."""
    rng = np.random.default_rng(7)
    picks = np.sort(rng.integers(0, n, count))
    q = np.concatenate([vectors(s, min(CHUNK, n - s), 1)[picks[(picks >= s) & (picks < s + CHUNK)] - s]
                        for s in range(0, n, CHUNK)])
    q += 0.02 * rng.standard_normal(q.shape).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = np.concatenate([q @ vectors(s, min(CHUNK, n - s), 1).T for s in range(0, n, CHUNK)], axis=1)
    top = np.argpartition(-scores, 8, axis=1)[:, :8]       # no full sort of a million scores a query
    return q, np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, axis=1), axis=1), axis=1)


def timed(store, q: np.ndarray, truth: np.ndarray | None) -> tuple[float, float, float, float]:
    flt = SearchFilter(tenant="tenant-a", version_key=VERSION, session_id=None, now=1.0)
    ids = {sha(f"id {i}")[:32]: i for i in np.unique(truth)} if truth is not None else {}
    times, found, top1 = [], 0, 0
    for row, vec in enumerate(q):
        start = time.perf_counter()
        results = store.search(flt, vec, 8)
        times.append((time.perf_counter() - start) * 1000)
        if truth is not None:
            got = {ids.get(r.entry.cache_id, -1) for r in results}
            found += len(got & set(truth[row].tolist()))
            top1 += int(truth[row][0]) in got
    recall = found / truth.size if truth is not None else float("nan")
    return float(np.percentile(times, 50)), float(np.percentile(times, 99)), recall, top1 / len(q)


def half_precision_error(n: int) -> tuple[float, float]:
    """Largest 1 - cos(c, f16(c)) over stored context vectors, and largest |q.c - q.f16(c)|."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((64, DIM)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    self_err = pair_err = 0.0
    for start in range(0, n, CHUNK):
        c = vectors(start, min(CHUNK, n - start), 2)
        h = c.astype(np.float16).astype(np.float32)
        self_err = max(self_err, float(np.max(np.abs(1 - np.sum(c * h, axis=1) / np.linalg.norm(h, axis=1)))))
        pair_err = max(pair_err, float(np.max(np.abs(q @ c.T - q @ h.T))))
    return self_err, pair_err


def open_child(path: str, n: int, count: int, ann_above: int) -> dict:
    """Run in a fresh process: open the file, time it, measure RSS and lookups."""
    import smartcache.store.memory as memory
    import smartcache.store.sqlite as sqlite

    parts: dict[str, float] = {}

    def clock(owner, name, label):
        inner = getattr(owner, name)

        def wrapped(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                parts[label] = parts.get(label, 0.0) + time.perf_counter() - start
        setattr(owner, name, wrapped)

    clock(sqlite.SqliteStore, "_restore", "snapshot")
    clock(sqlite.SqliteStore, "_load", "read rows")
    clock(memory.MemoryStore, "restore", "index rows")
    clock(memory.MemoryStore, "adopt_graphs", "graph")
    clock(sqlite.SqliteStore, "save_graphs", "save graph")
    clock(sqlite.SqliteStore, "save_snapshot", "save snapshot")
    q, truth = queries(n, count)
    gc.collect()
    before, before_anon = rss_mb(), anon_mb()
    start = time.perf_counter()
    store = SqliteStore(path, DIM, ann_above=ann_above)
    opened = time.perf_counter() - start
    grown = (rss_mb() - before) / n * 1024
    anon = (anon_mb() - before_anon) / n * 1024
    p50, p99, recall, top1 = timed(store, q, truth)
    status = next(iter(store.graph_status.values()), "no graph")
    if "read rows" in parts:
        parts["read rows"] -= parts.get("index rows", 0.0)
    # A save as the gateway makes every few minutes: its whole time, and the part with writes held off.
    import smartcache.store.snapshot as snapshot
    clock(snapshot.Saving, "write_live", "held")
    clock(sqlite.SqliteStore, "_capture", "held")
    clock(sqlite.SqliteStore, "_cool", "held")
    parts_before = dict(parts)
    store._snapshot_seq = None      # saved again even though nothing changed
    start = time.perf_counter()
    store.save_snapshot()
    save_s = time.perf_counter() - start
    held = parts.get("held", 0.0)
    parts = {k: v for k, v in parts_before.items() if k != "held"}
    store._closing.set()            # no save at exit: the next row opens the files as they are
    return {"open_s": opened, "kb": grown, "anon_kb": anon, "p50": p50, "p99": p99, "recall": recall,
            "top1": top1, "status": status, "snapshot": store.snapshot_status, "parts": parts,
            "save_s": save_s, "held_s": held}


def bench(n: int, count: int, folder: Path, *, memory: bool, reuse_graph: bool) -> None:
    if memory:
        bench_memory(n, count)
    bench_sqlite(n, count, folder, reuse_graph)


def bench_memory(n: int, count: int) -> None:
    q, truth = queries(n, count)
    gc.collect()
    before = rss_mb()
    start = time.perf_counter()
    store = MemoryStore(DIM, ann_above=10**12)
    for e in entries(n):
        store.put(e)
    part = next(iter(store._partitions.values()))
    part.build_graph()                      # once, as a restart without a saved graph does
    store.ann_above = 50_000
    build = time.perf_counter() - start
    grown = (rss_mb() - before) / n * 1024
    p50, p99, recall, top1 = timed(store, q, truth)
    print(f"| {n:,} | memory | build {build:.0f} s | {grown:.2f} | {p50:.2f} | {p99:.2f} | {recall:.3f} | "
          f"{top1:.3f} | – | – |", flush=True)


def bench_sqlite(n: int, count: int, folder: Path, reuse_graph: bool) -> None:
    path = folder / f"bench-{n}.db"
    if not path.exists():
        start = time.perf_counter()
        writer = SqliteStore(path, DIM, ann_above=10**12)
        writer._db.execute("BEGIN")            # one transaction: the figure is about reading
        for e in entries(n):
            writer._write(e)
        writer._db.execute("COMMIT")
        writer.close()
        print(f"(wrote {n:,} rows to SQLite in {time.perf_counter() - start:.0f} s, "
              f"{path.stat().st_size / n:.0f} bytes a row)", flush=True)
    graph_dir = path.with_name(path.name + ".hnsw")
    index_dir = path.with_name(path.name + ".index")
    aside = path.with_name(path.name + ".index-aside")
    labels = ["sqlite rows only", "sqlite cold", "sqlite snapshot", "sqlite saved graph"]
    if reuse_graph and graph_dir.is_dir() and any(graph_dir.glob("*.json")) and index_dir.is_dir():
        labels = labels[2:]
    if len(labels) == 4:
        shutil.rmtree(graph_dir, ignore_errors=True)
    for label in labels:
        if label in ("sqlite rows only", "sqlite cold"):
            shutil.rmtree(index_dir, ignore_errors=True)
        if label == "sqlite saved graph":
            index_dir.rename(aside)
        # rows only: no pool gets a graph (ann_above above the size): the open time of the rows alone
        ann_above = 10**12 if label == "sqlite rows only" else 50_000
        out = subprocess.run([sys.executable, __file__, "--child", str(path), "--sizes", str(n), "--queries",
                              str(count), "--ann-above", str(ann_above)], capture_output=True, text=True,
                             check=True)
        if label == "sqlite saved graph":
            shutil.rmtree(index_dir, ignore_errors=True)
            aside.rename(index_dir)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        parts = ", ".join(f"{k} {v:.1f}" for k, v in r["parts"].items())
        print(f"| {n:,} | {label} | open {r['open_s']:.1f} s ({parts}) | {r['kb']:.2f} ({r['anon_kb']:.2f}) | "
              f"{r['p50']:.2f} | {r['p99']:.2f} | {r['recall']:.3f} | {r['top1']:.3f} | "
              f"{r['status'].split(':')[0]}; {r['snapshot'].split(':')[0]} | {r['save_s']:.1f} ({r['held_s']:.1f}) |",
              flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--memory-sizes", default="100000",
                        help="sizes that also get the in-memory row (its graph build takes long at 1M)")
    parser.add_argument("--keep", type=Path, default=None, help="keep the SQLite files here (reused if present)")
    parser.add_argument("--reuse-graph", action="store_true",
                        help="with --keep: skip the cold open when a saved graph is there")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--ann-above", type=int, default=50_000, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(open_child(args.child, int(args.sizes), args.queries, args.ann_above)))
        return 0
    print("| entries | store | build / open | KB/entry: RSS (anonymous) | search p50 ms | search p99 ms | recall@8 "
          "| top-1 | graph; index | a save s (writes held off) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in (int(s) for s in args.sizes.split(",")):
            bench(n, args.queries, folder, memory=str(n) in args.memory_sizes.split(","),
                  reuse_graph=args.reuse_graph)
            self_err, pair_err = half_precision_error(n)
            print(f"half precision at {n:,}: max 1 - cos(c, f16(c)) = {self_err:.2e}, "
                  f"max |q.c - q.f16(c)| = {pair_err:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
