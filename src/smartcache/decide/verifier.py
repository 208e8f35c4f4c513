"""The learned verifier: evidence features in, P(same), P(modify), P(different) out.

A gradient-boosted tree ensemble, trained by ``smartcache train`` (scikit-learn's
HistGradientBoostingClassifier) and shipped as plain JSON in the package, so a
lookup needs neither scikit-learn nor pickle. Prediction walks every tree for
every candidate at once, level by level, over a (candidates x trees) array of
positions: each tree is laid out once as a complete binary tree of the ensemble's
depth (a leaf above the last level copied down both ways), so a child is
``2 * position + 1 + went_right``, a level is four flat gathers with no leaf test,
and the top-k candidates of a request cost a few dozen microseconds, not a Python
loop per node.

    >>> v = TreeVerifier.constant(["turn_cosine"], [0.0, -5.0, 0.0])
    >>> [round(float(p), 3) for p in v.predict(np.zeros((1, 1), np.float32))[0]]
    [0.498, 0.003, 0.498]
"""

from __future__ import annotations

import copy
import functools
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple, Sequence

import numpy as np

from smartcache.errors import ConfigError

CLASSES = ("same", "modify", "different")
SAME, MODIFY, DIFFERENT = range(3)
FORMAT = "smartcache-verifier/1"
# The packaged model: the trees that weigh the rules' evidence.
PACKAGED = "verifier.json"
# Models up to this depth are walked as complete binary trees (2 ** (depth + 1) - 1 slots a
# tree: 127 for the packaged depth 6); a deeper one walks its node arrays as stored.
COMPLETE_DEPTH = 10


@dataclass(frozen=True)
class TreeVerifier:
    """A softmax over per-class sums of regression trees, padded into arrays.

    ``feature``, ``threshold``, ``left``, ``right``, ``value``, ``leaf`` are
    (trees, nodes) arrays; tree ``t`` adds to class ``t % 3``. A sample goes left
    when ``x[feature] <= threshold``, as in scikit-learn.
    """

    features: tuple[str, ...]
    baseline: np.ndarray          # (3,)
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    leaf: np.ndarray
    sizes: np.ndarray             # (trees,) nodes in use per tree; the rest is padding
    depth: int
    meta: dict[str, Any]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(n, features) -> (n, 3) class probabilities, in ``CLASSES`` order."""
        x = np.ascontiguousarray(x, np.float32)
        if x.ndim != 2 or x.shape[1] != len(self.features):
            raise ValueError(f"expected (n, {len(self.features)}) features, got {x.shape}")
        n, trees = x.shape[0], self.feature.shape[0]
        raw = np.tile(self.baseline, (n, 1)).astype(np.float64)
        if trees and n and self.depth > COMPLETE_DEPTH:
            raw += self._walk(x)
        elif trees and n:
            layout = self._layout
            width = layout.feature.shape[1]
            base = np.arange(trees, dtype=np.intp) * width              # each tree's row in the flat arrays
            rows = (np.arange(n, dtype=np.intp) * x.shape[1])[:, None]  # each sample's row in x
            feature, threshold, flat_x = layout.feature.ravel(), layout.threshold.ravel(), x.ravel()
            position = np.zeros((n, trees), np.intp)
            for _ in range(self.depth):
                at = base + position
                # As scikit-learn: left when x <= threshold (a NaN goes right).
                right = ~(flat_x[rows + feature[at]] <= threshold[at])
                position = 2 * position + 1 + right
            leaf_values = layout.value.ravel()[base + position]        # (n, trees)
            raw += leaf_values.reshape(n, -1, len(CLASSES)).sum(axis=1)
        raw -= raw.max(axis=1, keepdims=True)
        p = np.exp(raw)
        return p / p.sum(axis=1, keepdims=True)

    def _walk(self, x: np.ndarray) -> np.ndarray:
        """The per-class sums of the trees walked on the padded node arrays as stored, a leaf test
        per level: for a model too deep to lay out complete."""
        n, trees = x.shape[0], self.feature.shape[0]
        rows = np.arange(trees)[None, :]
        node = np.zeros((n, trees), np.int32)
        samples = np.arange(n)[:, None]
        for _ in range(self.depth):
            f = self.feature[rows, node]
            go_left = x[samples, f] <= self.threshold[rows, node]
            step = np.where(go_left, self.left[rows, node], self.right[rows, node])
            node = np.where(self.leaf[rows, node], node, step)
        return self.value[rows, node].reshape(n, -1, len(CLASSES)).sum(axis=1)

    @functools.cached_property
    def _layout(self) -> "_Complete":
        """The trees as complete binary trees of depth ``depth`` (built on first use)."""
        return _complete(self)

    def operating_point(self, tier: str, context: bool = True, lang: str = "") -> float:
        """The P(same) a hit needs, as calibrated by ``smartcache train``: per risk tier, for a
        request with a history or without (``"low"`` / ``"low:single"``), per language where
        calibrated (``"low@en"``); else the kind's pooled point, else the strictest. The high-risk
        tier, where not calibrated, takes the strictest point there is for the language."""
        points = self.meta.get("operating_points", {})
        key = tier if context else f"{tier}:single"
        for name in (f"{key}@{lang}", key):
            if name in points:
                return float(points[name])
        if tier == "high":
            # Never calibrated (too few rows): the strictest point the model has for the
            # language, never the pooled one, which sits below every calibrated tier's.
            return max([float(v) for name, v in points.items() if name.partition("@")[2] in ("", lang)]
                       + [float(points.get("default", 0.999))])
        if (pooled := "context" if context else "single") in points:
            return float(points[pooled])
        return float(points.get("default", 0.999))

    # -- serialisation ------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        trees = []
        for t in range(self.feature.shape[0]):
            size = int(self.sizes[t])
            trees.append({"feature": self.feature[t, :size].tolist(),
                          "threshold": [float(v) for v in self.threshold[t, :size]],
                          "left": self.left[t, :size].tolist(), "right": self.right[t, :size].tolist(),
                          "value": [round(float(v), 7) for v in self.value[t, :size]],
                          "leaf": self.leaf[t, :size].astype(int).tolist()})
        return {"format": FORMAT, "classes": list(CLASSES), "features": list(self.features),
                "baseline": self.baseline.tolist(), "trees": trees, "meta": copy.deepcopy(self.meta)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TreeVerifier":
        if data.get("format") != FORMAT or list(data.get("classes", ())) != list(CLASSES):
            raise ConfigError(f"not a {FORMAT} model")
        trees = data["trees"]
        width = max((len(t["feature"]) for t in trees), default=1)
        arrays = {k: np.zeros((len(trees), width), dtype) for k, dtype in (
            ("feature", np.int32), ("threshold", np.float32), ("left", np.int32), ("right", np.int32),
            ("value", np.float64), ("leaf", bool))}
        arrays["leaf"][:] = True          # padding is a leaf that is never reached
        sizes = np.zeros(len(trees), np.int32)
        for i, tree in enumerate(trees):
            size = len(tree["feature"])
            sizes[i] = size
            for key in arrays:
                arrays[key][i, :size] = tree[key]
        depth = _max_depth(arrays["left"], arrays["right"], arrays["leaf"])
        return cls(tuple(data["features"]), np.asarray(data["baseline"], np.float64), sizes=sizes, depth=depth,
                   meta=dict(data.get("meta", {})), **arrays)

    @classmethod
    def load(cls, path: str | Path | None = None, *, features: Sequence[str] | None = None,
             packaged: str = PACKAGED) -> "TreeVerifier":
        """The packaged model (``data/<packaged>``) or the one at ``path``; checks that it
        was trained on ``features`` in that order."""
        try:
            model = _packaged(packaged, _stamp(packaged)) if path is None else cls.from_json(
                json.loads(Path(path).read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"cannot load the verifier model {path or 'data/' + packaged}: {exc}") from exc
        if features is not None and tuple(features) != model.features:
            raise ConfigError("the verifier model was trained on other features; rebuild it with `smartcache train`")
        return model

    @classmethod
    def constant(cls, features: Sequence[str], baseline: Sequence[float]) -> "TreeVerifier":
        """A model with no trees: the same probabilities for every input."""
        empty = np.zeros((0, 1))
        return cls(tuple(features), np.asarray(baseline, np.float64), empty.astype(np.int32),
                   empty.astype(np.float32), empty.astype(np.int32), empty.astype(np.int32), empty,
                   empty.astype(bool), np.zeros(0, np.int32), 0, {})

    @classmethod
    def from_sklearn(cls, model: Any, features: Sequence[str], meta: dict[str, Any] | None = None
                     ) -> "TreeVerifier":
        """Export a fitted 3-class HistGradientBoostingClassifier (no categorical features)."""
        if list(model.classes_) != [0, 1, 2]:
            raise ValueError("the model must be trained on the three classes 0, 1, 2")
        trees = []
        for iteration in model._predictors:
            for predictor in iteration:
                nodes = predictor.nodes
                trees.append({"feature": nodes["feature_idx"].astype(int).tolist(),
                              "threshold": nodes["num_threshold"].astype(float).tolist(),
                              "left": nodes["left"].astype(int).tolist(), "right": nodes["right"].astype(int).tolist(),
                              "value": nodes["value"].astype(float).tolist(),
                              "leaf": nodes["is_leaf"].astype(int).tolist()})
        baseline = np.asarray(model._baseline_prediction, np.float64).reshape(-1)
        return cls.from_json({"format": FORMAT, "classes": list(CLASSES), "features": list(features),
                              "baseline": baseline.tolist(), "trees": trees, "meta": meta or {}})


def _packaged_file(name: str) -> Any:
    return resources.files("smartcache").joinpath(f"data/{name}")


def _stamp(name: str) -> tuple[int, int] | None:
    """The packaged file's modification time and size: a model rewritten by ``make train``
    in this process is read again."""
    try:
        info = os.stat(_packaged_file(name))    # type: ignore[arg-type]
    except (TypeError, OSError):            # not a plain file (a zip): it cannot change under us
        return None
    return info.st_mtime_ns, info.st_size


@functools.lru_cache(maxsize=4)
def _packaged(name: str, stamp: tuple[int, int] | None) -> TreeVerifier:
    """The packaged model, parsed once per version of the file (about 0.1 s) and shared by every
    cache: its arrays are made read-only and ``to_json`` copies its meta, so no cache can
    change another's model."""
    text = _packaged_file(name).read_text(encoding="utf-8")
    model = TreeVerifier.from_json(json.loads(text))
    # The walk's layout is built here, once (about 40 ms), not on the first lookup's predict.
    for array in (model.feature, model.threshold, model.left, model.right, model.value, model.leaf,
                  model.sizes, model.baseline, *(model._layout if model.depth <= COMPLETE_DEPTH else ())):
        array.setflags(write=False)
    return model


class _Complete(NamedTuple):
    """(trees, 2 ** (depth + 1) - 1) arrays: position ``p``'s children are ``2p + 1`` and ``2p + 2``;
    ``feature`` and ``threshold`` are read above the last level, ``value`` on it."""

    feature: np.ndarray     # intp
    threshold: np.ndarray   # float32, as the model's (the comparison must not change)
    value: np.ndarray       # float64


def _complete(model: TreeVerifier) -> _Complete:
    """Lay every tree out as a complete binary tree of the model's depth. A leaf above the last
    level becomes a split that sends everything left (+inf, any feature) and a NaN right, with
    the leaf copied into both subtrees, so every sample lands on a copy of the leaf it reached."""
    trees, depth = model.feature.shape[0], model.depth
    width = 2 ** (depth + 1) - 1
    feature = np.zeros((trees, width), np.intp)
    threshold = np.full((trees, width), np.inf, np.float32)
    value = np.zeros((trees, width), np.float64)
    for t in range(trees):
        stack = [(0, 0, 0)]             # (node in the model, position in the layout, level)
        while stack:
            node, position, level = stack.pop()
            if level == depth:
                if not model.leaf[t, node]:
                    raise ValueError(f"tree {t} is deeper than the model's depth {depth}")
                value[t, position] = model.value[t, node]
                continue
            if model.leaf[t, node]:
                stack += [(node, 2 * position + 1, level + 1), (node, 2 * position + 2, level + 1)]
                continue
            feature[t, position] = model.feature[t, node]
            threshold[t, position] = model.threshold[t, node]
            stack += [(int(model.left[t, node]), 2 * position + 1, level + 1),
                      (int(model.right[t, node]), 2 * position + 2, level + 1)]
    return _Complete(feature, threshold, value)


def _max_depth(left: np.ndarray, right: np.ndarray, leaf: np.ndarray) -> int:
    """Levels to walk so every sample reaches a leaf (the deepest tree's depth)."""
    deepest = 0
    for t in range(left.shape[0]):
        frontier, depth = [0], 0
        while frontier:
            frontier = [c for n in frontier if not leaf[t, n] for c in (left[t, n], right[t, n])]
            depth += bool(frontier)
        deepest = max(deepest, depth)
    return deepest


__all__ = ["CLASSES", "DIFFERENT", "MODIFY", "PACKAGED", "SAME", "TreeVerifier"]
