"""The store that ``serve`` and ``warmup`` open: the [store] table their --store flags ask for.

Both read the same flags the same way, so ``warmup`` fills the very file ``serve`` then serves from.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def add_sentinel_arguments(parser: argparse.ArgumentParser) -> None:
    """--redis-sentinel / --redis-service: the Redis store's primary found through Sentinel."""
    parser.add_argument("--redis-sentinel", metavar="HOST:PORT,...",
                        help="with --store redis: Redis Sentinels that name the primary (instead of --redis-url); "
                             "after a failover the gateway follows the promoted replica")
    parser.add_argument("--redis-service", metavar="NAME", help="the primary's name the sentinels monitor")


def store_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The [store] table the --store / --store-path / --redis-url / --redis-sentinel flags ask for
    (as serve reads them)."""
    if args.store == "redis":
        sentinel = getattr(args, "redis_sentinel", None)
        if sentinel:
            if args.redis_url:
                raise ValueError("give --redis-url or --redis-sentinel, not both")
            if not getattr(args, "redis_service", None):
                raise ValueError("--redis-sentinel needs --redis-service NAME")
            return {"backend": "redis", "url": "", "sentinels": sentinel, "service": args.redis_service}
        if not args.redis_url:
            raise ValueError("--store redis needs --redis-url (or --redis-sentinel and --redis-service)")
        return {"backend": "redis", "url": args.redis_url}
    if args.store == "sqlite":
        return {"backend": "sqlite", "path": args.store_path or str(default_data_dir() / "cache.db")}
    return {"backend": "memory", "path": ""}


def default_data_dir() -> Path:
    """Where ``serve`` keeps its SQLite file: $SMARTCACHE_DATA_DIR, else the XDG data home."""
    if os.environ.get("SMARTCACHE_DATA_DIR"):
        return Path(os.environ["SMARTCACHE_DATA_DIR"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "smartcache"
