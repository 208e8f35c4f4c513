"""The wrong answers a competing run served, laid out for a reader to judge (issue 27).

    .venv/bin/python scripts/competing_audit.py --mode session --out build/audit.jsonl CASES.jsonl ...

In a competing run another case's entry can be served to a probe, and the scorer counts any
answer but the probe's own expected one as wrong. Some of those are right: another case's
cached request may be the same request (the benchmark's templates reuse questions). Each line
holds the probe's conversation, the served answer and every cached request that answer was
stored for, so that a reader (not a rule) can say which served answers were really wrong;
``--sample N`` keeps a fixed-seed sample per file.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

from smartcache import SmartCache, load_config
from smartcache.eval import SmartCacheSystem, evaluate, load_cases
from smartcache.eval.harness import compete


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+", type=Path)
    parser.add_argument("--mode", choices=("session", "global"), default="session")
    parser.add_argument("--out", required=True)
    parser.add_argument("--sample", type=int, default=0, help="at most N a file (0: all)")
    args = parser.parse_args(argv)
    config = load_config(store={"backend": "memory"})
    encoder = SmartCache(config).encoder
    rng = random.Random(0)
    rows = []
    for path in args.cases:
        cases = load_cases(path)
        stored_for: dict[str, list[dict]] = defaultdict(list)
        for case in cases:
            for item in case.cached:
                stored_for[item.answer].append({"case": case.id, "messages": item.messages})
        got: dict[str, list] = {}
        evaluate([SmartCacheSystem(lambda: SmartCache(config, encoder=encoder))], cases, competing=args.mode,
                 on_outcomes=lambda name, outcomes: got.setdefault(name, outcomes))
        wrong = []
        for case, outcome in zip(compete(cases, args.mode), got["smartcache"]):     # scored as the run was
            if outcome.zone == "hit" and not case.serves_right(outcome.answer):
                wrong.append({"set": path.stem, "id": case.id, "category": case.category, "expect": case.expect,
                              "probe": case.probe, "served_answer": outcome.answer,
                              "served_for": stored_for.get(outcome.answer, [])[:3], "reasons": list(outcome.reasons)})
        if args.sample and len(wrong) > args.sample:
            wrong = rng.sample(wrong, args.sample)
        rows += wrong
        print(f"{path.stem}: {len(wrong)} wrong answers kept")
    with open(args.out, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
