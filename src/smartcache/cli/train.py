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
    parser.add_argument("--out", help="where the model is written (default: the packaged data/verifier.json; "
                                      "with --observations: build/verifier-refit.json)")
    parser.add_argument("--report", help="folder for training.md / .json (default: docs/eval/training; with "
                                         "--observations: build/refit, refit.md / .json)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budget", type=float,
                        help="false-hit rate the 95 %% upper bound must meet, requests with a history (default "
                             "0.005; with --observations: the packaged model's)")
    parser.add_argument("--single-budget", type=float,
                        help="the same for single-turn requests (default 0.02; with --observations: the packaged "
                             "model's)")
    parser.add_argument("--workers", type=int, default=2, help="harvest processes (one per core)")
    parser.add_argument("--reuse-harvest", action="store_true", help="reuse the report folder's harvest.npz")
    parser.add_argument("--harvest", help="where the harvest is kept (default: REPORT/harvest.npz)")
    parser.add_argument("--points", choices=("held_out", "calibration"), default="calibration",
                        help="choose the operating points on source-held-out predictions, or on a split of "
                             "every source kept out of the shipped model")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    refit = parser.add_argument_group("refitting on a tenant's traffic (issue 28)")
    refit.add_argument("--observations", metavar="SOURCE",
                       help="refit the packaged verifier on a tenant's labelled traffic beside the public rows of "
                            "--harvest: a file `smartcache replay --save-observations` wrote, or 'store' (the "
                            "configured store's rows of --tenant)")
    refit.add_argument("--tenant", default="default", help="with --observations store: whose rows")
    refit.add_argument("--held-back", type=float, default=0.3,
                       help="the newest share of the observations, held back to choose the points on")
    refit.add_argument("--weight", type=float, default=5.0, help="what one observation weighs against a public row")
    refit.add_argument("--until", type=float, metavar="T",
                       help="only observations made at or before time T (the cache's clock; a stream's t)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache.eval.train_run import train

    if args.observations:
        return run_refit(args)
    args.out = args.out or "src/smartcache/data/verifier.json"
    args.report = args.report or "docs/eval/training"
    args.budget = 0.005 if args.budget is None else args.budget
    args.single_budget = 0.02 if args.single_budget is None else args.single_budget
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


def run_refit(args: argparse.Namespace) -> int:
    """``--observations``: the packaged trees fitted again on the public rows and the tenant's."""
    import json as _json

    from smartcache.decide.verifier import TreeVerifier
    from smartcache.eval.refit import load_public, refit, write_report
    from smartcache.learn.observations import as_rows, decode

    out, report_dir = Path(args.out or "build/verifier-refit.json"), Path(args.report or "build/refit")
    if not args.harvest:
        return fail("--observations needs --harvest: the public rows (make train keeps them in "
                    "docs/eval/training/harvest.npz; a folder of *.harvest.npz is merged)")
    try:
        config = load_config(args.config)
        packaged = TreeVerifier.load(config.verifier_path or None)
        if args.observations == "store":
            text = SmartCache(config).backend.load_state(f"observations:{args.tenant}")
            if text is None:
                return fail(f"the configured store holds no observations of tenant {args.tenant!r}")
        else:
            text = Path(args.observations).read_text(encoding="utf-8")
        rows = decode(text, packaged.features)
        if args.until is not None:
            rows = [r for r in rows if r.at <= args.until]
        obs = as_rows(rows, packaged.features)
        public = load_public(Path(args.harvest))
        model, report = refit(public, obs, packaged, error_bound=config.learning.error_bound,
                              held_back=args.held_back, weight=args.weight, seed=args.seed,
                              budget=packaged.meta.get("budget", 0.02) if args.budget is None else args.budget,
                              single_budget=packaged.meta.get("single_budget", 0.01) if args.single_budget is None
                              else args.single_budget,
                              say=lambda m: print(m, file=sys.stderr))
    except (OSError, ValueError, KeyError, _json.JSONDecodeError, SmartCacheError) as exc:
        return fail(exc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_json.dumps(model.to_json(), separators=(",", ":")), encoding="utf-8")
    write_report(report, report_dir, "smartcache " + " ".join(sys.argv[1:]))
    print((report_dir / "refit.md").read_text(encoding="utf-8"))
    print(f"wrote {out}: serve with it by verifier_path = \"{out}\"", file=sys.stderr)
    return 0
