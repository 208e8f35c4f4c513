"""Command line.

``smartcache serve`` starts the gateway (bundled engine, in-process store, real
encoder by default). ``smartcache explain CASE.json`` prints a decision and
every reason behind it. For explain, the input is one case in the evaluation format (CASES.md): the ``cached``
entries are written and promoted, then the ``probe`` is looked up, so a user can
see exactly why a request would hit, half-hit or miss.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from smartcache.cache import SmartCache
from smartcache.cli.console import fail, progress_bar
from smartcache.cli.store_options import store_overrides
from smartcache.config import AuthConfig, load_config
from smartcache.errors import SmartCacheError
from smartcache.paths import shared_data

if TYPE_CHECKING:
    from smartcache.gateway.auth import AuthPolicy


def explain_case(cache: SmartCache, case: dict[str, Any]) -> dict[str, Any]:
    """Write a case's cached entries, look up its probe, and return the decision as JSON."""
    if not isinstance(case, dict) or "probe" not in case:
        raise SmartCacheError("a case needs a 'probe' with 'messages' (see CASES.md)")
    session = case.get("session") or case.get("id") or "explain"
    tenant = case.get("tenant", "default")
    versions = case.get("versions")
    written = []
    for i, item in enumerate(case.get("cached", [])):
        result = cache.store(item["messages"], item["answer"], session=session, tenant=tenant,
                             versions=item.get("versions", versions), scope=case.get("scope", "session"))
        if result.stored:
            cache.promote(result.cache_id, to_global=case.get("scope") == "global")
        written.append({"index": i, "stored": result.stored, "entry": result.cache_id, "reason": result.reason})
    probe = case["probe"]
    decision = cache.lookup(probe["messages"], session=case.get("probe_session", session), tenant=tenant,
                            versions=probe.get("versions", versions))
    fp, _ = cache.fingerprint(probe["messages"], versions=probe.get("versions", versions))
    out = {"id": case.get("id"), "cached": written, "decision": decision.to_json(),
           "probe_tags": {**fp.signature.coarse_tags(), "topic_switch": fp.topic_switch,
                          "time_sensitive": fp.time_sensitive, "resolved_turn": fp.signature.text}}
    if "expect" in case:
        out["expect"] = case["expect"]
        out["as_expected"] = decision.zone.value == case["expect"]
    return out


def _print_human(result: dict[str, Any]) -> None:
    d = result["decision"]
    print(f"zone: {d['zone']}" + (f"   (expected {result['expect']})" if "expect" in result else ""))
    print(f"entry: {d['entry']}   turn cosine: {d['scores']['turn']}   context cosine: {d['scores']['context']}")
    if d["answer"]:
        print(f"answer: {d['answer'][:200]}")
    print("reasons:")
    for r in d["reasons"]:
        print(f"  - {r['code']}: {r['detail']}")
    tags = result["probe_tags"]
    print("probe tags: " + ", ".join(f"{k}={v}" for k, v in tags.items()))


def _eval(args: argparse.Namespace) -> int:
    import time

    from smartcache import eval as ev

    names = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = set(names) - set(ev.SYSTEM_NAMES)
    if unknown or not names:
        return fail(f"unknown systems {sorted(unknown)}; choose from {ev.SYSTEM_NAMES}")
    try:
        cases = ev.load_cases(args.cases)
        config = load_config(args.config)
        encoder = SmartCache(config).encoder          # one encoder (and memo) for every system
    except (OSError, SmartCacheError) as exc:
        return fail(exc)
    ablations = [a.strip() for a in (args.ablate or "").split(",") if a.strip()]
    if set(ablations) - set(ABLATIONS):
        return fail(f"unknown ablations {sorted(set(ablations) - set(ABLATIONS))}; choose from {sorted(ABLATIONS)}")
    make = {"smartcache": lambda: ev.SmartCacheSystem(lambda: SmartCache(config, encoder=encoder)),
            "exact_prefix": ev.ExactPrefixSystem,
            "last_message": lambda: ev.LastMessageSystem(encoder, args.baseline_threshold),
            "full_context": lambda: ev.FullContextSystem(encoder, args.baseline_threshold)}
    started = time.perf_counter()
    systems = [make[n]() for n in names]
    for ablation in ablations:
        variant = load_config(args.config, **{ABLATIONS[ablation]: False})
        systems.append(ev.SmartCacheSystem(lambda v=variant: SmartCache(v, encoder=encoder), f"smartcache-no_{ablation}"))
    wrong: list[dict[str, Any]] = []

    def keep_failures(name: str, outcomes) -> None:
        if name == "smartcache" or (not wrong and name.startswith("smartcache")):
            wrong[:] = ev.failures(cases, outcomes)

    report = ev.evaluate(systems, cases, shared_cache=args.shared_cache,
                         progress_factory=progress_bar, on_outcomes=keep_failures if args.failures else None)
    if args.failures:
        with open(args.failures, "w", encoding="utf-8") as fh:
            for row in wrong:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"wrote {len(wrong)} failures to {args.failures}", file=sys.stderr)
    report.update({"encoder": encoder.name, "cases": args.cases, "seconds": round(time.perf_counter() - started, 2)})
    print(ev.format_table(report, "by_category"))
    print()
    print(ev.format_table(report, "by_lang").split("\n\nOracle")[0])
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    if args.report:
        from smartcache.eval.report import write_report
        write_report(report, Path(args.report), "smartcache " + " ".join(sys.argv[1:]))
    return 0


# eval --ablate NAME turns one rule family off: the config switch it flips.
ABLATIONS = {"tags": "use_tags", "change_detection": "use_change_detection", "validation": "use_validation",
             "context_view": "use_context_view", "verifier": "use_verifier"}


def _calibrate(args: argparse.Namespace) -> int:
    import numpy as np

    from smartcache.eval import calibrate as cal

    if args.cases:
        return _calibrate_cases(args)
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


def _replay(args: argparse.Namespace) -> int:
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


def _warmup(args: argparse.Namespace) -> int:
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


def _calibrate_cases(args: argparse.Namespace) -> int:
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


def _train(args: argparse.Namespace) -> int:
    from smartcache.eval.train_run import train

    data = Path(args.data)
    if not any(data.glob("*.jsonl")):
        return fail(f"no *.jsonl training cases in {data} (run scripts/build_training.py)")
    config = load_config(args.config, use_verifier=False, store={"backend": "memory"})
    try:
        report = train(data, Path(args.out), Path(args.report), make_cache=lambda: SmartCache(config),
                       seed=args.seed, budget=args.budget, single_budget=args.single_budget, reuse_harvest=args.reuse_harvest,
                       command="smartcache " + " ".join(sys.argv[1:]), workers=args.workers,
                       say=lambda m: print(m, file=sys.stderr))
    except (OSError, ValueError, SmartCacheError) as exc:
        return fail(exc)
    print((Path(args.report) / "training.md").read_text(encoding="utf-8"))
    print(f"wrote {args.out} ({report['trees']} trees) and {args.report}/training.md", file=sys.stderr)
    return 0


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _auth_policy(args: argparse.Namespace, config: AuthConfig) -> AuthPolicy:
    """Who the callers are: --keys / --trust-tenant-header over the config's [auth] table."""
    from smartcache.gateway.auth import AuthPolicy, KeyRegistry

    keys_file = args.keys or config.keys_file
    registry = KeyRegistry.load(keys_file) if keys_file else None
    policy = AuthPolicy(registry, trust_tenant_header=args.trust_tenant_header or config.trust_tenant_header)
    policy.check_admin_token(args.admin_token)      # before the engine takes its 25 s to load
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


def _serve(args: argparse.Namespace) -> int:
    import logging
    import os

    import uvicorn

    from smartcache.gateway import GatewaySettings, create_app

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not 0.0 <= args.shadow <= 1.0:
        return fail("--shadow takes a rate between 0 and 1")
    try:
        overrides = {}
        if args.promotion_window is not None:
            overrides["lifecycle"] = {"promotion_window_s": args.promotion_window}
        overrides["store"] = store_overrides(args)
        if args.store == "sqlite":
            print(f"smartcache: cache entries persist in {overrides['store']['path']}", file=sys.stderr)
        cache = SmartCache(load_config(args.config, **overrides))
        auth = _auth_policy(args, cache.config.auth)
        if args.warmup:
            from smartcache.eval.replay import load_sessions, warmup
            print(f"smartcache: warm-up {json.dumps(warmup(cache, load_sessions(args.warmup)))}", file=sys.stderr)
        if args.upstream:
            from smartcache.engine.upstream import UpstreamEngine
            engine = UpstreamEngine(args.upstream, api_key=os.environ.get(args.upstream_key_env),
                                    model=args.upstream_model, tokenizer=args.tokenizer,
                                    timeout_s=args.upstream_timeout)
        else:
            from smartcache.engine.local import LocalEngine
            print("smartcache: loading the bundled engine (SmolLM2-135M-Instruct)…", file=sys.stderr)
            engine = LocalEngine(kv_budget_mb=args.kv_budget_mb)
    except (OSError, SmartCacheError, ValueError) as exc:
        return fail(exc)
    settings = GatewaySettings(cache_enabled=not args.no_cache, shadow_rate=args.shadow,
                               regenerate_window_s=args.regenerate_window, default_max_tokens=args.max_tokens,
                               **{name: value for name in ("max_body_bytes", "max_messages", "max_message_chars")
                                  if (value := getattr(args, name)) is not None})
    # Beyond loopback, an admin API without a token would hand every tenant's answers to the network.
    app = create_app(cache, engine, settings, admin_token=args.admin_token, auth=auth,
                     close_admin=args.host not in LOOPBACK)
    print(f"smartcache: serving on http://{args.host}:{args.port}  (dashboard: /dashboard)", file=sys.stderr)
    # Idle keep-alive connections outlive the clients' and proxies' own (httpx: 5 s, nginx: 60 s):
    # a server that closes first races a client reusing the connection, and resets a request.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level.lower(),
                timeout_keep_alive=args.keep_alive)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="smartcache", description="Context-aware semantic cache for LLM chat.")
    sub = parser.add_subparsers(dest="command", required=True)
    explain = sub.add_parser("explain", help="explain the decision for one case (CASES.md format)")
    explain.add_argument("case", help="a JSON file holding one case, or - for standard input")
    explain.add_argument("--config", help="a TOML config file merged over the defaults")
    explain.add_argument("--json", action="store_true", help="print the decision as JSON")
    ev = sub.add_parser("eval", help="score SmartCache and the baselines on cases (CASES.md format)")
    ev.add_argument("--cases", required=True, help="a JSONL file of cases")
    ev.add_argument("--json", dest="json_out", help="write the full report here")
    ev.add_argument("--shared-cache", action="store_true", help="write every case's entries into one cache first")
    ev.add_argument("--systems", default="smartcache,exact_prefix,last_message,full_context")
    ev.add_argument("--baseline-threshold", type=float, default=0.8,
                    help="cosine threshold of last_message and full_context (GPTCache's default is 0.8)")
    ev.add_argument("--config", help="a TOML config file merged over the defaults")
    ev.add_argument("--ablate", metavar="LIST",
                    help="also run SmartCache with each of these off: tags,change_detection,validation,context_view")
    ev.add_argument("--failures", metavar="FILE.jsonl", help="write every wrong outcome of smartcache with its reasons")
    ev.add_argument("--report", metavar="FILE.md", help="write a markdown report (tables and a PNG plot beside it)")
    cal = sub.add_parser("calibrate", help="thresholds from labelled pairs: p95 of negatives and a target false-hit rate")
    cal.add_argument("--pairs", default="qqp,lcqmc,bq,pawsx", help="public pair sets under ../shared/data")
    cal.add_argument("--cases", help="calibrate from labelled cases (CASES.md) through the whole pipeline instead")
    cal.add_argument("--data-dir", help="where the pair sets are (default: ../shared/data beside the repo)")
    cal.add_argument("--limit", type=int, default=10000, help="pairs sampled per set (seed 0)")
    cal.add_argument("--target", type=float, default=1e-4, help="false-hit rate the threshold must meet")
    cal.add_argument("--out", default="build/calibration", help="folder for thresholds.toml, the report and plot")
    cal.add_argument("--config", help="a TOML config file merged over the defaults")
    rep = sub.add_parser("replay", help="run whole sessions turn by turn: hit rate, saved tokens, pollution")
    src = rep.add_mutually_exclusive_group(required=True)
    src.add_argument("--sessions", help="JSONL of {session, messages}")
    src.add_argument("--crosswoz", help="a CrossWOZ zip (e.g. ../shared/data/crosswoz/val.json.zip)")
    src.add_argument("--cases", help="benchmark cases (CASES.md); their probes carry labels")
    rep.add_argument("--limit", type=int, help="replay only the first N sessions / cases")
    rep.add_argument("--json", dest="json_out", help="write the figures here")
    rep.add_argument("--config", help="a TOML config file merged over the defaults")
    warm = sub.add_parser("warmup", help="write recurring scenarios of historical sessions into the cache")
    warm.add_argument("--sessions", required=True, help="JSONL of {session, messages} (logged conversations)")
    warm.add_argument("--min-count", type=int, default=2, help="sessions a scenario must recur in")
    warm.add_argument("--per-session", action="store_true", help="write into the first asking session, not global")
    warm.add_argument("--config", help="a TOML config file merged over the defaults")
    warm.add_argument("--store", choices=("sqlite", "memory", "redis"), default="sqlite",
                      help="the store to warm, as serve reads it (default: serve's SQLite file)")
    warm.add_argument("--store-path", help="the SQLite file (default: as serve)")
    warm.add_argument("--redis-url", help="redis://HOST:PORT/DB (with --store redis)")
    tr = sub.add_parser("train", help="train the verifier on cases, hold source families out, calibrate")
    tr.add_argument("--data", default="build/training", help="a folder of *.jsonl cases, one source a file")
    tr.add_argument("--out", default="src/smartcache/data/verifier.json", help="where the model is written")
    tr.add_argument("--report", default="docs/eval/training", help="folder for training.md / .json")
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--budget", type=float, default=0.005,
                    help="false-hit rate the 95 %% upper bound must meet, requests with a history")
    tr.add_argument("--single-budget", type=float, default=0.02, help="the same for single-turn requests")
    tr.add_argument("--workers", type=int, default=2, help="harvest processes (one per core)")
    tr.add_argument("--reuse-harvest", action="store_true", help="reuse the report folder's harvest.npz")
    tr.add_argument("--config", help="a TOML config file merged over the defaults")
    serve = sub.add_parser("serve", help="run the OpenAI-compatible caching gateway")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--upstream", help="an OpenAI-compatible base URL (…/v1); default: the bundled engine")
    serve.add_argument("--upstream-key-env", default="SMARTCACHE_UPSTREAM_KEY",
                       help="environment variable holding the upstream API key")
    serve.add_argument("--upstream-model", help="the model an upstream serves (default: as each request names)")
    serve.add_argument("--tokenizer", help="tokenizer id for the version key with an upstream")
    serve.add_argument("--upstream-timeout", type=float, default=120.0, help="seconds")
    serve.add_argument("--config", help="a TOML config file merged over the defaults")
    serve.add_argument("--shadow", type=float, default=0.0, metavar="RATE",
                       help="share of ordinary hits verified against the engine in the background")
    serve.add_argument("--promotion-window", type=float, metavar="S",
                       help="seconds an answer stays pending before it can be served (default 30)")
    serve.add_argument("--regenerate-window", type=float, default=60.0, metavar="S",
                       help="an identical request within this many seconds counts as regenerate")
    serve.add_argument("--no-cache", action="store_true", help="forward everything; the engine alone")
    serve.add_argument("--keep-alive", type=float, default=75.0, metavar="S",
                       help="seconds an idle client connection is kept open (default: %(default)s)")
    serve.add_argument("--max-body-bytes", type=int, metavar="N",
                       help="refuse a larger request body with 413 (default: 8 MiB)")
    serve.add_argument("--max-messages", type=int, metavar="N",
                       help="refuse a request with more messages with 400 (default: 1000)")
    serve.add_argument("--max-message-chars", type=int, metavar="N",
                       help="refuse a request with a longer message with 400 (default: 400000)")
    serve.add_argument("--store", choices=("sqlite", "memory", "redis"), default="sqlite",
                       help="sqlite (default): entries survive restarts; memory: gone with the process; "
                            "redis: shared by replicas")
    serve.add_argument("--redis-url", help="redis://HOST:PORT/DB of a Redis Stack server (with --store redis)")
    serve.add_argument("--store-path", help="the SQLite file (default: $SMARTCACHE_DATA_DIR or "
                                            "~/.local/share/smartcache, cache.db)")
    serve.add_argument("--kv-budget-mb", type=int, default=512, help="memory for the bundled engine's KV prefixes")
    serve.add_argument("--max-tokens", type=int, default=256, help="default max_tokens of a request")
    serve.add_argument("--admin-token", help="require Authorization: Bearer TOKEN on /admin (never a tenant's key)")
    serve.add_argument("--keys", metavar="FILE",
                       help="API keys (TOML) mapping each key or its sha256 to a tenant and its namespaces; "
                            "requests then need one (default: [auth] keys_file, else no keys: one local tenant)")
    serve.add_argument("--trust-tenant-header", action="store_true",
                       help="honour x-tenant-id as sent: only behind a proxy that authenticates the tenant")
    serve.add_argument("--warmup", metavar="FILE", help="before serving, warm the cache from logged sessions (JSONL)")
    serve.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "eval":
        return _eval(args)
    if args.command == "calibrate":
        return _calibrate(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "warmup":
        return _warmup(args)
    if args.command == "train":
        return _train(args)
    try:
        text = sys.stdin.read() if args.case == "-" else Path(args.case).read_text(encoding="utf-8")
        case = json.loads(text)
        cache = SmartCache(load_config(args.config))
        result = explain_case(cache, case)
    except (OSError, json.JSONDecodeError, SmartCacheError, KeyError, TypeError) as exc:
        return fail(exc)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        _print_human(result)
    return 0

