"""How public pairs label one request that is the other with one person put for another (figures, not a test).

    .venv/bin/python scripts/person_swap_pairs.py [--sets qqp,lcqmc,bq,pawsx] [--show 12]

``decide.swaps.person_swapped`` (the ``name_swapped`` veto for one role in another's place, "a
note to my client" / "… to my boss") applied to every pair of each set, rules only, no model:
the normalised texts and their one-slot edit, as the evidence reads them. Counts the pairs it
fires on by label; the pairs labelled the same question are what the veto would cost. Faster
than ``scripts/rule_on_pairs.py``, which runs the whole cache on a sample.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from smartcache.context import normalize_text
from smartcache.decide.swaps import person_swapped, substituted_spans
from smartcache.eval.calibrate import load_pair_set
from smartcache.paths import shared_data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="qqp,lcqmc,bq,pawsx")
    parser.add_argument("--show", type=int, default=12, help="pairs shown per set, those labelled the same first")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("../shared/data not found: no pair sets", file=sys.stderr)
        return 2
    total = Counter()
    for name in args.sets.split(","):
        rows = load_pair_set(name, data)
        fired: list[tuple[int, tuple[str, str], str, str]] = []
        for a, b, label in rows:
            a, b = normalize_text(a), normalize_text(b)
            person = person_swapped(a, b, substituted_spans(a, b))
            if person:
                fired.append((label, person, a, b))
        labels = Counter(label for label, *_ in fired)
        total.update({"pairs": len(rows), "fired": len(fired), "same": labels[1]})
        print(f"{name}: {len(rows)} pairs, fires on {len(fired)}, {labels[1]} of them labelled the same question")
        for label, person, a, b in sorted(fired, key=lambda f: -f[0])[:args.show]:
            print(f"    {'same' if label else 'diff'} {person[1]!r} -> {person[0]!r}: {a[:70]!r} / {b[:70]!r}")
    print(f"all: {total['pairs']} pairs, fires on {total['fired']}, {total['same']} labelled the same question")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
