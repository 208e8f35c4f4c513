"""The HNSW graph of a large partition, and its file beside a persistent store.

A graph over a million rows takes minutes to build and a second to read back,
so a persistent store saves it (``<db>.hnsw/``) and reuses it on open, but only
when it provably still describes the rows it is loaded for. Each saved graph
has three files: ``<name>.usearch`` (the graph), ``<name>.rows.npz`` (the
partition's ids in label order, their labels, and a sketch of each row's
vector) and ``<name>.json`` (what it was built for and a CRC of the other two),
written last and atomically, so a save cut short leaves a mismatch, never a
plausible lie. On open a graph is trusted only if the CRCs hold, its key set is
the labels of exactly the partition's ids, and every row's vector projects onto
the same sketch; anything else is rebuilt, and the reason is logged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zlib
from pathlib import Path
from typing import NamedTuple

import numpy as np

log = logging.getLogger("smartcache.store")

_FORMAT = 1
_SKETCH_SEED = 0x5CA1E
_SKETCH_DIMS = 4      # four projections: a changed vector matches all four by chance ~never
_SKETCH_TOL = 1e-3    # the same f16 row projects identically; a paraphrase moves by ~1e-2


class Graph:
    """An HNSW graph over one partition's rows, keyed by stable integer labels."""

    def __init__(self, dim: int) -> None:
        # onnxruntime must be loaded before usearch: imported after it in the same process it
        # crashes the interpreter (onnxruntime 1.32, usearch 2.26). The encoders need it anyway.
        import onnxruntime  # noqa: F401
        from usearch.index import Index

        # i8: the graph only proposes candidates; they are rescored from the partition's own vectors.
        self.index = Index(ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=64,
                           expansion_search=256)

    def add(self, labels: np.ndarray, vectors: np.ndarray) -> None:
        self.index.add(labels.astype(np.uint64), vectors)

    def remove(self, label: int) -> None:
        self.index.remove(int(label))

    def candidates(self, vector: np.ndarray, count: int) -> np.ndarray:
        return np.asarray(self.index.search(vector, count).keys, dtype=np.int64)


class Loaded(NamedTuple):
    """A graph read back, with each row's label (aligned with the ids asked for); or why not."""

    graph: Graph | None
    labels: np.ndarray | None
    reason: str


def file_name(key: tuple[str, ...]) -> str:
    return hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:32]


def sketch(vectors: np.ndarray) -> np.ndarray:
    """A few fixed random projections of each row (chunked: no full f32 copy of an f16 matrix)."""
    dirs = np.random.default_rng(_SKETCH_SEED).standard_normal((vectors.shape[1], _SKETCH_DIMS)).astype(np.float32)
    out = np.empty((vectors.shape[0], _SKETCH_DIMS), np.float32)
    for start in range(0, vectors.shape[0], 65536):
        out[start:start + 65536] = vectors[start:start + 65536].astype(np.float32) @ dirs
    return out


def file_crc(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def save(folder: Path, key: tuple[str, ...], graph: Graph, ids: list[str], labels: np.ndarray,
         vectors: np.ndarray) -> None:
    """Write one partition's graph; the manifest goes last, so a torn save reads as stale."""
    folder.mkdir(parents=True, exist_ok=True)
    name = file_name(key)
    graph_path, rows_path, manifest = folder / f"{name}.usearch", folder / f"{name}.rows.npz", folder / f"{name}.json"
    manifest.unlink(missing_ok=True)     # from here until the rename the pair reads as missing
    graph.index.save(str(graph_path))
    with open(rows_path, "wb") as fh:
        np.savez(fh, ids=np.frombuffer(json.dumps(ids).encode(), np.uint8), labels=labels.astype(np.int64),
                 sketch=sketch(vectors))
    meta = {"format": _FORMAT, "key": list(key), "dim": int(vectors.shape[1]), "count": len(ids),
            "graph_crc": file_crc(graph_path), "rows_crc": file_crc(rows_path)}
    tmp = manifest.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(tmp, manifest)


def load(folder: Path, key: tuple[str, ...], ids: list[str], vectors: np.ndarray) -> Loaded:
    """The saved graph of this partition if it matches ``ids`` and ``vectors`` row for row."""
    name = file_name(key)
    graph_path, rows_path, manifest = folder / f"{name}.usearch", folder / f"{name}.rows.npz", folder / f"{name}.json"
    if not manifest.exists():
        return Loaded(None, None, "no saved graph")
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
        if meta.get("format") != _FORMAT or meta.get("key") != list(key) or meta.get("dim") != vectors.shape[1]:
            return Loaded(None, None, "saved for another partition, format or dimension")
        if meta["count"] != len(ids):
            return Loaded(None, None, f"stale: saved with {meta['count']} rows, the file has {len(ids)}")
        if file_crc(graph_path) != meta["graph_crc"] or file_crc(rows_path) != meta["rows_crc"]:
            return Loaded(None, None, "corrupt: checksum mismatch (truncated or overwritten)")
        with np.load(rows_path) as rows:
            saved_ids = json.loads(rows["ids"].tobytes())
            saved_labels, saved_sketch = rows["labels"], rows["sketch"]
        label_of = dict(zip(saved_ids, saved_labels.tolist()))
        try:
            labels = np.fromiter((label_of[i] for i in ids), np.int64, len(ids))
        except KeyError as missing:
            return Loaded(None, None, f"stale: row {missing} is not in the saved graph")
        # Same ids, but was any row's vector replaced after the save? Compare in saved order.
        order = np.argsort(labels)
        if not np.allclose(sketch(vectors)[order], saved_sketch[np.argsort(saved_labels)], atol=_SKETCH_TOL):
            return Loaded(None, None, "stale: a row's vector changed after the save")
        graph = Graph(int(vectors.shape[1]))
        graph.index.load(str(graph_path))
        keys = np.sort(np.asarray(graph.index.keys, dtype=np.int64))
        if keys.shape != labels.shape or not np.array_equal(keys, labels[order]):
            return Loaded(None, None, "corrupt: the graph's keys are not the rows' labels")
        return Loaded(graph, labels, f"loaded {len(ids):,} rows")
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, zlib.error) as exc:
        return Loaded(None, None, f"corrupt: {type(exc).__name__}: {exc}")


def forget(folder: Path, keep: set[str]) -> None:
    """Remove saved graphs of partitions that no longer have one (deleted, or shrunk below the size)."""
    if not folder.is_dir():
        return
    for path in folder.iterdir():
        if path.name.split(".", 1)[0] not in keep:
            path.unlink(missing_ok=True)
