"""The store that ``serve`` and ``warmup`` open: the [store] table their --store flags ask for.

Both read the same flags the same way, so ``warmup`` fills the very file ``serve`` then serves from.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def store_overrides(args: argparse.Namespace) -> dict[str, str]:
    """The [store] table the --store / --store-path / --redis-url flags ask for (as serve reads them)."""
    if args.store == "redis":
        if not args.redis_url:
            raise ValueError("--store redis needs --redis-url")
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
