"""`smartcache train --observations`: the verifier refitted on a tenant's own labelled traffic.

The packaged trees were fitted on public pairs; a tenant's traffic is its own distribution.
Every label the cache learned from (``learn/observations.py``) carries the verifier's
evidence row, so the trees can be fitted again on the public rows and the tenant's rows
together, off the request path. The observations are split by time: the older ones train,
the newest ``held_back`` share judges. The refit model's points are first chosen as the
packaged model's are (on the public calibration split); then, on the held-back rows, each
kind's points (with a history, single-turn) are raised until what it would serve of them
either proves the bound (the one-sided 95 % upper bound on its share of wrong answers within
δ) or is no worse than the packaged model's serving of the same rows (no more wrong answers,
at least as many right ones). The report says what each model would have served.

The held-back rows are labels, so they are mostly requests the model in use refused (it
serves the rest, and only a sample of those is checked): proving δ = 0.01 on new hits needs
about 300 of them right and none wrong.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from smartcache.decide.verifier import DIFFERENT, SAME, TreeVerifier
from smartcache.eval.training import (
    FEATURES, PARAMS, Harvest, calibration_split, export, family_of, fit, merge, operating_points, row_weights,
    upper_bound,
)
from smartcache.learn.observations import Rows

STEP = 0.005


def load_public(path: Path) -> Harvest:
    """The public rows: one harvest file (``make train`` keeps it), or a folder of per-source
    ``*.harvest.npz`` (what ``build/training`` holds after a harvest), merged."""
    if path.is_dir():
        parts = sorted(path.glob("*.harvest.npz"))
        if not parts:
            raise ValueError(f"no *.harvest.npz in {path}")
        return merge([Harvest.load(p) for p in parts])
    return Harvest.load(path)


def _stratum_parts(stratum: str) -> tuple[str, bool, str]:
    """"en:history:low" -> ("low", True, "en")."""
    lang, kind, tier = (stratum.split(":") + ["", "", ""])[:3]
    return tier or "low", kind != "single", lang


def _points_of(model: TreeVerifier, obs: Rows) -> np.ndarray:
    return np.asarray([model.operating_point(*_stratum_parts(s)[:2], lang=_stratum_parts(s)[2])
                       for s in obs.stratum], float)


def _served(p: np.ndarray, points: np.ndarray, correct: np.ndarray) -> dict[str, Any]:
    served = p >= points
    n, wrong = int(served.sum()), int((served & ~correct).sum())
    return {"served": n, "right": n - wrong, "wrong": wrong, "rows": int(len(p)),
            "wrong_upper": upper_bound(wrong, n) if n else None}


def refit(public: Harvest, obs: Rows, packaged: TreeVerifier, *, error_bound: float = 0.01, held_back: float = 0.3,
          weight: float = 5.0, budget: float = 0.02, single_budget: float = 0.01, seed: int = 0,
          params: dict[str, Any] | None = None, say: Callable[[str], None] = print
          ) -> tuple[TreeVerifier, dict[str, Any]]:
    """The refit model and its report. ``weight``: what one observation weighs against a
    typical public row (a tenant's few hundred labels would not move trees fitted on ~100,000
    rows at 1). Raises ValueError when the observations are too few to hold any back."""
    if tuple(obs.features) != tuple(packaged.features) or tuple(packaged.features) != FEATURES:
        raise ValueError("the observations, the packaged model and this version's features differ")
    if not 0 < held_back < 1:
        raise ValueError("held_back must be a share between 0 and 1")
    if not (math.isfinite(weight) and weight > 0):
        raise ValueError("weight must be a positive number")
    if not (np.isfinite(obs.x).all() and np.isfinite(obs.at).all()):
        raise ValueError("observations with a value that is not a finite number")
    n = len(obs)
    back_n = math.ceil(held_back * n)
    if n - back_n < 1 or back_n < 1 or obs.correct.all() or not obs.correct.any():
        raise ValueError(f"{n} observations: too few, or all one label, to refit on and hold some back")
    started = time.perf_counter()
    order = np.argsort(obs.at, kind="stable")
    train_rows, back_rows = order[:n - back_n], order[n - back_n:]
    x, y, case, _ = public.arrays()
    fams = np.asarray([family_of(public.cases[c]["source"]) for c in case])
    in_cal = calibration_split(public)[case]
    w_pub = row_weights(fams, case)
    x_obs = obs.x[train_rows]
    y_obs = np.where(obs.correct[train_rows], SAME, DIFFERENT).astype(y.dtype)
    w_obs = np.full(len(y_obs), weight * float(np.median(w_pub[~in_cal])))
    say(f"fitting on {int((~in_cal).sum())} public rows and {len(y_obs)} observations; {back_n} held back")
    params = {**PARAMS, **(params or {})}
    model = fit(np.concatenate([x[~in_cal], x_obs]), np.concatenate([y[~in_cal], y_obs]),
                np.concatenate([w_pub[~in_cal], w_obs]), seed, params)
    on_cal = {(m["source"], m["id"]) for m, c in zip(public.cases, calibration_split(public)) if c}
    points = operating_points(public, model.predict_proba(x)[:, SAME], budget, single_budget,
                              select=lambda m: (m["source"], m["id"]) in on_cal)
    back = obs.take(np.isin(np.arange(n), back_rows))
    p_new = model.predict_proba(back.x)[:, SAME]
    p_old = packaged.predict(back.x)[:, SAME]
    before = _served(p_old, _points_of(packaged, back), back.correct)
    raised: dict[str, float] = {}
    base = export(model, {"operating_points": points}, FEATURES)
    for context in (True, False):
        mine = np.asarray([_stratum_parts(s)[1] == context for s in back.stratum])
        if not mine.any():
            continue
        old_kind = _served(p_old[mine], _points_of(packaged, back)[mine], back.correct[mine])
        lift = 0.0
        while True:
            trial = replace(base, meta={"operating_points": {k: min(v + lift, 0.999) if _kind(k) == context
                                                             else v for k, v in points.items()}})
            got = _served(p_new[mine], _points_of(trial, back)[mine], back.correct[mine])
            # Proven within δ, or no worse than today's model on the same rows (no more wrong
            # answers, as many right ones): nothing else is let through.
            no_worse = got["wrong"] <= old_kind["wrong"] and got["right"] >= old_kind["right"]
            if got["served"] == 0 or got["wrong_upper"] <= error_bound or no_worse or lift >= 1.0:
                break
            lift = round(lift + STEP, 3)
        if lift:
            raised["context" if context else "single"] = lift
            points = {k: min(v + lift, 0.999) if _kind(k) == context else v for k, v in points.items()}
    meta = {"seed": seed, "budget": budget, "single_budget": single_budget, "operating_points": points,
            "params": params, "points_on": "calibration", "refit": {"observations": n, "held_back": back_n,
                                                                   "weight": weight, "error_bound": error_bound,
                                                                   "raised": raised}}
    verifier = replace(base, meta=meta)
    after = _served(p_new, _points_of(verifier, back), back.correct)
    report = {"observations": n, "trained_on": int(len(y_obs)), "held_back": back_n,
              "held_back_same": int(back.correct.sum()), "weight": weight, "error_bound": error_bound,
              "public_rows": int((~in_cal).sum()), "operating_points": points, "raised": raised,
              "before": before, "after": after, "seconds": round(time.perf_counter() - started, 1)}
    return verifier, report


def _kind(key: str) -> bool | None:
    """Point keys: "low", "low@en", "context" are for requests with a history (True);
    "low:single", "single" for single-turn ones (False); "default" for both (None: kept as it is)."""
    base = key.split("@")[0]
    return None if base == "default" else not base.endswith("single")


def markdown(report: dict[str, Any], command: str) -> str:
    def line(name: str, r: dict[str, Any]) -> str:
        bound = "–" if r["wrong_upper"] is None else f"{r['wrong_upper']:.4f}"
        return f"| {name} | {r['served']} | {r['right']} | {r['wrong']} | {bound} |"
    return "\n".join([
        "# The verifier refitted on a tenant's observations", "",
        f"Produced by `{command}` in {report['seconds']} s.", "",
        f"{report['observations']} observations: the older {report['trained_on']} trained (each weighing "
        f"{report['weight']} typical public rows, beside {report['public_rows']} public rows), the newest "
        f"{report['held_back']} held back ({report['held_back_same']} of them labelled the same). δ = "
        f"{report['error_bound']}; points raised on the held-back rows: {report['raised'] or 'none'}.", "",
        "| model, on the held-back rows | served | right | wrong | wrong share, 95 % upper |",
        "|---|---|---|---|---|",
        line("packaged, at its points", report["before"]),
        line("refitted, at its points", report["after"]), "",
        "Operating points: " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(report["operating_points"].items())), ""])


def write_report(report: dict[str, Any], folder: Path, command: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "refit.json").write_text(json.dumps({**report, "command": command}, indent=1), encoding="utf-8")
    (folder / "refit.md").write_text(markdown(report, command), encoding="utf-8")


__all__ = ["load_public", "markdown", "refit", "write_report"]
