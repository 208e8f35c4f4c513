"""Threshold calibration from labelled pairs: the seed's recipe and a target false-hit rate.

For each set of pairs (two requests, same-meaning or not) the encoder's cosine of
the normalised texts is computed once. Then:

    initial threshold   the 95th percentile of the negative pairs' cosines (the seed's recipe)
    target threshold    the lowest threshold at which the share of negatives scoring at or
                        above it is <= the target false-hit rate (default 1e-4). With fewer
                        than 1/target negatives this is "above every negative" — reported as such.
    sweep               hit rate (positives at or above) and precision for thresholds 0.50 ... 0.95

These are raw cosines, before any rule: the thresholds are the vectors' share of
the decision, conservative by construction (the rules only remove hits).
"""

from __future__ import annotations

import csv
import json
import math
import random
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from smartcache.context import normalize_text

# Which cache domain each public set stands for (BQ is bank customer service).
SET_DOMAINS = {"qqp": "general", "lcqmc": "general", "pawsx": "general", "bq": "support"}
SWEEP = tuple(round(0.50 + 0.05 * i, 2) for i in range(10))


def load_pair_set(name: str, data_dir: Path, *, limit: int | None = None, seed: int = 0
                  ) -> list[tuple[str, str, int]]:
    """Rows (text_a, text_b, label) of a public set under ``data_dir`` (../shared/data)."""
    if name == "qqp":
        with tarfile.open(data_dir / "qqp" / "similiar_qqp_full.tar.gz") as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
            rows = [(r["text_a"], r["text_b"], int(r["label"])) for r in json.load(tar.extractfile(member))]
    elif name == "gptcache-mock":
        data = json.loads((data_dir / "gptcache-mock" / "mock_data.json").read_text(encoding="utf-8"))
        rows = [(r["origin"], r["similar"], 1) for r in data]
    elif name == "atec":
        rows = _atec_rows(data_dir)
    elif name == "stsb":
        rows = _stsb_rows(data_dir)
    else:
        with (data_dir / "zh-pairs" / f"{name}.valid.tsv").open(encoding="utf-8") as f:
            rows = [(r[0], r[1], int(r[2])) for r in csv.reader(f, delimiter="\t") if len(r) >= 3 and r[2] in "01"]
    if limit is not None and len(rows) > limit:
        rows = random.Random(seed).sample(rows, limit)
    return rows


def _stsb_rows(data: Path) -> list[tuple[str, str, int]]:
    """STS-B in Chinese, every split: a score of 4.4 or more is the same question, 2.5 or less
    a different one; the graded middle is dropped."""
    rows = []
    for split in ("train", "valid", "test"):
        path = data / "zh-pairs" / f"stsb-zh.{split}.tsv"
        if not path.exists():
            continue
        with path.open(encoding="utf-8") as f:
            for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                if len(r) >= 3:
                    try:
                        score = float(r[2])
                    except ValueError:
                        continue
                    if score >= 4.4 or score <= 2.5:
                        rows.append((r[0], r[1], int(score >= 4.4)))
    if not rows:
        raise OSError(f"no STS-B-zh split under {data / 'zh-pairs'}")
    return rows


def _atec_rows(data: Path) -> list[tuple[str, str, int]]:
    rows = []
    for split in ("valid", "test"):
        path = data / "zh-pairs" / f"atec.{split}.tsv"
        if path.exists():
            with path.open(encoding="utf-8") as f:
                rows += [(r[0], r[1], int(r[2])) for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                         if len(r) >= 3 and r[2] in ("0", "1")]
    if not rows:
        raise OSError(f"no ATEC split under {data / 'zh-pairs'}")
    return rows


@dataclass
class Calibration:
    name: str
    domain: str
    positives: int
    negatives: int
    initial: float                  # 95th percentile of negative cosines
    target_rate: float
    target: float                   # lowest threshold meeting the target false-hit rate
    resolved: bool                  # False: too few negatives to resolve the target rate
    recall_at_target: float
    sweep: list[dict] = field(default_factory=list)
    cosines: np.ndarray | None = None
    labels: np.ndarray | None = None

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("cosines", "labels")}


def pair_cosines(encoder, rows: Sequence[tuple[str, str, int]], *, batch: int = 256, progress=None) -> np.ndarray:
    out = np.empty(len(rows), np.float32)
    for start in range(0, len(rows), batch):
        chunk = rows[start:start + batch]
        a = encoder.encode([normalize_text(r[0]) for r in chunk])
        b = encoder.encode([normalize_text(r[1]) for r in chunk])
        out[start:start + len(chunk)] = (a * b).sum(axis=1)
        if progress:
            progress(len(chunk))
    return out


def calibrate_scores(name: str, domain: str, cosines: np.ndarray, labels: np.ndarray,
                     target_rate: float = 1e-4, floor: float = -1.0) -> Calibration:
    """``floor``: the threshold never goes below it (the half-hit floor, for case calibration)."""
    pos, neg = cosines[labels == 1], cosines[labels == 0]
    initial = max(float(np.percentile(neg, 95)), floor) if len(neg) else 1.0
    # The k-th highest negative may score at or above the threshold, k = floor(rate * n).
    allowed = math.floor(target_rate * len(neg))
    ranked = np.sort(neg)[::-1]
    if allowed >= len(ranked):
        target = float(ranked[-1]) if len(ranked) else 0.0
    else:
        target = float(np.nextafter(ranked[allowed], np.float32(2.0)))
    target = min(max(math.ceil(target * 10_000) / 10_000, floor), 1.0)   # round up: rounding down could admit a negative
    sweep = []
    for t in SWEEP:
        tp, fp = int((pos >= t).sum()), int((neg >= t).sum())
        sweep.append({"threshold": t, "hit_rate": tp / len(pos) if len(pos) else 0.0,
                      "precision": tp / (tp + fp) if tp + fp else 1.0,
                      "false_hit_rate": fp / len(neg) if len(neg) else 0.0})
    return Calibration(name, domain, len(pos), len(neg), round(initial, 4), target_rate, target,
                       allowed >= 1, float((pos >= target).mean()) if len(pos) else 0.0, sweep, cosines, labels)


def thresholds_toml(encoder: str, results: Sequence[Calibration], *, half_hit: float, context: float) -> str:
    """The thresholds file the cache loads (``--config``): one hit threshold per domain,
    the strictest of the sets that stand for it."""
    by_domain: dict[str, float] = {}
    for r in results:
        by_domain[r.domain] = max(by_domain.get(r.domain, 0.0), r.target)
    lines = [f"# Written by `smartcache calibrate` (target false-hit rate {results[0].target_rate:g}).",
             f"# Sets: {', '.join(f'{r.name} -> {r.domain}' for r in results)}."]
    for domain, hit in sorted(by_domain.items()):
        hit = round(min(hit, 1.0), 4)
        lines += ["", f"[thresholds.{encoder}.domain.{domain}]", f"hit = {hit}",
                  f"half_hit = {round(min(half_hit, hit), 4)}", f"context = {context}"]
    return "\n".join(lines) + "\n"


def plot(results: Sequence[Calibration], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0.3, 1.0, 71)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for r in results:
        pos, neg = r.cosines[r.labels == 1], r.cosines[r.labels == 0]
        hit = [(pos >= t).mean() for t in grid]
        prec = [((pos >= t).sum() / max((pos >= t).sum() + (neg >= t).sum(), 1)) for t in grid]
        ax1.plot(grid, hit, label=r.name)
        ax2.plot(grid, prec, label=r.name)
        ax1.axvline(r.initial, ls=":", lw=0.8, color=ax1.lines[-1].get_color())
    ax1.set(title="hit rate (positives at or above)", xlabel="cosine threshold", ylim=(0, 1.02))
    ax2.set(title="precision of hits", xlabel="cosine threshold", ylim=(0, 1.02))
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(loc="lower left", fontsize=8)
    ax1.text(0.31, 0.03, "dotted: 95th percentile of negatives", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(results: Sequence[Calibration], encoder: str, plot_name: str, command: str) -> str:
    lines = [f"# Threshold calibration ({encoder})", "", f"Produced by `{command}`.", "",
             "Raw cosines of the normalised pair texts (no rules). *initial* is the seed's recipe, the 95th "
             "percentile of negative-pair similarity; *target* is the lowest threshold whose false-hit rate on "
             f"the negatives is at most {results[0].target_rate:g}.", "",
             "| set | domain | positives | negatives | initial (p95 neg) | target | target resolved | hit rate at target |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r.name} | {r.domain} | {r.positives} | {r.negatives} | {r.initial:.3f} | {r.target:.3f} | "
                     f"{'yes' if r.resolved else 'no: fewer negatives than 1/target, so above every negative'} | "
                     f"{r.recall_at_target:.3f} |")
    lines += ["", "## Sweep: hit rate / precision by threshold", "",
              "| threshold | " + " | ".join(r.name for r in results) + " |", "|---|" + "---|" * len(results)]
    for i, t in enumerate(SWEEP):
        cells = [f"{r.sweep[i]['hit_rate']:.0%} / {r.sweep[i]['precision']:.0%}" for r in results]
        lines.append(f"| {t:.2f} | " + " | ".join(cells) + " |")
    lines += ["", f"![hit rate and precision against threshold]({plot_name})", ""]
    return "\n".join(lines)


def case_scores(make_cache, cases, *, progress=None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Calibration from labelled cases, through the whole pipeline: each case runs in a fresh
    cache whose hit threshold is at the floor, so every candidate the rules let through is
    served; its turn cosine is kept per (detected) domain. A correct hit is a positive sample,
    a served wrong answer a negative one; cases not served score -1 (no threshold reaches them).

    Returns domain -> (cosines, labels), the input of ``calibrate_scores``."""
    from smartcache.decide import Zone

    by_domain: dict[str, tuple[list[float], list[int]]] = {}
    for case in cases:
        cache = make_cache()
        for item in case.cached:
            result = cache.store(item.messages, item.answer, session=case.session, tenant=case.tenant,
                                 versions=item.versions or case.versions, scope=case.scope)
            if result.stored:
                cache.promote(result.cache_id, to_global=case.scope == "global")
        decision = cache.lookup(case.probe, session=case.probe_session, tenant=case.tenant,
                                versions=case.probe_versions)
        domain = cache.fingerprint(case.probe, versions=case.probe_versions)[0].signature.domain
        cosines, labels = by_domain.setdefault(domain, ([], []))
        served = decision.zone is Zone.HIT
        score = float(decision.scores.turn) if served and decision.scores.turn is not None else 1.0
        correct = served and case.expect == "hit" and decision.answer == case.expected_answer
        if case.expect == "hit":
            cosines.append(score if correct else -1.0)
            labels.append(1)
        if served and not correct or case.expect != "hit":
            cosines.append(score if served and not correct else -1.0)
            labels.append(0)
        if progress:
            progress()
    return {d: (np.asarray(c, np.float32), np.asarray(l)) for d, (c, l) in by_domain.items()}
