"""Every development set scored three ways: one case at a time, and with every case's entries
competing in one session and in the global pool (issue 27), the packaged defaults.

    .venv/bin/python scripts/devsets_competing.py --json build/devsets.json --md build/devsets.md
    .venv/bin/python scripts/devsets_competing.py --modes case --json build/devsets-before.json   # any checkout
    .venv/bin/python scripts/devsets_competing.py --before build/devsets-before.json ...          # the table

Per set, per language and per category: hit recall with its Wilson 95 % lower bound and the
false-hit rate with its Clopper-Pearson 95 % upper bound. ``--before`` adds the recall of an
earlier run (one case at a time) and its change, for the no-regression table. The unread
sets (``UNREAD``: shapes-b, typos-c, en-f, gates-b, timely-b, timely-d) are left out unless named with ``--sets``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from smartcache import SmartCache, load_config
from smartcache.eval import SmartCacheSystem, evaluate, load_cases

ROOT = Path(__file__).resolve().parent.parent
DEVSET = ROOT / "docs" / "eval" / "devset"
# Kept unread while the rules are tuned (their -b / -c files): never scored unless named, never in a stream.
UNREAD = ("shapes-b", "typos-c", "en-f", "gates-b", "timely-b", "timely-d")


def run(sets: list[Path], modes: list[str], extra: list[Path], config_path: str | None = None) -> dict:
    config = load_config(config_path, store={"backend": "memory"})
    encoder = SmartCache(config).encoder
    system = SmartCacheSystem(lambda: SmartCache(config, encoder=encoder))
    report: dict = {"sets": {}}
    for path in sets + extra:
        cases = load_cases(path)
        report["sets"][path.stem] = {}
        for mode in modes:
            started = time.perf_counter()
            if mode == "case":
                result = evaluate([system], cases)
            else:
                result = evaluate([system], cases, competing=mode)
            r = result["systems"]["smartcache"]
            r["seconds"] = round(time.perf_counter() - started, 1)
            report["sets"][path.stem][mode] = {k: r[k] for k in ("overall", "by_category", "by_lang", "seconds")}
            o = r["overall"]
            print(f"{path.stem:12s} {mode:8s} n={o['n']:4d} recall={o['hit_recall']:.3f} "
                  f"false-hit={o['false_hit_rate']:.4f} (<= {o['false_hit_rate_upper95']:.4f}) {r['seconds']:.0f}s",
                  file=sys.stderr)
    return report


def _f(v: float | None, d: int = 3) -> str:
    return "–" if v is None else f"{v:.{d}f}"


def markdown(report: dict, before: dict | None, command: str) -> str:
    modes = [m for m in ("case", "session", "global") if any(m in s for s in report["sets"].values())]
    lines = [f"Produced by `{command}`.", "",
             "| set | lang | " + " | ".join(f"{m}: recall (lower) / false-hit (upper)" for m in modes) + " |",
             "|---|---|" + "---|" * len(modes)]
    for name, runs in report["sets"].items():
        for lang in sorted(next(iter(runs.values()))["by_lang"]):
            cells = []
            for m in modes:
                o = runs[m]["by_lang"][lang]
                cells.append(f"{_f(o['hit_recall'])} ({_f(o['hit_recall_lower95'])}) / {_f(o['false_hit_rate'], 4)} "
                             f"({_f(o['false_hit_rate_upper95'], 4)})")
            lines.append(f"| {name} | {lang} | " + " | ".join(cells) + " |")
    if before:
        lines += ["", "Recall by category, one case at a time, before and after (a change below -0.03 is marked):", "",
                  "| set | category | positives | before | after | change |", "|---|---|---|---|---|---|"]
        for name, runs in report["sets"].items():
            old = before["sets"].get(name, {}).get("case")
            if not old or "case" not in runs:
                continue
            for cat, r in runs["case"]["by_category"].items():
                was = old["by_category"].get(cat)
                if was is None or not r.get("positives"):
                    continue        # a category of expected misses has no recall to lose
                delta = r["hit_recall"] - was["hit_recall"]
                mark = " **(< -0.03)**" if delta < -0.03 else ""
                lines.append(f"| {name} | {cat} | {r['positives']} | {was['hit_recall']:.3f} | {r['hit_recall']:.3f} | "
                             f"{delta:+.3f}{mark} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", help="comma-separated set names (default: every set but the unread ones; "
                                       "none: only the --extra files)")
    parser.add_argument("--extra", action="append", default=[], help="another case file (the benchmark)")
    parser.add_argument("--modes", default="case,session,global")
    parser.add_argument("--json", dest="json_out", required=True)
    parser.add_argument("--md", help="the markdown tables")
    parser.add_argument("--before", help="an earlier --json (one case at a time) to compare recall with")
    parser.add_argument("--config", help="a TOML config merged over the defaults (another verifier, say)")
    args = parser.parse_args(argv)
    names = [] if args.sets == "none" else args.sets.split(",") if args.sets else \
        sorted(p.stem for p in DEVSET.glob("*.jsonl") if p.stem not in UNREAD)
    report = run([DEVSET / f"{n}.jsonl" for n in names], args.modes.split(","), [Path(p) for p in args.extra],
                 args.config)
    Path(args.json_out).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.md:
        before = json.loads(Path(args.before).read_text(encoding="utf-8")) if args.before else None
        Path(args.md).write_text(markdown(report, before, "python scripts/devsets_competing.py "
                                          + " ".join(argv if argv is not None else sys.argv[1:])), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
