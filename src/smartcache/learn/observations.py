"""The labelled evidence a tenant's traffic gives: what its verifier can be refitted on.

Every label the cache learns from (a forwarded request's answer against its best unvetoed
candidate's, or a served hit checked against a fresh one) comes with the verifier's feature
row for that candidate. The learned point (``policy.py``) keeps only the score of each label;
this log keeps the rows, so that ``smartcache train --observations`` can refit the trees on
the tenant's own traffic beside the public rows (``refit.py``), off the request path.

The log is bounded (the newest ``kept`` rows a tenant), saved to the store beside the learned
state and merged there, so replicas pool their rows and a restart loses none that were saved.
Labels come from the engine's answers only; one session adds at most ``labels_per_session``
rows labelled the same, as it adds at most that many labels to the pool.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

FORMAT = "smartcache-observations/1"


@dataclass(frozen=True)
class Labelled:
    """One observation with its evidence: the verifier's ``features`` on the candidate, the
    P(same) it gave (``score``), whether the engine's answer made the candidate right, the
    stratum, when (the cache's clock) and how it was got (forwarded or check)."""

    features: tuple[float, ...]
    correct: bool
    score: float
    stratum: str
    at: float
    kind: str
    session: str = ""


@dataclass(frozen=True)
class Rows:
    """A tenant's observations as arrays, oldest first."""

    x: np.ndarray            # (n, features) float32
    correct: np.ndarray      # (n,) bool
    score: np.ndarray        # (n,) float32
    at: np.ndarray           # (n,) float64
    stratum: tuple[str, ...]
    kind: tuple[str, ...]
    features: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.correct)

    def take(self, keep: np.ndarray) -> "Rows":
        idx = np.flatnonzero(keep)
        return Rows(self.x[idx], self.correct[idx], self.score[idx], self.at[idx],
                    tuple(self.stratum[i] for i in idx), tuple(self.kind[i] for i in idx), self.features)


def encode(rows: Sequence[Labelled], features: Sequence[str]) -> str:
    """Rows as one text for the store: a JSON header, the arrays as a compressed npz in base64."""
    buffer = io.BytesIO()
    x = np.asarray([r.features for r in rows], np.float32).reshape(len(rows), len(features))
    np.savez_compressed(buffer, x=x, correct=np.asarray([r.correct for r in rows], bool),
                        score=np.asarray([r.score for r in rows], np.float32),
                        at=np.asarray([r.at for r in rows], np.float64))
    return json.dumps({"format": FORMAT, "features": list(features), "stratum": [r.stratum for r in rows],
                       "kind": [r.kind for r in rows], "session": [r.session for r in rows],
                       "arrays": base64.b64encode(buffer.getvalue()).decode("ascii")})


def decode(text: str, features: Sequence[str]) -> list[Labelled]:
    """The rows of ``encode``; ValueError on another format, or rows of other features (a
    model with other features cannot be refitted on them)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a {FORMAT} record: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} record")
    if data.get("features") != list(features):
        raise ValueError("observations of other features than this verifier's")
    columns = [data.get(name) for name in ("stratum", "kind", "session")]
    if not all(isinstance(c, list) and all(isinstance(v, str) for v in c) for c in columns):
        raise ValueError("an observations record whose stratum, kind or session is not a list of strings")
    try:    # a record cut short or altered: whatever the zip or base64 reader says, one error
        arrays = np.load(io.BytesIO(base64.b64decode(str(data.get("arrays", "")), validate=True)), allow_pickle=False)
        x, correct, score, at = (np.asarray(arrays[k]) for k in ("x", "correct", "score", "at"))
    except Exception as exc:
        raise ValueError(f"an observations record whose arrays cannot be read: {exc}") from exc
    n = len(correct)
    if x.shape != (n, len(features)) or not (len(score) == len(at) == n == len(columns[0]) == len(columns[1])
                                               == len(columns[2])):
        raise ValueError("an observations record whose columns differ in length")
    if not (np.isfinite(x).all() and np.isfinite(score).all() and np.isfinite(at).all()):
        raise ValueError("an observations record with a value that is not a finite number")
    return [Labelled(tuple(float(v) for v in x[i]), bool(correct[i]), float(score[i]), columns[0][i],
                     float(at[i]), columns[1][i], columns[2][i]) for i in range(n)]


def encode_rows(rows: Rows) -> str:
    """``encode`` of what ``as_rows`` made (the sessions are not kept in ``Rows``)."""
    return encode([Labelled(tuple(float(v) for v in rows.x[i]), bool(rows.correct[i]), float(rows.score[i]),
                            rows.stratum[i], float(rows.at[i]), rows.kind[i]) for i in range(len(rows))],
                  rows.features)


def as_rows(rows: Sequence[Labelled], features: Sequence[str]) -> Rows:
    x = np.asarray([r.features for r in rows], np.float32).reshape(len(rows), len(features))
    return Rows(x, np.asarray([r.correct for r in rows], bool), np.asarray([r.score for r in rows], np.float32),
                np.asarray([r.at for r in rows], np.float64), tuple(r.stratum for r in rows),
                tuple(r.kind for r in rows), tuple(features))


class ObservationLog:
    """Per tenant, the newest ``kept`` labelled rows in memory, and those not yet saved."""

    def __init__(self, features: Sequence[str], kept: int, labels_per_session: int) -> None:
        if kept < 1 or labels_per_session < 1:
            raise ValueError("kept and labels_per_session must be positive")
        self.features = tuple(features)
        self.kept, self.labels_per_session = kept, labels_per_session
        self._lock = threading.Lock()
        self._rows: dict[str, list[Labelled]] = defaultdict(list)
        self._news: dict[str, list[Labelled]] = defaultdict(list)
        self._senders: dict[str, OrderedDict[str, int]] = defaultdict(OrderedDict)

    def add(self, tenant: str, row: Labelled) -> bool:
        """Keep one row; False when it is not kept (its session has added its share of rows
        labelled the same, or its features are not this verifier's)."""
        if len(row.features) != len(self.features):
            return False
        with self._lock:
            if row.correct:
                senders = self._senders[tenant]
                if senders.get(row.session, 0) >= self.labels_per_session:
                    return False
                senders[row.session] = senders.get(row.session, 0) + 1
                senders.move_to_end(row.session)
                while len(senders) > self.kept:
                    senders.popitem(last=False)
            for held in (self._rows[tenant], self._news[tenant]):
                held.append(row)
                del held[:-self.kept]
            return True

    def rows(self, tenant: str) -> Rows:
        with self._lock:
            return as_rows(list(self._rows.get(tenant, ())), self.features)

    def take_news(self, tenant: str) -> list[Labelled]:
        with self._lock:
            return self._news.pop(tenant, [])

    def give_back(self, tenant: str, news: list[Labelled]) -> None:
        """Rows whose save failed: carried by the next one."""
        with self._lock:
            self._news[tenant] = (news + self._news[tenant])[-self.kept:]

    def merged(self, stored: str | None, news: list[Labelled]) -> str:
        """What the store holds with ``news`` after it, the newest ``kept``. A record that cannot
        be read (another format, other features) is replaced rather than kept half-read."""
        old: list[Labelled] = []
        if stored:
            try:
                old = decode(stored, self.features)
            except ValueError:
                old = []
        return encode((old + news)[-self.kept:], self.features)

    def adopt(self, tenant: str, text: str | None) -> None:
        """What the store holds becomes this process's copy (after a save, or on first use)."""
        if not text:
            return
        try:
            rows = decode(text, self.features)
        except ValueError:
            return
        with self._lock:
            unsaved = self._news.get(tenant, [])
            self._rows[tenant] = (rows + unsaved)[-self.kept:]

    def tenants(self) -> list[str]:
        with self._lock:
            return sorted(set(self._rows) | set(self._news))

    def summary(self, tenant: str) -> dict[str, Any]:
        rows = self.rows(tenant)
        return {"rows": len(rows), "wrong": int((~rows.correct).sum()) if len(rows) else 0, "kept": self.kept}


__all__ = ["FORMAT", "Labelled", "ObservationLog", "Rows", "as_rows", "decode", "encode", "encode_rows"]
