"""Single-turn hit rates of SmartCache on the public pair sets (../shared/data), for calibration.

    .venv/bin/python scripts/pair_check.py [--n 400] [--seed 0]

For each labelled pair (a, b): store a in a fresh session, promote it, look up b
in the same session, and count hits on positives (recall) and on negatives
(false hits). Prints one line per set. Reads only the validation splits.
"""

from __future__ import annotations

import argparse
import random
import sys

from smartcache import SmartCache, Zone
from smartcache.eval.calibrate import load_pair_set
from smartcache.paths import shared_data

DATA = shared_data()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=400, help="pairs sampled per set")
    parser.add_argument("--seed", type=int, default=0, help="which sample (seed 0 is the README's)")
    args = parser.parse_args()
    if DATA is None:
        print("public data not found: ../shared/data (or set $SMARTCACHE_SHARED_DATA)", file=sys.stderr)
        return 2
    cache = SmartCache()
    print(f"{'set':14} {'positives':>9} {'hit recall':>10} {'negatives':>9} {'false hits':>10}")
    for name in ("lcqmc", "bq", "pawsx", "qqp", "gptcache-mock"):
        rows = load_pair_set(name, DATA)
        random.Random(args.seed).shuffle(rows)
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
