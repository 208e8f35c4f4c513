"""Every decision of a case set, recorded, and two recordings compared case by case.

    .venv/bin/python scripts/compare_decisions.py record --cases docs/eval/devset/zh-a.jsonl --out build/before-zh-a.decisions.json
    .venv/bin/python scripts/compare_decisions.py compare build/before-zh-a.decisions.json build/after-zh-a.decisions.json

``record`` runs the cases as ``smartcache eval`` does (a fresh cache a case, or ``--competing
session|global``), through SmartCache with the verifier and without it (``--ablate verifier``),
and keeps per case: the zone, the served answer, the deciding reason, every reason rendered,
the scores (turn, context, P(same)) at full precision, and for every candidate the decider
weighed, its evidence: the 77 features, the soft signals and the veto. Entry ids (random) are
replaced by the index of the cached item they name, so two runs compare.

``compare`` prints every case whose record differs and exits 1 if any does. ``smartcache eval
--json`` keeps only the aggregate metrics; they are compared too when given (``--eval A B``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from smartcache import SmartCache, load_config
from smartcache.decide import decider as decider_module
from smartcache.eval import SmartCacheSystem, load_cases
from smartcache.eval.harness import compete

_ID = re.compile(r"\b[0-9a-f]{32}\b")


class _Recording(SmartCacheSystem):
    """SmartCacheSystem that keeps, per probe, the entries' labels and the decision in full."""

    def __init__(self, make_cache, name: str) -> None:
        super().__init__(make_cache, name)
        self.labels: dict[str, str] = {}
        self.weighed: list[dict[str, Any]] = []

    def write(self, case, item) -> None:
        result = self.cache.store(item.messages, item.answer, session=case.session, tenant=case.tenant,
                                  versions=item.versions or case.versions, scope=case.scope)
        if result.stored:
            self.labels[result.cache_id] = f"{case.id}/{case.cached.index(item)}"
            self.cache.promote(result.cache_id, to_global=case.scope == "global")

    def label(self, text: str) -> str:
        return _ID.sub(lambda m: self.labels.get(m.group(0), "?"), text)

    def probe_full(self, case) -> dict[str, Any]:
        self.weighed = []
        request = self.cache.prepare(case.probe, session=case.probe_session, tenant=case.tenant,
                                     versions=case.probe_versions)
        if request.gate is not None and request.gate.ends_session:
            d = request.gate.decision()
        else:
            d = self.cache.lookup(request)
        return {"id": case.id, "zone": d.zone.value, "answer": d.answer if d.zone.value == "hit" else None,
                "entry": self.label(d.entry.cache_id) if d.entry is not None else None,
                "reasons": [self.label(str(r)) for r in d.reasons],
                "scores": [d.scores.turn, d.scores.context, d.scores.same],
                "evidence": [{"entry": self.label(e.entry.cache_id), "turn": e.turn, "context": e.context,
                              "features": [float(v) for v in e.features],
                              "signals": [self.label(str(r)) for r in e.signals],
                              "veto": self.label(str(e.veto)) if e.veto is not None else None,
                              "veto_zone": e.veto_zone.value} for e in self.weighed]}


def record(args: argparse.Namespace) -> int:
    cases = load_cases(args.cases)
    config = load_config(args.config)
    encoder = SmartCache(config).encoder
    systems = {"smartcache": config, "smartcache-no_verifier": load_config(args.config, use_verifier=False)}
    run_cases = compete(cases, args.competing) if args.competing else cases
    original = decider_module.gather
    out: dict[str, Any] = {"cases": args.cases, "competing": args.competing, "systems": {}}
    for name, cfg in systems.items():
        system = _Recording(lambda c=cfg: SmartCache(c, encoder=encoder), name)

        def gather(fp, entry, turn, _system=system):
            found = original(fp, entry, turn)
            _system.weighed.append(found)
            return found
        decider_module.gather = gather
        rows = []
        try:
            system.reset()
            if args.competing:
                for case in run_cases:
                    for item in case.cached:
                        system.write(case, item)
            for case in run_cases:
                if not args.competing:
                    system.reset()
                    for item in case.cached:
                        system.write(case, item)
                rows.append(system.probe_full(case))
        finally:
            decider_module.gather = original
        out["systems"][name] = rows
    Path(args.out).write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    counts = {n: len(r) for n, r in out["systems"].items()}
    print(f"recorded {counts} from {args.cases} to {args.out}")
    return 0


def _differences(a: Any, b: Any, where: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _differences(a.get(k), b.get(k), f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items -> {len(b)} items"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += _differences(x, y, f"{where}[{i}]")
        return out
    return [] if a == b else [f"{where}: {a!r} -> {b!r}"]


def compare(args: argparse.Namespace) -> int:
    before = json.loads(Path(args.before).read_text(encoding="utf-8"))
    after = json.loads(Path(args.after).read_text(encoding="utf-8"))
    differing = 0
    compared = 0
    for name in sorted(set(before["systems"]) | set(after["systems"])):
        rows_a, rows_b = before["systems"].get(name, []), after["systems"].get(name, [])
        if [r["id"] for r in rows_a] != [r["id"] for r in rows_b]:
            print(f"{name}: the case lists differ ({len(rows_a)} / {len(rows_b)} cases)")
            differing += 1
            continue
        for ra, rb in zip(rows_a, rows_b):
            compared += 1
            found = _differences(ra, rb)
            if found:
                differing += 1
                print(f"{name} {ra['id']}: zone {ra['zone']} -> {rb['zone']}")
                for line in found[:8]:
                    print(f"    {line}")
    for pair in args.eval or []:
        a, b = (json.loads(Path(p).read_text(encoding="utf-8")) for p in pair)
        found = _differences({k: {m: v for m, v in s.items() if m != "seconds"} for k, s in a["systems"].items()},
                             {k: {m: v for m, v in s.items() if m != "seconds"} for k, s in b["systems"].items()})
        print(f"eval metrics {pair[0]} -> {pair[1]}: {len(found)} differences")
        for line in found[:8]:
            print(f"    {line}")
        differing += bool(found)
    print(f"{compared} decisions compared, {differing} differ")
    return 1 if differing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(required=True)
    rec = sub.add_parser("record", help="record every decision of a case set")
    rec.add_argument("--cases", required=True)
    rec.add_argument("--out", required=True)
    rec.add_argument("--config")
    rec.add_argument("--competing", choices=("session", "global"))
    rec.set_defaults(run=record)
    cmp = sub.add_parser("compare", help="compare two recordings case by case")
    cmp.add_argument("before")
    cmp.add_argument("after")
    cmp.add_argument("--eval", nargs=2, action="append", metavar=("BEFORE_JSON", "AFTER_JSON"),
                     help="also compare two `smartcache eval --json` reports (metrics, seconds aside)")
    cmp.set_defaults(run=compare)
    args = parser.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
