"""``smartcache replay``: whole sessions run turn by turn, for hit rate, saved tokens and pollution;
or a traffic stream (``STREAMS.md``) through several systems side by side, for hit and error rates."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
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
    source.add_argument("--stream", help="a traffic stream (STREAMS.md): every system replays it from an empty cache")
    parser.add_argument("--systems", default="smartcache,smartcache@global,smartcache@session,exact,cosine@0.95",
                        help="with --stream: smartcache[@global|@session][:D] (learning, error bound D), "
                             "static[@global|@session] (the packaged path, no learning), exact, cosine@T, vcache@D "
                             "(vCache with error bound D; comma-separated)")
    parser.add_argument("--error-bound", type=float, metavar="D",
                        help="with --stream: δ of the learning cache (default: the config's learning.error_bound); "
                             "a system may name its own, as smartcache@global:0.02")
    parser.add_argument("--promote-window", action="store_true",
                        help="with --stream: answers wait out the promotion window on the stream's clock "
                             "(default: promoted as soon as stored)")
    parser.add_argument("--window", type=int, default=500, help="with --stream: requests per window of the curves")
    parser.add_argument("--report", metavar="FILE.md", help="with --stream: a markdown report, and a PNG plot beside it")
    parser.add_argument("--limit", type=int, help="replay only the first N sessions / cases")
    parser.add_argument("--json", dest="json_out", help="write the figures here")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.add_argument("--save-observations", metavar="DIR",
                        help="with --stream: write the labelled evidence each learning system gathered, one "
                             "file a system and tenant (DIR/SYSTEM.TENANT.json), for smartcache train --observations")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from smartcache import eval as ev
    from smartcache.engine.local import ChatTokenizer
    from smartcache.eval import replay as rp

    if args.stream:
        return run_stream(args)
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


def make_stream_systems(names: list[str], config, encoder, *, promote_at_once: bool = True) -> list:
    """The systems of a stream replay by name (see ``smartcache.eval.streams``); ValueError on
    an unknown name."""
    from smartcache.eval import streams as st

    out = []
    for name in names:
        if name.startswith(("smartcache", "static")):
            # smartcache[@scope][:δ] learns from its traffic; static[@scope] is the packaged path without learning.
            base, _, bound = name.partition(":")
            scope = base.partition("@")[2] or "stream"
            learning = {"enabled": name.startswith("smartcache")}
            if bound:
                learning["error_bound"] = float(bound)
            system_config = replace(config, learning=replace(config.learning, **learning))
            out.append(st.SmartCacheStream(
                lambda clock, c=system_config: SmartCache(c, encoder=encoder, clock=clock), name, scope=scope,
                promote_at_once=promote_at_once))
        elif name == "exact":
            out.append(st.ExactStream())
        elif name.startswith("cosine@"):
            out.append(st.CosineStream(encoder, float(name.partition("@")[2])))
        elif name.startswith("vcache@"):
            from smartcache.eval.vcache import VCacheStream
            out.append(VCacheStream(encoder, float(name.partition("@")[2])))
        else:
            raise ValueError(f"unknown system {name!r}: smartcache[@global|@session][:D], static[@global|@session], "
                             "exact, cosine@T, vcache@D")
    return out


OBSERVATIONS_KEPT = 100_000     # rows a replay keeps a tenant for --save-observations (a stream is a few thousand)


def run_stream(args: argparse.Namespace) -> int:
    from smartcache.eval import streams as st

    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    try:
        requests = st.load_stream(args.stream)[:args.limit]
        overrides: dict = {"store": {"backend": "memory"}}
        if args.error_bound is not None:
            overrides["learning"] = {"error_bound": args.error_bound}
        if args.save_observations:       # kept only when asked for (learning.observations_kept)
            overrides.setdefault("learning", {})["observations_kept"] = OBSERVATIONS_KEPT
        config = load_config(args.config, **overrides)
        encoder = SmartCache(config).encoder        # one encoder (and memo) for every system
        systems = make_stream_systems(names, config, encoder, promote_at_once=not args.promote_window)
    except (OSError, ValueError, SmartCacheError) as exc:
        return fail(exc)
    bar = progress_bar("stream", len(requests) * len(systems))
    report = {"stream": args.stream, **st.replay_stream(requests, systems, window=args.window, progress=bar)}
    command = "smartcache " + " ".join(sys.argv[1:])
    text = st.markdown(report, command)
    print(text)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.save_observations:
        _save_observations(systems, Path(args.save_observations))
    if args.report:
        path = Path(args.report)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + f"\n![curves]({path.with_suffix('.png').name})\n", encoding="utf-8")
        st.plot(report, path.with_suffix(".png"))
    return 0


def _save_observations(systems: list, folder: Path) -> None:
    """Each learning system's observations per tenant, in the store's own format."""
    from smartcache.eval.streams import SmartCacheStream
    from smartcache.learn.observations import encode_rows

    folder.mkdir(parents=True, exist_ok=True)
    for system in systems:
        if not isinstance(system, SmartCacheStream) or system.cache.policy is None:
            continue
        for tenant in system.cache.policy.tenants():
            rows = system.cache.observations(tenant)
            if not len(rows):
                continue
            path = folder / f"{system.name.replace(':', '_').replace('@', '-')}.{tenant}.json"
            path.write_text(encode_rows(rows), encoding="utf-8")
            print(f"wrote {len(rows)} observations to {path}", file=sys.stderr)
