"""`smartcache train`: harvest, source-held-out predictions, operating points, the shipped model, a report.

    smartcache train --data build/training --out src/smartcache/data/verifier.json --report docs/eval/training

The report gives, per held-out source family and language, hit recall with a
Wilson lower bound and the false-hit rate with a Clopper-Pearson upper bound, at
the operating point the shipped model uses.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from smartcache.decide.verifier import SAME
from smartcache.eval.training import (
    PARAMS, Harvest, case_outcomes, export, family_of, family_weights, fit, harvest_dir, held_out_predictions,
    operating_points, tally,
)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def held_out_table(h: Harvest, p_same: np.ndarray, points: dict[str, float]) -> list[dict[str, Any]]:
    outcomes = case_outcomes(h, p_same, points)
    rows = []
    families = sorted({family_of(m["source"]) for m in h.cases})
    for fam in families:
        for lang in sorted({m["lang"] for m in h.cases if family_of(m["source"]) == fam}):
            r = tally(h, outcomes, lambda m, f=fam, l=lang: family_of(m["source"]) == f and m["lang"] == l)
            rows.append({"family": fam, "lang": lang, **r})
    for lang in sorted({m["lang"] for m in h.cases}):
        rows.append({"family": "all", "lang": lang, **tally(h, outcomes, lambda m, l=lang: m["lang"] == l)})
    return rows


def category_table(h: Harvest, p_same: np.ndarray, points: dict[str, float], family: str) -> list[dict[str, Any]]:
    outcomes = case_outcomes(h, p_same, points)
    cats = sorted({(m["lang"], m["category"]) for m in h.cases if family_of(m["source"]) == family})
    return [{"lang": lang, "category": cat, **tally(h, outcomes, lambda m, l=lang, c=cat: family_of(m["source"])
                                                   == family and m["lang"] == l and m["category"] == c)}
            for lang, cat in cats]


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Verifier training report", "", f"Produced by `{report['command']}` in {report['seconds']:.0f} s.",
             "", f"{report['rows']} weighed candidates from {report['cases']} cases; classes same / modify / "
             f"different: {report['classes']}. Operating points (P(same) a hit needs, false-hit budget "
             f"{report['budget']} as a 95 % upper bound on held-out predictions): {report['operating_points']}.", "",
             "## Held out by source family", "",
             "Each family's figures come from a model trained without that family (its pairs, their placements "
             "in context, its generator domains).", "",
             "| family | lang | positives | hit recall (95 % lower) | negatives | false hits | false-hit rate (95 % upper) |",
             "|---|---|---|---|---|---|---|"]
    for r in report["held_out"]:
        lines.append(f"| {r['family']} | {r['lang']} | {r['positives']} | {_fmt(r['hit_recall'])} "
                     f"({_fmt(r['recall_lower'])}) | {r['negatives']} | {r['false_hits']} | "
                     f"{_fmt(r['false_hit_rate'], 4)} ({_fmt(r['false_hit_upper'], 4)}) |")
    for fam, rows in report["categories"].items():
        lines += ["", f"### {fam}, by category (held out)", "",
                  "| lang | category | positives | hit recall | negatives | false-hit rate (95 % upper) |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(f"| {r['lang']} | {r['category']} | {r['positives']} | {_fmt(r['hit_recall'])} | "
                         f"{r['negatives']} | {_fmt(r['false_hit_rate'], 4)} ({_fmt(r['false_hit_upper'], 4)}) |")
    lines += ["", "## Hard vetoes on the training cases", "",
              "Candidates a hard veto refused before the verifier, by whether the case wanted that entry served.", "",
              "| veto | on wanted hits | on the rest | precision |", "|---|---|---|---|"]
    for code, (pos, neg) in sorted(report["vetoes"].items()):
        lines.append(f"| {code} | {pos} | {neg} | {_fmt(neg / (pos + neg) if pos + neg else None)} |")
    lines += ["", f"Model: {report['trees']} trees, depth {report['depth']}, parameters {report['params']}.", ""]
    return "\n".join(lines)


def train(data: Path, out: Path, report_dir: Path, *, make_cache, seed: int = 0, budget: float = 0.005,
          reuse_harvest: bool = False, command: str = "smartcache train", workers: int = 2,
          params: dict[str, Any] | None = None, say: Callable[[str], None] = print) -> dict[str, Any]:
    started = time.perf_counter()
    report_dir.mkdir(parents=True, exist_ok=True)
    cached = report_dir / "harvest.npz"
    if reuse_harvest and cached.exists():
        h = Harvest.load(cached)
        say(f"harvest reused from {cached}")
    else:
        h = harvest_dir(data, make_cache, workers=workers, say=say)
        h.save(cached)
    x, y, case, _ = h.arrays()
    if len(y) == 0:
        raise ValueError(f"no training rows under {data}")
    say(f"{len(y)} rows from {len(h.cases)} cases; holding each source family out in turn")
    params = {**PARAMS, **(params or {})}
    probs = held_out_predictions(h, seed, progress=lambda name: say(f"  without {name}"), params=params)
    points = operating_points(h, probs[:, SAME], budget)
    fams = np.asarray([family_of(h.cases[c]["source"]) for c in case])
    model = fit(x, y, family_weights(fams), seed, params)
    report: dict[str, Any] = {
        "command": command, "seed": seed, "budget": budget, "rows": int(len(y)), "cases": len(h.cases),
        "classes": [int((y == k).sum()) for k in range(3)], "operating_points": points,
        "held_out": held_out_table(h, probs[:, SAME], points),
        "categories": {fam: category_table(h, probs[:, SAME], points, fam) for fam in ("gen", "crosswoz")
                       if any(family_of(m["source"]) == fam for m in h.cases)},
        "vetoes": {k: list(v) for k, v in h.vetoes.items()}, "params": params,
    }
    verifier = export(model, {"seed": seed, "budget": budget, "operating_points": points, "params": params,
                              "sources": sorted({m["source"] for m in h.cases}), "rows": int(len(y))})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(verifier.to_json(), separators=(",", ":")), encoding="utf-8")
    report.update(trees=int(verifier.feature.shape[0]), depth=verifier.depth,
                  seconds=time.perf_counter() - started)
    (report_dir / "training.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    (report_dir / "training.md").write_text(markdown(report), encoding="utf-8")
    return report
