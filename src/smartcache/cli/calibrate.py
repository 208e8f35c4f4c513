"""``smartcache calibrate``: hit thresholds from labelled pairs, or from labelled cases through the pipeline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from smartcache.cache import SmartCache
from smartcache.cli.console import fail, progress_bar
from smartcache.config import load_config
from smartcache.errors import SmartCacheError
from smartcache.paths import shared_data


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("calibrate",
                                   help="thresholds from labelled pairs: p95 of negatives and a target false-hit rate")
    parser.add_argument("--pairs", default="qqp,lcqmc,bq,pawsx", help="public pair sets under ../shared/data")
    parser.add_argument("--cases", help="calibrate from labelled cases (CASES.md) through the whole pipeline instead")
    parser.add_argument("--data-dir", help="where the pair sets are (default: ../shared/data beside the repo)")
    parser.add_argument("--limit", type=int, default=10000, help="pairs sampled per set (seed 0)")
    parser.add_argument("--target", type=float, default=1e-4, help="false-hit rate the threshold must meet")
    parser.add_argument("--out", default="build/calibration", help="folder for thresholds.toml, the report and plot")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return _from_cases(args) if args.cases else _from_pairs(args)


def _from_pairs(args: argparse.Namespace) -> int:
    """Thresholds from public labelled pair sets: raw cosines, no rules."""
    import numpy as np

    from smartcache.eval import calibrate as cal

    data_dir = Path(args.data_dir) if args.data_dir else shared_data()
    if data_dir is None:
        return fail("../shared/data not found; give --data-dir or set $SMARTCACHE_SHARED_DATA")
    names = [n.strip() for n in args.pairs.split(",") if n.strip()]
    unknown = set(names) - set(cal.SET_DOMAINS)
    if unknown:
        return fail(f"unknown pair sets {sorted(unknown)}; choose from {sorted(cal.SET_DOMAINS)}")
    try:
        config = load_config(args.config)
        encoder = SmartCache(config).encoder
        sets = {n: cal.load_pair_set(n, data_dir, limit=args.limit) for n in names}
    except (OSError, SmartCacheError) as exc:
        return fail(f"{exc} (pairs are read from {data_dir})")
    results = []
    for name, rows in sets.items():
        bar = progress_bar(f"encode {name}", len(rows))
        cosines = cal.pair_cosines(encoder, rows, progress=(lambda n, b=bar: [b() for _ in range(n)]) if bar else None)
        labels = np.asarray([r[2] for r in rows])
        results.append(cal.calibrate_scores(name, cal.SET_DOMAINS[name], cosines, labels, args.target))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = config.table_for(encoder.name).default
    (out / "thresholds.toml").write_text(cal.thresholds_toml(encoder.name, results, half_hit=table.half_hit,
                                                             context=table.context), encoding="utf-8")
    cal.plot(results, out / "calibration.png")
    command = "smartcache calibrate " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "smartcache calibrate"
    report = cal.markdown(results, encoder.name, "calibration.png", command)
    (out / "calibration.md").write_text(report, encoding="utf-8")
    (out / "calibration.json").write_text(json.dumps([r.to_json() for r in results], indent=2), encoding="utf-8")
    print(report)
    print(f"wrote {out / 'thresholds.toml'}, {out / 'calibration.md'}, {out / 'calibration.png'}", file=sys.stderr)
    return 0


def _from_cases(args: argparse.Namespace) -> int:
    """Per-domain hit thresholds from labelled cases, through the whole pipeline."""
    import dataclasses

    from smartcache import eval as ev
    from smartcache.eval import calibrate as cal

    try:
        cases = ev.load_cases(args.cases)
        base = load_config(args.config)
        encoder = SmartCache(base).encoder
        floor = base.table_for(encoder.name).default.half_hit
        # Hit threshold at the floor for every tier and domain: the rules alone decide who is served.
        tables = {"default": {"hit": floor}, "tier": {t: {"hit": floor} for t in ("low", "medium", "high")}}
        # The cosine thresholds calibrated here are those of the rules-only path (use_verifier =
        # false); the verifier's operating points come from `smartcache train`.
        low = load_config(args.config, thresholds={encoder.name: tables}, use_verifier=False)
        table = low.table_for(encoder.name)
        # Domain overrides of a user's config would lift the floor again: drop them here.
        low = dataclasses.replace(low, thresholds={encoder.name: dataclasses.replace(table, by_domain={})})
    except (OSError, SmartCacheError) as exc:
        return fail(exc)
    scores = cal.case_scores(lambda: SmartCache(low, encoder=encoder), cases,
                             progress=progress_bar("calibrate", len(cases)))
    results = [cal.calibrate_scores(domain, domain, cos, labels, args.target, floor=floor)
               for domain, (cos, labels) in sorted(scores.items())]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = base.table_for(encoder.name).default
    (out / "thresholds.toml").write_text(cal.thresholds_toml(encoder.name, results, half_hit=table.half_hit,
                                                             context=table.context), encoding="utf-8")
    cal.plot(results, out / "calibration.png")
    command = "smartcache " + " ".join(sys.argv[1:])
    report = cal.markdown(results, encoder.name, "calibration.png", command)
    report = report.replace("Raw cosines of the normalised pair texts (no rules).",
                            "Turn cosines of the hits the rules let through (hit threshold at the floor), per detected "
                            "domain; positives are correct hits, negatives served wrong answers.")
    (out / "calibration.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"wrote {out / 'thresholds.toml'}", file=sys.stderr)
    return 0
