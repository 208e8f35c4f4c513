"""``smartcache train``: the verifier trained on cases, source families held out, then calibrated."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from smartcache.cache import SmartCache
from smartcache.cli.console import fail
from smartcache.config import load_config
from smartcache.errors import SmartCacheError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("train", help="train the verifier on cases, hold source families out, calibrate")
    parser.add_argument("--data", default="build/training", help="a folder of *.jsonl cases, one source a file")
    parser.add_argument("--out", default="src/smartcache/data/verifier.json", help="where the model is written")
    parser.add_argument("--report", default="docs/eval/training", help="folder for training.md / .json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float, default=0.005,
                        help="false-hit rate the 95 %% upper bound must meet, requests with a history")
    parser.add_argument("--single-budget", type=float, default=0.02, help="the same for single-turn requests")
    parser.add_argument("--workers", type=int, default=2, help="harvest processes (one per core)")
    parser.add_argument("--reuse-harvest", action="store_true", help="reuse the report folder's harvest.npz")
    parser.add_argument("--harvest", help="where the harvest is kept (default: REPORT/harvest.npz)")
    parser.add_argument("--points", choices=("held_out", "calibration"), default="calibration",
                        help="choose the operating points on source-held-out predictions, or on a split of "
                             "every source kept out of the shipped model")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache.eval.train_run import train

    # Input errors are one line and exit status 2, as every other command gives them: checked
    # here, before the harvest starts its worker processes (whose tracebacks would bury them).
    data = Path(args.data)
    if not data.is_dir():
        return fail(f"the training data folder {data} does not exist (run scripts/build_training.py)")
    if not any(data.glob("*.jsonl")):
        return fail(f"no *.jsonl training cases in {data} (run scripts/build_training.py)")
    try:
        config = load_config(args.config, use_verifier=False, store={"backend": "memory"})
    except SmartCacheError as exc:
        return fail(exc)
    try:
        report = train(data, Path(args.out), Path(args.report), make_cache=lambda: SmartCache(config),
                       seed=args.seed, budget=args.budget, single_budget=args.single_budget, reuse_harvest=args.reuse_harvest,
                       command="smartcache " + " ".join(sys.argv[1:]), workers=args.workers,
                       points_on=args.points, harvest_path=Path(args.harvest) if args.harvest else None,
                       say=lambda m: print(m, file=sys.stderr))
    except (OSError, ValueError, SmartCacheError) as exc:
        return fail(exc)
    print((Path(args.report) / "training.md").read_text(encoding="utf-8"))
    print(f"wrote {args.out} ({report['trees']} trees) and {args.report}/training.md", file=sys.stderr)
    return 0
