"""``smartcache eval``: SmartCache and the baselines scored on the same cases (CASES.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from smartcache.cache import SmartCache
from smartcache.cli.console import fail, progress_bar
from smartcache.config import load_config
from smartcache.errors import SmartCacheError

# eval --ablate NAME turns one rule family off: the config switch it flips.
ABLATIONS = {"tags": "use_tags", "change_detection": "use_change_detection", "validation": "use_validation",
             "context_view": "use_context_view", "verifier": "use_verifier"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("eval", help="score SmartCache and the baselines on cases (CASES.md format)")
    parser.add_argument("--cases", required=True, help="a JSONL file of cases")
    parser.add_argument("--json", dest="json_out", help="write the full report here")
    parser.add_argument("--shared-cache", action="store_true", help="write every case's entries into one cache first")
    parser.add_argument("--competing", choices=("session", "global"),
                        help="every case's entries compete in one cache: one session for all cases, or the "
                             "tenant's global pool with each probe from a session of its own")
    parser.add_argument("--systems", default="smartcache,exact_prefix,last_message,full_context")
    parser.add_argument("--baseline-threshold", type=float, default=0.8,
                        help="cosine threshold of last_message and full_context (GPTCache's default is 0.8)")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.add_argument("--ablate", metavar="LIST",
                        help="also run SmartCache with each of these off: "
                             "tags,change_detection,validation,context_view,verifier")
    parser.add_argument("--failures", metavar="FILE.jsonl",
                        help="write every wrong outcome of smartcache with its reasons")
    parser.add_argument("--report", metavar="FILE.md", help="write a markdown report (tables and a PNG plot beside it)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import time

    from smartcache import eval as ev

    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = set(names) - set(ev.SYSTEM_NAMES)
    if unknown or not names:
        return fail(f"unknown systems {sorted(unknown)}; choose from {ev.SYSTEM_NAMES}")
    try:
        cases = ev.load_cases(args.cases)
        config = load_config(args.config)
        encoder = SmartCache(config).encoder          # one encoder (and memo) for every system
    except (OSError, SmartCacheError) as exc:
        return fail(exc)
    ablations = [a.strip() for a in (args.ablate or "").split(",") if a.strip()]
    if set(ablations) - set(ABLATIONS):
        return fail(f"unknown ablations {sorted(set(ablations) - set(ABLATIONS))}; choose from {sorted(ABLATIONS)}")
    make = {"smartcache": lambda: ev.SmartCacheSystem(lambda: SmartCache(config, encoder=encoder)),
            "exact_prefix": ev.ExactPrefixSystem,
            "last_message": lambda: ev.LastMessageSystem(encoder, args.baseline_threshold),
            "full_context": lambda: ev.FullContextSystem(encoder, args.baseline_threshold)}
    started = time.perf_counter()
    systems = [make[n]() for n in names]
    for ablation in ablations:
        variant = load_config(args.config, **{ABLATIONS[ablation]: False})
        systems.append(ev.SmartCacheSystem(lambda v=variant: SmartCache(v, encoder=encoder), f"smartcache-no_{ablation}"))
    wrong: list[dict[str, Any]] = []

    from smartcache.eval.harness import compete
    scored = compete(cases, args.competing) if args.competing else cases     # as evaluate scores them

    def keep_failures(name: str, outcomes) -> None:
        if name == "smartcache" or (not wrong and name.startswith("smartcache")):
            wrong[:] = ev.failures(scored, outcomes)

    report = ev.evaluate(systems, cases, shared_cache=args.shared_cache, competing=args.competing,
                         progress_factory=progress_bar, on_outcomes=keep_failures if args.failures else None)
    if args.failures:
        with open(args.failures, "w", encoding="utf-8") as fh:
            for row in wrong:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {len(wrong)} failures to {args.failures}", file=sys.stderr)
    report.update({"encoder": encoder.name, "cases": args.cases, "competing": args.competing, "seconds": round(time.perf_counter() - started, 2)})
    print(ev.format_table(report, "by_category"))
    print()
    print(ev.format_table(report, "by_lang").split("\n\nOracle")[0])
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    if args.report:
        from smartcache.eval.report import write_report
        write_report(report, Path(args.report), "smartcache " + " ".join(sys.argv[1:]))
    return 0
