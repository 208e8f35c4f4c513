"""What the near-exact path calls the same request, on public data (figures, not a test).

    .venv/bin/python scripts/near_exact_probe.py [--sets qqp,pawsx,lcqmc,bq] [--slips 3000] [--show 15]

Two reports, both on ``../shared/data``:

- **pairs**: every labelled pair of each set whose normalised texts differ, and how many
  ``near_exact`` accepts, by label. An accepted pair labelled different is a wrong hit the path
  would serve (or the set's label noise: print them with ``--show``).
- **slips**: ``--slips`` distinct English questions (QQP, seed 1), each with one slip of the
  fingers typed into one word of three letters or more (two letters swapped, one dropped, one
  typed twice, a neighbouring key), and the share ``near_exact`` keeps as the same request, by
  kind of slip and word length.
- **library** (``--library N``): N of those questions stored in a fresh cache (the packaged
  defaults, memory store) and asked again with their slip: the share served, and what
  decided each lookup.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter

from smartcache.context import normalize_text
from smartcache.decide.near_exact import near_exact
from smartcache.eval.calibrate import load_pair_set
from smartcache.paths import shared_data

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEAR = {c: (row[i - 1] if i else "") + (row[i + 1] if i + 1 < len(row) else "") for row in _ROWS
         for i, c in enumerate(row)}


def slip(word: str, kind: str, rng: random.Random) -> str:
    i = rng.randrange(len(word))
    if kind == "swap":
        i = rng.randrange(len(word) - 1)
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop":
        return word[:i] + word[i + 1:]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    near = _NEAR.get(word[i].lower(), "")
    return word[:i] + rng.choice(near) + word[i + 1:] if near else word


def slipped(questions: list[str], rng: random.Random):
    """(question, the same with one slip, the kind of slip, the slipped word's length) for each
    question with a word of three letters or more whose slip changed it."""
    for q in questions:
        words = q.split()
        where = [k for k, w in enumerate(words) if w.isalpha() and len(w) >= 3]
        if not where:
            continue
        k, kind = rng.choice(where), rng.choice(["swap", "drop", "double", "key"])
        typed = slip(words[k], kind, rng)
        if typed != words[k]:
            yield q, " ".join(words[:k] + [typed] + words[k + 1:]), kind, len(words[k])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="qqp,pawsx,lcqmc,bq")
    parser.add_argument("--slips", type=int, default=3000, help="questions given one slip each (0: none)")
    parser.add_argument("--show", type=int, default=0, help="accepted pairs labelled different to print per set")
    parser.add_argument("--library", type=int, default=0, help="questions asked again with a slip through the cache")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("../shared/data not found: no pair sets", file=sys.stderr)
        return 2
    for name in args.sets.split(","):
        rows = load_pair_set(name, data)
        accepted, shown = [0, 0], 0
        for a, b, label in rows:
            x, y = normalize_text(a), normalize_text(b)
            if x != y and near_exact(x, y) is not None:
                accepted[label] += 1
                if not label and shown < args.show:
                    shown += 1
                    print(f"    different: {a!r} / {b!r}")
        print(f"pairs {name}: {len(rows)} pairs; accepted as one request: {accepted[0]} labelled different, "
              f"{accepted[1]} labelled the same", flush=True)
    if args.slips:
        rng = random.Random(1)
        questions = sorted({a for a, _, _ in load_pair_set("qqp", data)[:20000]})
        rng.shuffle(questions)
        kept: Counter = Counter()
        total: Counter = Counter()
        for q, typed, kind, length in slipped(questions[:args.slips], rng):
            group = (kind, "3-4 letters" if length <= 4 else "5+ letters")
            total[group] += 1
            kept[group] += near_exact(normalize_text(q), normalize_text(typed)) is not None
        for group in sorted(total):
            print(f"slips {group[0]:>6} {group[1]:>11}: {kept[group]:4d} of {total[group]:4d} kept "
                  f"({kept[group] / total[group]:.0%})")
        print(f"slips overall: {sum(kept.values())} of {sum(total.values())} kept "
              f"({sum(kept.values()) / sum(total.values()):.1%})")
    if args.library:
        library(data, args.library)
    return 0


def library(data, n: int) -> None:
    from smartcache import SmartCache, load_config

    config = load_config(store={"backend": "memory"})
    encoder = SmartCache(config).encoder
    rng = random.Random(5)
    questions = sorted({a for a, _, _ in load_pair_set("qqp", data)[:20000]})
    rng.shuffle(questions)
    served = asked = 0
    decided: Counter = Counter()
    for q, typed, _, _ in slipped(questions[:n], rng):
        cache = SmartCache(config, encoder=encoder)
        stored = cache.store([{"role": "user", "content": q}], "answer", session="s")
        if not stored.stored:          # a time-sensitive question is never written
            continue
        cache.promote(stored.cache_id)
        found = cache.lookup([{"role": "user", "content": typed}], session="s")
        asked += 1
        served += found.zone.value == "hit"
        decided[found.reasons[0].code.value if found.reasons else "-"] += 1
    print(f"library: {served} of {asked} asked again with a slip served ({served / max(asked, 1):.1%}); "
          f"decided by {dict(decided.most_common())}")


if __name__ == "__main__":
    sys.exit(main())
