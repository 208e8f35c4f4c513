"""An index snapshot: what a persistent store's index holds, as columns in files.

Reading a million rows back from SQLite takes a minute (their JSON, an entry object each,
five dicts); the index only needs a few columns of each. A snapshot holds them, pool
after pool: ids, labels, turn vectors (half precision in pools that have a graph, as
they are held), the search columns (servable, frozen, expiry, feedback, domain), what
usage and the lifecycle read (state, created, last hit, hits), and stable hashes of each
row's conversation, session and request key; beside them each pool's HNSW graph. A
store restores them as cold rows (``cold``), and the entries stay in the file until
asked for.

A snapshot says where in the file's change log it was taken (``seq``) and which file
it belongs to (``file_id``, a random token the file keeps in its meta table). A store
uses it only when both hold and the log still has every write since; it then follows
those writes as it would another process's. Files of one snapshot are written into a
folder of their own, each with a CRC, and ``current.json`` names the folder last
(atomically): a save cut short, or a reader racing a save, reads the previous snapshot
or none, never half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from smartcache.store.graph import Graph, file_crc

FORMAT = 1
CURRENT = "current.json"
# One array a column, holding every row of every pool (the vectors are two matrices beside them).
ROW_COLUMNS = {
    "labels": np.int64, "servable": np.bool_, "frozen": np.bool_, "expires": np.float64, "feedback": np.float32,
    "domain": np.int32, "states": np.uint8, "created": np.float64, "last_hit": np.float64, "hits": np.int64,
    "conversation": np.int64, "session": np.int64, "request": np.int64,
}


@dataclass
class Pool:
    """One partition's rows: ``count`` rows from ``start`` in the row columns, its turn vectors
    (half precision when it has a graph; in the files, one matrix of each precision holds every
    pool's, in pool order) and its graph."""

    key: tuple[str, str, str]
    start: int
    count: int
    vectors: np.ndarray
    graph: Graph | None = None


@dataclass
class Snapshot:
    seq: int
    file_id: str
    dim: int
    ids: list[str]
    domains: list[str]                 # the domain column's values index this
    columns: dict[str, np.ndarray]     # ROW_COLUMNS
    pools: list[Pool]
    unindexed: int                     # the file's rows the index did not hold (unreadable) when taken


class Saving:
    """One snapshot being written, in two steps: ``write_live`` writes what the index changes in
    place (the vector matrices, the graphs) and must run while every writer is held off;
    ``finish`` writes the rest (columns already copied, ids), checks every file and makes the
    snapshot current, and may run after the writers go on. Processes sharing the file save one
    at a time (a lock file, taken first): one's clean-up never removes the snapshot another is
    writing. Used as a context manager; a save that fails leaves no file of its own behind."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = open(folder / ".lock", "a+")
        self.name = f"gen-{uuid.uuid4().hex}"
        self.gen = folder / self.name
        self._graphs: dict[int, str] = {}
        self._done = False
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX)
            self.gen.mkdir()
        except BaseException:
            self._lock.close()
            raise

    def __enter__(self) -> "Saving":
        return self

    def __exit__(self, kind, value, trace) -> None:
        if not self._done:          # failed, or nothing to save after all
            shutil.rmtree(self.gen, ignore_errors=True)
        with contextlib.suppress(OSError):
            fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()

    def write_live(self, snap: Snapshot) -> None:
        for file, dtype, graphs in (("vectors16", np.float16, True), ("vectors32", np.float32, False)):
            # Written pool by pool from the partitions' own matrices: no second copy in memory.
            pieces = [pool.vectors for pool in snap.pools if (pool.graph is not None) == graphs]
            out = np.lib.format.open_memmap(self.gen / f"{file}.npy", mode="w+", dtype=dtype,
                                            shape=(sum(len(p) for p in pieces), snap.dim))
            at = 0
            for piece in pieces:
                out[at:at + len(piece)] = piece
                at += len(piece)
            out.flush()
            del out
        for i, pool in enumerate(snap.pools):
            if pool.graph is not None:
                self._graphs[i] = f"graph-{i}.usearch"
                pool.graph.index.save(str(self.gen / self._graphs[i]))

    def finish(self, snap: Snapshot) -> None:
        gen = self.gen
        for column, dtype in ROW_COLUMNS.items():
            with open(gen / f"{column}.npy", "wb") as fh:
                np.save(fh, np.ascontiguousarray(snap.columns[column], dtype=dtype), allow_pickle=False)
        (gen / "ids.json").write_text(json.dumps(snap.ids, ensure_ascii=False), encoding="utf-8")
        files = {path.name: file_crc(path) for path in sorted(gen.iterdir())}
        pools = [{"key": list(pool.key), "start": pool.start, "count": pool.count, "graph": self._graphs.get(i)}
                 for i, pool in enumerate(snap.pools)]
        manifest = {"format": FORMAT, "folder": self.name, "seq": snap.seq, "file_id": snap.file_id,
                    "dim": snap.dim, "rows": len(snap.ids), "domains": snap.domains, "unindexed": snap.unindexed,
                    "pools": pools, "files": files}
        tmp = self.folder / f"{CURRENT}.{self.name}.tmp"
        tmp.write_text(json.dumps(manifest), encoding="utf-8")
        os.replace(tmp, self.folder / CURRENT)
        self._done = True
        for old in self.folder.iterdir():        # older snapshots, and what a save cut short left
            if old.name not in (self.name, CURRENT, ".lock"):
                if old.is_dir():
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    old.unlink(missing_ok=True)


def saved_seq(folder: Path, file_id: str) -> int | None:
    """The log position of the folder's current snapshot of this file (None: none readable)."""
    try:
        manifest = json.loads((folder / CURRENT).read_text(encoding="utf-8"))
        return int(manifest["seq"]) if manifest.get("file_id") == file_id else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Unusable(Exception):
    """The snapshot cannot be used; the message says why (logged, and the rows are read instead)."""


def load(folder: Path, *, file_id: str, dim: int) -> Snapshot:
    """The folder's current snapshot, checked file by file; raises ``Unusable`` with the reason."""
    try:
        manifest = json.loads((folder / CURRENT).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise Unusable("no snapshot") from None
    except (OSError, ValueError) as exc:
        raise Unusable(f"unreadable manifest: {exc}") from exc
    try:
        if manifest["format"] != FORMAT or manifest["dim"] != dim:
            raise Unusable("saved in another format or dimension")
        if manifest["file_id"] != file_id:
            raise Unusable("saved for another file")
        gen = folder / manifest["folder"]
        for file, crc in manifest["files"].items():
            if file_crc(gen / file) != crc:
                raise Unusable(f"corrupt: {file} fails its checksum")
        columns = {column: np.load(gen / f"{column}.npy", allow_pickle=False) for column in ROW_COLUMNS}
        matrices = {graphs: np.load(gen / f"{file}.npy", allow_pickle=False)
                    for file, graphs in (("vectors16", True), ("vectors32", False))}
        ids = json.loads((gen / "ids.json").read_text(encoding="utf-8"))
        rows = manifest["rows"]
        if len(ids) != rows or any(columns[c].shape != (rows,) for c in ROW_COLUMNS) or \
                sum(len(m) for m in matrices.values()) != rows:
            raise Unusable("corrupt: the columns do not hold the rows the manifest says")
        pools, taken = [], {True: 0, False: 0}
        for p in manifest["pools"]:
            has_graph = p["graph"] is not None
            vectors = matrices[has_graph][taken[has_graph]:taken[has_graph] + p["count"]]
            taken[has_graph] += p["count"]
            graph = None
            if p["graph"] is not None:
                graph = Graph(dim)
                graph.index.load(str(gen / p["graph"]))
                labels = columns["labels"][p["start"]:p["start"] + p["count"]]
                keys = np.sort(np.asarray(graph.index.keys, dtype=np.int64))
                if not np.array_equal(keys, np.sort(labels)):
                    raise Unusable("corrupt: a graph's keys are not its pool's labels")
            pools.append(Pool(tuple(p["key"]), p["start"], p["count"], vectors, graph))
        return Snapshot(int(manifest["seq"]), file_id, dim, ids, list(manifest["domains"]), columns, pools,
                        int(manifest["unindexed"]))
    except Unusable:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError, RuntimeError) as exc:
        raise Unusable(f"corrupt: {type(exc).__name__}: {exc}") from exc
