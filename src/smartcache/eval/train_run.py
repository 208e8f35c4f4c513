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

from smartcache.decide.evidence import FEATURES
from smartcache.decide.verifier import SAME
from smartcache.eval.training import (
    PARAMS, Harvest, calibration_split, case_outcomes, export, family_of, fit, harvest_dir,
    held_out_predictions, operating_points, row_weights, tally,
)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def held_out_table(h: Harvest, p_same: np.ndarray, points: dict[str, float],
                   select=lambda m: True) -> list[dict[str, Any]]:
    outcomes = case_outcomes(h, p_same, points)
    rows = []
    families = sorted({family_of(m["source"]) for m in h.cases})
    for fam in families:
        for lang in sorted({m["lang"] for m in h.cases if family_of(m["source"]) == fam}):
            r = tally(h, outcomes, lambda m, f=fam, l=lang: select(m) and family_of(m["source"]) == f
                      and m["lang"] == l)
            rows.append({"family": fam, "lang": lang, **r})
    for lang in sorted({m["lang"] for m in h.cases}):
        for kind, context in (("with history", True), ("single turn", False)):
            r = tally(h, outcomes, lambda m, l=lang, c=context: select(m) and m["lang"] == l
                      and m.get("context", True) == c)
            rows.append({"family": f"all, {kind}", "lang": lang, **r})
    return rows


def category_table(h: Harvest, p_same: np.ndarray, points: dict[str, float], family: str) -> list[dict[str, Any]]:
    outcomes = case_outcomes(h, p_same, points)
    cats = sorted({(m["lang"], m["category"]) for m in h.cases if family_of(m["source"]) == family})
    return [{"lang": lang, "category": cat, **tally(h, outcomes, lambda m, l=lang, c=cat: family_of(m["source"])
                                                   == family and m["lang"] == l and m["category"] == c)}
            for lang, cat in cats]


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| family | lang | positives | hit recall (95 % lower) | negatives | false hits | false-hit rate (95 % upper) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['family']} | {r['lang']} | {r['positives']} | {_fmt(r['hit_recall'])} "
                     f"({_fmt(r['recall_lower'])}) | {r['negatives']} | {r['false_hits']} | "
                     f"{_fmt(r['false_hit_rate'], 4)} ({_fmt(r['false_hit_upper'], 4)}) |")
    return lines


def markdown(report: dict[str, Any]) -> str:
    points = ", ".join(f"{k} {v:.3f}" for k, v in sorted(report["operating_points"].items()))
    lines = ["# Verifier training report", "", f"Produced by `{report['command']}` in {report['seconds']:.0f} s.",
             "", f"{report['rows']} weighed candidates from {report['cases']} cases; classes same / modify / "
             f"different: {report['classes']}. " + (
                 "The shipped model is trained on every row; the operating points are chosen on the "
                 "source-held-out predictions below, each family scored by a model that never saw it."
                 if report.get("points_on") == "held_out" else
                 "The shipped model is trained on four cases in five of every source; the fifth (chosen by a "
                 "hash of the case id) is the calibration split the operating points are chosen on."), "",
             f"Operating points (the P(same) a hit needs; the lowest threshold whose one-sided 95 % "
             f"Clopper-Pearson upper bound on the false-hit rate is within "
             f"{report['budget']} for requests with a history and {report['single_budget']} for single-turn "
             f"requests; a tier with too few negatives to resolve its bound takes its kind's pooled point): "
             f"{points}.", "",
             "## Held out by source family", "",
             "Each family's figures come from a model trained without that family (its pairs, their placements "
             "in context, its generator domains), at the operating points above: what to expect from traffic "
             "unlike anything trained on.", "", *_table(report["held_out"]), "",
             *(["## Calibration split (unseen cases of the sources trained on)", "", *_table(report["calibration"])]
               if report.get("points_on") != "held_out" else [])]
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
          single_budget: float = 0.02,
          reuse_harvest: bool = False, command: str = "smartcache train", workers: int = 2,
          params: dict[str, Any] | None = None,
          points_on: str = "calibration", harvest_path: Path | None = None,
          say: Callable[[str], None] = print) -> dict[str, Any]:
    """``points_on``: choose the operating points on the source-held-out predictions
    (``held_out``: each family scored by a model that never saw it; the shipped model then
    trains on every row) or on a split of every source kept out of the shipped model
    (``calibration``)."""
    if points_on not in ("held_out", "calibration"):
        raise ValueError(f"points_on must be held_out or calibration, not {points_on!r}")
    started = time.perf_counter()
    report_dir.mkdir(parents=True, exist_ok=True)
    cached = harvest_path or report_dir / "harvest.npz"
    if reuse_harvest and cached.exists():
        h = Harvest.load(cached)
        say(f"harvest reused from {cached}")
    else:
        h = harvest_dir(data, make_cache, workers=workers, say=say)
        cached.parent.mkdir(parents=True, exist_ok=True)
        h.save(cached)
    x, y, case, _ = h.arrays()
    if len(y) == 0:
        raise ValueError(f"no training rows under {data}")
    say(f"{len(y)} rows from {len(h.cases)} cases; holding each source family out in turn")
    params = {**PARAMS, **(params or {})}
    held = held_out_predictions(h, seed, progress=lambda name: say(f"  without {name}"), params=params)[:, SAME]
    fams = np.asarray([family_of(h.cases[c]["source"]) for c in case])
    if points_on == "held_out":
        say("  the shipped model, on every row")
        model = fit(x, y, row_weights(fams, case), seed, params)
        shipped = model.predict_proba(x)[:, SAME]
        on_cal = lambda m: True
        points = operating_points(h, held, budget, single_budget)
    else:
        calibration = calibration_split(h)
        in_cal = calibration[case]
        say("  the shipped model, without the calibration split")
        model = fit(x[~in_cal], y[~in_cal], row_weights(fams[~in_cal], case[~in_cal]), seed, params)
        shipped = model.predict_proba(x)[:, SAME]
        cal_ids = {(m["source"], m["id"]) for m, c in zip(h.cases, calibration) if c}
        on_cal = lambda m: (m["source"], m["id"]) in cal_ids
        points = operating_points(h, shipped, budget, single_budget, select=on_cal)
    report: dict[str, Any] = {
        "command": command, "seed": seed, "budget": budget, "single_budget": single_budget, "rows": int(len(y)),
        "cases": len(h.cases), "classes": [int((y == k).sum()) for k in range(3)], "operating_points": points,
        "held_out": held_out_table(h, held, points),
        "calibration": held_out_table(h, shipped, points, select=on_cal),
        "categories": {fam: category_table(h, held, points, fam) for fam in ("gen", "crosswoz")
                       if any(family_of(m["source"]) == fam for m in h.cases)},
        "vetoes": {k: list(v) for k, v in h.vetoes.items()}, "params": params,
        "points_on": points_on,
    }
    verifier = export(model, {"seed": seed, "budget": budget, "single_budget": single_budget,
                              "operating_points": points, "params": params, "points_on": points_on,
                              "sources": sorted({m["source"] for m in h.cases}), "rows": int(len(y))}, FEATURES)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(verifier.to_json(), separators=(",", ":")), encoding="utf-8")
    report.update(trees=int(verifier.feature.shape[0]), depth=verifier.depth,
                  seconds=time.perf_counter() - started)
    (report_dir / "training.json").write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
    (report_dir / "training.md").write_text(markdown(report), encoding="utf-8")
    return report
