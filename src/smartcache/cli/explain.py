"""``smartcache explain CASE.json``: a decision and every reason behind it.

The input is one case in the evaluation format (CASES.md): the ``cached`` entries
are written and promoted, then the ``probe`` is looked up, so a user can see
exactly why a request would hit, half-hit or miss.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from smartcache.cache import SmartCache
from smartcache.cli.console import fail
from smartcache.config import load_config
from smartcache.errors import SmartCacheError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("explain", help="explain the decision for one case (CASES.md format)")
    parser.add_argument("case", help="a JSON file holding one case, or - for standard input")
    parser.add_argument("--config", help="a TOML config file merged over the defaults")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
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
        written.append({"index": i, "stored": result.stored, "entry": result.cache_id, "reason": result.reason,
                        "detail": result.detail})
    probe = case["probe"]
    decision = cache.lookup(probe["messages"], session=case.get("probe_session", session), tenant=tenant,
                            versions=probe.get("versions", versions))
    fp = decision.request.fingerprint
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
