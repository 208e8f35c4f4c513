"""How often a rule fires on the public pair sets, and on pairs labelled what (figures, not a test).

    .venv/bin/python scripts/rule_on_pairs.py --code name_swapped [--detail TEXT] [--sets lcqmc,bq,qqp,pawsx]

For each labelled pair (a, b) of a set's first ``--n`` (shuffled, seed 0): store a in a fresh
memory cache, promote it, look b up, and count the lookups whose reasons hold ``--code``
(and ``--detail`` in its text, to tell one rule from another that shares its code). A rule
about to become a veto is measured this way first: the pairs it fires on that are labelled
the same question are what it would cost. Prints a line per set and the pairs labelled same.
"""

from __future__ import annotations

import argparse
import random
import sys

from smartcache import SmartCache, load_config
from smartcache.eval.calibrate import load_pair_set
from smartcache.paths import shared_data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--code", required=True, help="a reason code, e.g. name_swapped")
    parser.add_argument("--detail", default="", help="only reasons whose detail holds this text")
    parser.add_argument("--sets", default="lcqmc,bq,qqp,pawsx")
    parser.add_argument("--n", type=int, default=4000, help="pairs per set")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("../shared/data not found: no pair sets", file=sys.stderr)
        return 2
    config = load_config(store={"backend": "memory"})
    encoder = SmartCache(config).encoder
    for name in args.sets.split(","):
        rows = load_pair_set(name, data)
        random.Random(0).shuffle(rows)
        judged = fired = same = 0
        costly = []
        for a, b, label in rows[:args.n]:
            cache = SmartCache(config, encoder=encoder)
            stored = cache.store([{"role": "user", "content": a}], "answer", session="s")
            if not stored.stored:          # a time-sensitive question is never written
                continue
            cache.promote(stored.cache_id)
            found = cache.lookup([{"role": "user", "content": b}], session="s")
            judged += 1
            if any(r.code.value == args.code and args.detail in r.detail for r in found.reasons):
                fired += 1
                same += label
                if label:
                    costly.append((a, b))
        print(f"{name}: {judged} pairs, fires on {fired}, {same} of them labelled the same question", flush=True)
        for a, b in costly:
            print(f"    same: {a!r} / {b!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
