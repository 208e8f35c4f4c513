"""``smartcache warmup``: recurring scenarios of logged sessions written into the store ``serve`` reads."""

from __future__ import annotations

import argparse
import json

from smartcache.cache import SmartCache
from smartcache.cli.console import fail
from smartcache.cli.store_options import add_sentinel_arguments, store_overrides
from smartcache.config import load_config
from smartcache.errors import SmartCacheError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("warmup", help="write recurring scenarios of historical sessions into the cache")
    parser.add_argument("--sessions", required=True, help="JSONL of {session, messages} (logged conversations)")
    parser.add_argument("--min-count", type=int, default=2, help="sessions a scenario must recur in")
    parser.add_argument("--per-session", action="store_true", help="write into the first asking session, not global")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.add_argument("--store", choices=("sqlite", "memory", "redis"), default="sqlite",
                        help="the store to warm, as serve reads it (default: serve's SQLite file)")
    parser.add_argument("--store-path", help="the SQLite file (default: as serve)")
    parser.add_argument("--redis-url", help="redis://HOST:PORT/DB (with --store redis)")
    add_sentinel_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache.eval import replay as rp

    try:
        sessions = rp.load_sessions(args.sessions)
        store = store_overrides(args)
        cache = SmartCache(load_config(args.config, store=store))
    except (OSError, SmartCacheError, ValueError) as exc:
        return fail(exc)
    report = rp.warmup(cache, sessions, min_count=args.min_count, to_global=not args.per_session)
    print(json.dumps({**report, "store": store}, ensure_ascii=False, indent=2))
    return 0
