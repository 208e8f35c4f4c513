"""``smartcache replay``: whole sessions run turn by turn, for hit rate, saved tokens and pollution."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from smartcache.cache import SmartCache
from smartcache.cli.console import fail, progress_bar
from smartcache.config import load_config
from smartcache.errors import SmartCacheError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("replay", help="run whole sessions turn by turn: hit rate, saved tokens, pollution")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sessions", help="JSONL of {session, messages}")
    source.add_argument("--crosswoz", help="a CrossWOZ zip (e.g. ../shared/data/crosswoz/val.json.zip)")
    source.add_argument("--cases", help="benchmark cases (CASES.md); their probes carry labels")
    parser.add_argument("--limit", type=int, help="replay only the first N sessions / cases")
    parser.add_argument("--json", dest="json_out", help="write the figures here")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache import eval as ev
    from smartcache.engine.local import ChatTokenizer
    from smartcache.eval import replay as rp

    try:
        if args.crosswoz:
            sessions = rp.crosswoz_sessions(args.crosswoz, args.limit)
        elif args.cases:
            sessions = rp.case_sessions(ev.load_cases(args.cases)[:args.limit])
        else:
            sessions = rp.load_sessions(args.sessions)[:args.limit]
        overrides = {"lifecycle": {"promotion_window_s": 0.0}}
        cache = SmartCache(load_config(args.config, **overrides))
    except (OSError, SmartCacheError) as exc:
        return fail(exc)
    print("smartcache: loading the bundled tokenizer…", file=sys.stderr)
    tokens = ChatTokenizer()
    stats = rp.replay(cache, sessions, tokens.count_tokens, progress=progress_bar("replay", len(sessions)))
    result = {"source": args.crosswoz or args.cases or args.sessions, **stats.to_json()}
    print(json.dumps(result, ensure_ascii=False, indent=2))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(result, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0
