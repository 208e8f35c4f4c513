"""How well the cross-encoder's held-out P(same) ranks wanted hits, per source family, beside
the turn cosine and the trees' own held-out P(same) (figures, not a test).

    .venv/bin/python scripts/cross_encoder_auc.py [--harvest docs/eval/training/harvest.npz]
                                                  [--work build/cross-encoder] [--params JSON]

Reads the harvest and ``held_out.npz`` that ``smartcache train-verifier`` left in ``--work``:
every row's probabilities come from the fold model that never saw the row's family. Rows are
same / different candidates (modify left out); ROC AUC of "same" against "different".
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> int:
    from sklearn.metrics import roc_auc_score

    from smartcache.decide.evidence import FEATURES
    from smartcache.decide.verifier import DIFFERENT, SAME
    from smartcache.eval.cross_training import held_out_probs
    from smartcache.eval.training import Harvest, family_of, held_out_predictions

    parser = argparse.ArgumentParser()
    parser.add_argument("--harvest", default="docs/eval/training/harvest.npz")
    parser.add_argument("--work", default="build/cross-encoder")
    parser.add_argument("--params", default="{}", help="JSON: the trees' parameters over the packaged ones")
    args = parser.parse_args()
    h = Harvest.load(Path(args.harvest))
    x, y, case, _ = h.arrays()
    cross = held_out_probs(Path(args.work), len(y))
    trees = held_out_predictions(h, params=json.loads(args.params))[:, SAME]
    fam = np.asarray([family_of(h.cases[c]["source"]) for c in case])
    lang = np.asarray([h.cases[c]["lang"] for c in case])
    cosine = x[:, FEATURES.index("turn_cosine")]
    print("| family | lang | same | different | turn cosine | trees (no cross-encoder) | cross-encoder |")
    print("|---|---|---|---|---|---|---|")
    for f in sorted(set(fam.tolist())):
        for l in sorted(set(lang[fam == f].tolist())):
            m = (fam == f) & (lang == l) & (y != 1) & ~np.isnan(cross[:, 0])
            same, diff = int((y[m] == SAME).sum()), int((y[m] == DIFFERENT).sum())
            if not same or not diff:
                continue
            aucs = [roc_auc_score(y[m] == SAME, s[m]) for s in (cosine, trees, cross[:, SAME])]
            print(f"| {f} | {l} | {same} | {diff} | " + " | ".join(f"{a:.3f}" for a in aucs) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
