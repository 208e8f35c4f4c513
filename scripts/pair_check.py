"""Single-turn hit rates of SmartCache on the public pair sets (../shared/data), for calibration.

    .venv/bin/python scripts/pair_check.py [--n 400]

For each labelled pair (a, b): store a in a fresh session, promote it, look up b
in the same session, and count hits on positives (recall) and on negatives
(false hits). Prints one line per set. Reads only the validation splits.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
import tarfile
from pathlib import Path

from smartcache import SmartCache, Zone

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _rows(name: str) -> list[tuple[str, str, int]]:
    if name == "qqp":
        with tarfile.open(DATA / "qqp" / "similiar_qqp_full.tar.gz") as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
            return [(r["text_a"], r["text_b"], int(r["label"])) for r in json.load(tar.extractfile(member))]
    if name == "gptcache-mock":
        data = json.loads((DATA / "gptcache-mock" / "mock_data.json").read_text(encoding="utf-8"))
        return [(r["origin"], r["similar"], 1) for r in data]
    with (DATA / "zh-pairs" / f"{name}.valid.tsv").open(encoding="utf-8") as f:
        return [(r[0], r[1], int(r[2])) for r in csv.reader(f, delimiter="\t") if len(r) >= 3 and r[2] in "01"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400, help="pairs sampled per set (seed 0)")
    args = parser.parse_args()
    if not DATA.exists():
        print(f"public data not found at {DATA}", file=sys.stderr)
        return 2
    cache = SmartCache()
    print(f"{'set':14} {'positives':>9} {'hit recall':>10} {'negatives':>9} {'false hits':>10}")
    for name in ("lcqmc", "bq", "pawsx", "qqp", "gptcache-mock"):
        rows = _rows(name)
        random.Random(0).shuffle(rows)
        counts = {0: [0, 0], 1: [0, 0]}
        for i, (a, b, label) in enumerate(rows[:args.n]):
            stored = cache.store([{"role": "user", "content": a}], "answer", session=f"{name}-{i}")
            if not stored.stored:
                continue
            cache.promote(stored.cache_id)
            decision = cache.lookup([{"role": "user", "content": b}], session=f"{name}-{i}")
            counts[label][0] += decision.zone is Zone.HIT
            counts[label][1] += 1
        rate = lambda c: f"{c[0] / c[1]:.3f}" if c[1] else "-"
        print(f"{name:14} {counts[1][1]:>9} {rate(counts[1]):>10} {counts[0][1]:>9} {rate(counts[0]):>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
