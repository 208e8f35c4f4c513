"""``smartcache serve``: the OpenAI-compatible gateway, with its engine, store and auth options.

It starts the bundled engine (or a client of an upstream), the store the --store
flags ask for, and the real encoder by default; who may call it comes from --keys /
--trust-tenant-header over the config's [auth] table, and the admin token from the
environment or a file (``admin_token.py``: never only the command line, which every
local user can read).

``--workers N`` (default: the cores this process may use) runs N worker processes on
one port (``serve_workers.py``), sharing the store, with the bundled engine loaded once
in a process of its own; ``--workers 1`` is the single process: gateway and engine in one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING

from smartcache.cache import SmartCache
from smartcache.cli.admin_token import ENV as ADMIN_TOKEN_ENV
from smartcache.cli.admin_token import resolve_admin_token
from smartcache.cli.console import fail
from smartcache.cli.store_options import add_sentinel_arguments, store_overrides
from smartcache.config import AuthConfig, CacheConfig, load_config
from smartcache.errors import SmartCacheError

if TYPE_CHECKING:
    from smartcache.gateway.auth import AuthPolicy

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("serve", help="run the OpenAI-compatible caching gateway")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--upstream", help="an OpenAI-compatible base URL (…/v1); default: the bundled engine")
    parser.add_argument("--upstream-key-env", default="SMARTCACHE_UPSTREAM_KEY",
                        help="environment variable holding the upstream API key")
    parser.add_argument("--upstream-model", help="the model an upstream serves (default: as each request names)")
    parser.add_argument("--tokenizer", help="tokenizer id for the version key with an upstream")
    parser.add_argument("--upstream-timeout", type=float, default=120.0, help="seconds")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.add_argument("--shadow", type=float, default=0.0, metavar="RATE",
                        help="share of ordinary hits verified against the engine in the background")
    parser.add_argument("--promotion-window", type=float, metavar="S",
                        help="seconds an answer stays pending before it can be served (default 30)")
    parser.add_argument("--regenerate-window", type=float, default=60.0, metavar="S",
                        help="an identical request within this many seconds counts as regenerate")
    parser.add_argument("--no-cache", action="store_true", help="forward everything; the engine alone")
    parser.add_argument("--keep-alive", type=float, default=75.0, metavar="S",
                        help="seconds an idle client connection is kept open (default: %(default)s)")
    parser.add_argument("--max-body-bytes", type=int, metavar="N",
                        help="refuse a larger request body with 413 (default: 8 MiB)")
    parser.add_argument("--max-messages", type=int, metavar="N",
                        help="refuse a request with more messages with 400 (default: 1000)")
    parser.add_argument("--max-message-chars", type=int, metavar="N",
                        help="refuse a request with a longer message with 400 (default: 400000)")
    parser.add_argument("--store", choices=("sqlite", "memory", "redis"), default="sqlite",
                        help="sqlite (default): entries survive restarts; memory: gone with the process; "
                             "redis: shared by replicas")
    parser.add_argument("--redis-url", help="redis://HOST:PORT/DB of a Redis Stack server (with --store redis)")
    add_sentinel_arguments(parser)
    parser.add_argument("--store-path", help="the SQLite file (default: $SMARTCACHE_DATA_DIR or "
                                             "~/.local/share/smartcache, cache.db)")
    parser.add_argument("--kv-budget-mb", type=int, default=512, help="memory for the bundled engine's KV prefixes")
    parser.add_argument("--max-tokens", type=int, default=256, help="default max_tokens of a request")
    parser.add_argument("--admin-token", metavar="TOKEN",
                        help="require Authorization: Bearer TOKEN on /admin (never a tenant's key); visible to "
                             f"other local users, so prefer ${ADMIN_TOKEN_ENV} or --admin-token-file")
    parser.add_argument("--admin-token-file", metavar="PATH",
                        help=f"read the admin token from this file (default: ${ADMIN_TOKEN_ENV}, else the "
                             "config's [auth] admin_token_file, else no token)")
    parser.add_argument("--keys", metavar="FILE",
                        help="API keys (TOML) mapping each key or its sha256 to a tenant and its namespaces; "
                             "requests then need one (default: [auth] keys_file, else no keys: one local tenant)")
    parser.add_argument("--trust-tenant-header", action="store_true",
                        help="honour x-tenant-id as sent: only behind a proxy that authenticates the tenant")
    parser.add_argument("--warmup", metavar="FILE", help="before serving, warm the cache from logged sessions (JSONL)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="gateway processes sharing the port and the store (default: the number of cores; "
                             "--store memory: 1); with N > 1 the bundled engine runs once, in a process of its own")
    parser.add_argument("--lease-ttl", type=float, default=5.0, metavar="S",
                        help="with --workers N > 1: seconds the worker running the lifecycle (promotion, purge, "
                             "eviction) holds its lease; another takes over this long after it dies")
    parser.add_argument("--log-level", default="info")
    parser.set_defaults(run=run)


def worker_count(args: argparse.Namespace) -> int:
    """--workers, else the cores this process may run on; a memory store (one process's
    memory, which no other process sees) gets 1 unless --workers asks for more, which is an error."""
    if args.workers is not None:
        if args.workers < 1:
            raise ValueError("--workers takes a count of 1 or more")
        if args.workers > 1 and args.store == "memory":
            raise ValueError("--store memory lives in one process and cannot be shared by --workers "
                             f"{args.workers}: use --store sqlite (the default) or redis, or --workers 1")
        return args.workers
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if args.store == "memory":
        if cores > 1:
            print("smartcache: warning: --store memory serves from one process (it cannot be shared): "
                  "1 worker; --store sqlite or redis runs one per core", file=sys.stderr)
        return 1
    return max(1, cores)


def run(args: argparse.Namespace) -> int:
    import logging

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not 0.0 <= args.shadow <= 1.0:
        return fail("--shadow takes a rate between 0 and 1")
    if not args.lease_ttl > 0:
        return fail("--lease-ttl takes a positive number of seconds")
    try:
        workers = worker_count(args)
    except ValueError as exc:
        return fail(exc)
    if workers > 1:
        from smartcache.cli.serve_workers import run_workers
        return run_workers(args, workers)
    import uvicorn

    try:
        config, admin_token, auth = prepare(args)
        cache = SmartCache(config)
        if args.warmup:
            _warmup(cache, args.warmup)
        if args.upstream:
            engine = upstream_engine(args)
        else:
            from smartcache.engine.local import LocalEngine
            print("smartcache: loading the bundled engine (SmolLM2-135M-Instruct)…", file=sys.stderr)
            engine = LocalEngine(kv_budget_mb=args.kv_budget_mb)
    except (OSError, SmartCacheError, ValueError) as exc:
        return fail(exc)
    app = build_app(args, cache, engine, admin_token, auth)
    print(f"smartcache: serving on http://{args.host}:{args.port}  (dashboard: /dashboard)", file=sys.stderr)
    # Idle keep-alive connections outlive the clients' and proxies' own (httpx: 5 s, nginx: 60 s):
    # a server that closes first races a client reusing the connection, and resets a request.
    # uvloop and httptools (C parsers and loop) rather than asyncio and h11: about a fifth more
    # word-for-word hits a second (docs/results.md, issue 29).
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower(),
                timeout_keep_alive=args.keep_alive, loop="uvloop", http="httptools")
    return 0


def prepare(args: argparse.Namespace, *, quiet: bool = False) -> tuple[CacheConfig, str | None, AuthPolicy]:
    """The config the flags ask for, the admin token and who the callers are. Credentials come
    first: a mistake there stops serve before the encoder and engine load. ``quiet``: say nothing
    (a worker of ``--workers N``, whose parent said it once)."""
    overrides = {}
    if args.promotion_window is not None:
        overrides["lifecycle"] = {"promotion_window_s": args.promotion_window}
    overrides["store"] = store_overrides(args)
    if args.store == "sqlite" and not quiet:
        print(f"smartcache: cache entries persist in {overrides['store']['path']}", file=sys.stderr)
    config = load_config(args.config, **overrides)
    admin_token = _admin_token(args, config.auth, quiet=quiet)
    return config, admin_token, _auth_policy(args, config.auth, admin_token, quiet=quiet)


def _warmup(cache: SmartCache, path: str) -> None:
    from smartcache.eval.replay import load_sessions, warmup
    print(f"smartcache: warm-up {json.dumps(warmup(cache, load_sessions(path)))}", file=sys.stderr)


def upstream_engine(args: argparse.Namespace):
    from smartcache.engine.upstream import UpstreamEngine
    return UpstreamEngine(args.upstream, api_key=os.environ.get(args.upstream_key_env), model=args.upstream_model,
                          tokenizer=args.tokenizer, timeout_s=args.upstream_timeout)


def build_app(args: argparse.Namespace, cache: SmartCache, engine, admin_token: str | None, auth: AuthPolicy,
              *, workers: int = 1):
    from smartcache.gateway import GatewaySettings, create_app

    settings = GatewaySettings(cache_enabled=not args.no_cache, shadow_rate=args.shadow,
                               regenerate_window_s=args.regenerate_window, default_max_tokens=args.max_tokens,
                               workers=workers,
                               **{name: value for name in ("max_body_bytes", "max_messages", "max_message_chars")
                                  if (value := getattr(args, name)) is not None})
    # Beyond loopback, an admin API without a token would hand every tenant's answers to the network.
    return create_app(cache, engine, settings, admin_token=admin_token, auth=auth,
                      close_admin=args.host not in LOOPBACK, close_store=True)


def _admin_token(args: argparse.Namespace, config: AuthConfig, *, quiet: bool = False) -> str | None:
    """The admin token from the flags, the environment or the config's file; says where from."""
    found = resolve_admin_token(args.admin_token, args.admin_token_file, os.environ, config.admin_token_file)
    if found is None or quiet:
        return None if found is None else found.token
    for warning in found.warnings:
        print(f"smartcache: warning: {warning}", file=sys.stderr)
    print(f"smartcache: /admin needs the admin token (from {found.source})", file=sys.stderr)
    return found.token


def _auth_policy(args: argparse.Namespace, config: AuthConfig, admin_token: str | None, *,
                 quiet: bool = False) -> AuthPolicy:
    """Who the callers are: --keys / --trust-tenant-header over the config's [auth] table."""
    from smartcache.gateway.auth import AuthPolicy, KeyRegistry

    keys_file = args.keys or config.keys_file
    registry = KeyRegistry.load(keys_file) if keys_file else None
    policy = AuthPolicy(registry, trust_tenant_header=args.trust_tenant_header or config.trust_tenant_header)
    policy.check_admin_token(admin_token)      # before the engine takes its 25 s to load
    if quiet:
        return policy
    if registry is not None:
        print(f"smartcache: API keys from {keys_file}: {len(registry.keys)} keys, {len(registry.tenants)} tenants, "
              f"{len(registry.secrets)} with signed sessions", file=sys.stderr)
    elif not policy.trust_tenant_header and args.host not in LOOPBACK:
        print(f"smartcache: warning: serving on {args.host} without --keys: every client is one tenant and "
              "reads every cached answer", file=sys.stderr)
    if policy.trust_tenant_header:
        print("smartcache: x-tenant-id is trusted as sent: only a proxy that authenticates may reach this port",
              file=sys.stderr)
    return policy
