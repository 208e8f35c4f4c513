"""How often each hard veto refuses an entry the case wanted served (figures, not a test).

    .venv/bin/python scripts/veto_precision.py CASES.jsonl [CASES.jsonl ...] [--codes a,b]

Every candidate of every case is described the way a lookup would (``eval.training.harvest``,
rules only, a memory store, one tenant a case); a candidate a hard veto refuses is counted
by whether the case wanted it served. Precision is the share of refusals that were right;
its lower bound is one-sided Clopper-Pearson at 95 %. Per file, then over all files.

For the history vetoes (issue 18), the figures that matter are both sides: false hits
blocked (refusals of unwanted entries) and real hits lost (refusals of wanted ones).
Files: the -a development sets, ``build/benchmark.jsonl`` (``make benchmark``) and the
multi-turn training sources of ``build/training`` (``scripts/build_training.py``):
``*-ctx`` (public pairs after a history, small talk or a closed earlier topic), crosswoz and
the generator; the single-turn pair sources have no two histories to compare.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smartcache import SmartCache, load_config
from smartcache.eval.cases import load_cases
from smartcache.eval.training import harvest, upper_bound
from smartcache.fingerprint import shared_encoder


def row(name: str, wanted: int, rest: int) -> str:
    refused = wanted + rest
    precision = rest / refused if refused else float("nan")
    lower = 1.0 - upper_bound(wanted, refused) if refused else float("nan")
    return f"| {name} | {refused} | {rest} | {wanted} | {precision:.3f} | {lower:.3f} |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--codes", default="", help="comma-separated veto codes to show (default: all)")
    args = parser.parse_args()
    wanted_codes = set(filter(None, args.codes.split(",")))
    encoder = shared_encoder("use-multilingual")
    totals: dict[str, list[int]] = {}
    print("| source / veto | refused | unwanted (false hits blocked) | wanted (hits lost) | precision | "
          "precision, 95 % lower |")
    print("|---|---|---|---|---|---|")
    for path in args.cases:
        if not path.exists():
            print(f"skipped {path}: absent (see the docstring for how to build it)", file=sys.stderr)
            continue
        cache = SmartCache(load_config(use_verifier=False), encoder=encoder)
        part = harvest(load_cases(path), path.stem, cache)
        for code, (pos, neg) in sorted(part.vetoes.items()):
            if wanted_codes and code not in wanted_codes:
                continue
            counts = totals.setdefault(code, [0, 0])
            counts[0] += pos
            counts[1] += neg
            print(row(f"{path.stem}: {code}", pos, neg))
        sys.stdout.flush()
    for code, (pos, neg) in sorted(totals.items()):
        print(row(f"**all: {code}**", pos, neg))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
