"""Checks on the public pair sets in ../shared/data (skipped, with the reason, when absent).

These do not tune anything; they guard two facts the design rests on: the
default encoder separates paraphrases from non-paraphrases (AUC), and the
cache's rules serve fewer false hits than a plain cosine at the same threshold.
"""

from __future__ import annotations

import csv
import json
import random
import tarfile
from pathlib import Path

import numpy as np
import pytest

from smartcache import Zone
from smartcache.paths import shared_data
from conftest import U

DATA = shared_data()


def _data_file(*parts: str) -> Path:
    """A file of the public data, or skip the test saying what is missing."""
    if DATA is None:
        pytest.skip("public data not found: no ../shared/data beside the checkout and no $SMARTCACHE_SHARED_DATA")
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"public data not found: {path} (see ../shared/data/README.md)")
    return path
N = 300


def _tsv(name: str) -> list[tuple[str, str, int]]:
    path = _data_file("zh-pairs", f"{name}.valid.tsv")
    with path.open(encoding="utf-8") as f:
        rows = [(r[0], r[1], int(r[2])) for r in csv.reader(f, delimiter="\t") if len(r) >= 3 and r[2] in "01"]
    random.Random(0).shuffle(rows)
    return rows[:N]


def _qqp() -> list[tuple[str, str, int]]:
    path = _data_file("qqp", "similiar_qqp_full.tar.gz")
    with tarfile.open(path) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
        rows = [(r["text_a"], r["text_b"], int(r["label"])) for r in json.load(tar.extractfile(member))]
    random.Random(0).shuffle(rows)
    return rows[:N]


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    order = np.argsort(scores)
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    return float((ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum()))


@pytest.mark.integration
@pytest.mark.parametrize("loader, floor", [(lambda: _tsv("lcqmc"), 0.8), (_qqp, 0.75)], ids=["lcqmc", "qqp"])
def test_default_encoder_separates_paraphrases(encoder, loader, floor):
    rows = loader()
    a = encoder.encode([r[0] for r in rows])
    b = encoder.encode([r[1] for r in rows])
    auc = _auc((a * b).sum(axis=1), np.array([r[2] for r in rows]))
    assert auc >= floor, f"pair AUC {auc:.3f}"


@pytest.mark.integration
@pytest.mark.parametrize("name", ["lcqmc", "pawsx"])
def test_rules_serve_fewer_false_hits_than_plain_cosine(make_cache, encoder, name):
    rows = [r for r in _tsv(name) if r[2] == 0]
    cache = make_cache()
    threshold = cache.decider.table.default.hit
    ours = plain = 0
    for i, (a, b, _) in enumerate(rows):
        stored = cache.store([U(a)], "answer", session=f"n{i}")
        if not stored.stored:
            continue
        cache.promote(stored.cache_id)
        ours += cache.lookup([U(b)], session=f"n{i}").zone is Zone.HIT
        va, vb = encoder.encode([a, b])
        plain += float(va @ vb) >= threshold
    assert plain > 0, "the sample holds no hard negatives; the comparison would be empty"
    assert ours < plain, f"{name}: rules {ours} false hits vs plain cosine {plain}"
