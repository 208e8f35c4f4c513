"""``smartcache train-verifier``: the cross-encoder's adapter, trained on the harvest and the public pairs.

    smartcache train-verifier --data build/training --out src/smartcache/data/cross_encoder.npz

It harvests the cases (or reuses ``--harvest``), trains one model per half of the
source families for the held-out probabilities that ``smartcache train --cross-encoder``
stacks, then the shipped adapter on everything. Interrupted, it goes on from its last
checkpoint in ``--work``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from smartcache.cli.console import fail
from smartcache.errors import SmartCacheError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("train-verifier", help="train the cross-encoder's adapter (resumable)")
    parser.add_argument("--data", default="build/training", help="a folder of *.jsonl cases, one source a file")
    parser.add_argument("--harvest", default="docs/eval/training/harvest.npz",
                        help="the harvest of --data; made (and kept here) when absent")
    parser.add_argument("--work", default="build/cross-encoder",
                        help="checkpoints and the held-out probabilities")
    parser.add_argument("--out", default="src/smartcache/data/cross_encoder.npz", help="where the adapter is written")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--public", type=float, default=1.0,
                        help="share of the further public pairs to add (0: the harvest's rows alone)")
    parser.add_argument("--workers", type=int, default=2, help="harvest processes (one per core)")
    parser.add_argument("--leave-out", default="", metavar="LIST",
                        help="public sets left out of the further pairs, comma-separated (bq: the streams' held-out source)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache.cache import SmartCache
    from smartcache.config import load_config
    from smartcache.eval.cross_training import PUBLIC, Settings, train_all
    from smartcache.eval.training import Harvest, harvest_dir
    from smartcache.paths import shared_data

    harvest_path, data = Path(args.harvest), Path(args.data)
    if args.epochs <= 0 or args.public < 0:
        return fail("--epochs must be positive and --public not negative")
    try:
        if harvest_path.exists():
            h = Harvest.load(harvest_path)
            print(f"harvest reused from {harvest_path}", file=sys.stderr)
        else:
            if not data.is_dir() or not any(data.glob("*.jsonl")):
                return fail(f"no *.jsonl training cases in {data} (run scripts/build_training.py)")
            config = load_config(None, use_verifier=False, store={"backend": "memory"})
            h = harvest_dir(data, lambda: SmartCache(config), workers=args.workers,
                            say=lambda m: print(m, file=sys.stderr))
            harvest_path.parent.mkdir(parents=True, exist_ok=True)
            h.save(harvest_path)
        public_dir = shared_data() if args.public > 0 else None
        left_out = {name.strip() for name in args.leave_out.split(",") if name.strip()}
        if left_out - set(PUBLIC):
            return fail(f"--leave-out names no public set: {sorted(left_out - set(PUBLIC))} (of {sorted(PUBLIC)})")
        counts = {k: int(v * args.public) for k, v in PUBLIC.items() if k not in left_out}
        meta = train_all(h, Path(args.out), Path(args.work), Settings(epochs=args.epochs, seed=args.seed),
                         data=public_dir, public=counts, say=lambda m: print(m, file=sys.stderr))
    except (OSError, ValueError, SmartCacheError) as exc:
        return fail(exc)
    print(json.dumps(meta, indent=1))
    print(f"wrote {args.out}; held-out probabilities in {Path(args.work) / 'held_out.npz'}", file=sys.stderr)
    return 0
