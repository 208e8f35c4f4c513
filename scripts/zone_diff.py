"""Every case's zone, served answer and deciding reason, recorded, and two recordings compared.

Issue 29's correctness bar: the exact and near-exact paths change no decision of ``make
evaluate``. Record the same case sets with the code before and after (the older code from a
git worktree, run with this venv), then compare:

    git worktree add --detach build/base REV
    PYTHONPATH=build/base/src .venv/bin/python scripts/zone_diff.py record --out build/zones-before.json
    .venv/bin/python scripts/zone_diff.py record --out build/zones-after.json
    .venv/bin/python scripts/zone_diff.py compare build/zones-before.json build/zones-after.json

``record`` runs what ``make evaluate`` runs: the benchmark (build/benchmark.jsonl, from ``make
benchmark``) with the packaged defaults and with the verifier and the validation ablated, and
the development sets with the defaults and without the verifier. It uses only the evaluation
API both versions have. ``compare`` prints each case whose zone or served answer changed, with
both deciding reasons, counts the changes by the new deciding reason, and exits 1 on any.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from smartcache import SmartCache, load_config
from smartcache.eval import SmartCacheSystem, load_cases
from smartcache.eval.harness import run_system

DEVSETS = ("zh-a", "en-a", "zh-b", "en-b", "history-a", "history-b", "history-c")
RUNS = [("benchmark", "build/benchmark.jsonl", ("", "verifier", "validation"))] + [
    (name, f"docs/eval/devset/{name}.jsonl", ("", "verifier")) for name in DEVSETS]
ABLATIONS = {"": {}, "verifier": {"use_verifier": False}, "validation": {"use_validation": False}}


def record(args: argparse.Namespace) -> int:
    out: dict[str, dict[str, list]] = {}
    for name, path, ablations in RUNS:
        if not Path(path).exists():
            print(f"skipping {path}: not there (make benchmark writes it)", file=sys.stderr)
            continue
        cases = load_cases(path)
        for ablation in ablations:
            overrides = ABLATIONS[ablation]
            system = SmartCacheSystem(lambda o=overrides: SmartCache(load_config(**o)))
            outcomes = run_system(system, cases)
            out[f"{name}{'-no-' + ablation if ablation else ''}"] = {
                case.id: [o.zone, o.answer, o.decided_by] for case, o in zip(cases, outcomes)}
            print(f"{name} {ablation or 'defaults'}: {len(cases)} cases", file=sys.stderr)
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=0), encoding="utf-8")
    return 0


def compare(args: argparse.Namespace) -> int:
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    changed: Counter[str] = Counter()
    total = 0
    for run in sorted(set(before) | set(after)):
        b, a = before.get(run, {}), after.get(run, {})
        if set(b) != set(a):
            print(f"{run}: the case sets differ ({len(b)} / {len(a)})")
            changed["case set"] += 1
        for case_id in sorted(set(b) & set(a)):
            total += 1
            (zb, ab, rb), (za, aa, ra) = b[case_id], a[case_id]
            if (zb, ab) != (za, aa):
                changed[ra or "-"] += 1
                print(f"{run} {case_id}: {zb} ({rb}) -> {za} ({ra})" + ("" if zb != za else ", another answer"))
    print(f"{total} decisions compared, {sum(changed.values())} changed" +
          (f": {dict(changed.most_common())}" if changed else ""))
    return 1 if changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--out", required=True)
    cmp = sub.add_parser("compare")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args()
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())
