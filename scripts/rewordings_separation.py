"""How well one-shot signals tell the gateway test's rewordings from its near misses (figures, not a test).

    .venv/bin/python scripts/rewordings_separation.py [--data tests/data/rewordings_20x10.json]

For each question of ``tests/data/rewordings_20x10.json`` (issue 28's gateway traffic test),
its first wording is compared with its 9 other rewordings (the same question) and its 10 near
misses (another question): the packaged encoder's cosine (USE), e5-small's, and the packaged
verifier's p(same) (the first wording stored in a fresh cache, the other looked up; a vetoed
or gated lookup counts 0). Per language: the AUC, and the share of rewordings a threshold
serves where it serves at most 1 % of the near misses (the 99th percentile) and none of them.
One threshold is pooled over all questions, as a one-shot guess must be.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from smartcache import SmartCache, load_config
from smartcache.fingerprint import shared_encoder

ROOT = Path(__file__).resolve().parent.parent


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    return float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "tests" / "data" / "rewordings_20x10.json")
    args = parser.parse_args()
    questions = json.loads(args.data.read_text(encoding="utf-8"))["questions"]
    encoders = {"USE cosine": shared_encoder("use-multilingual"), "e5 cosine": shared_encoder("e5-small")}
    config = load_config(store={"backend": "memory"})
    rows: list[tuple[str, bool, dict[str, float]]] = []
    for q in questions:
        first, others = q["rewordings"][0], q["rewordings"][1:] + q["near_misses"]
        scores: dict[str, list[float]] = {}
        for name, encoder in encoders.items():
            vectors = encoder.encode([first] + others)
            scores[name] = [float(vectors[0] @ v) for v in vectors[1:]]
        cache = SmartCache(config, encoder=encoders["USE cosine"])
        stored = cache.store([{"role": "user", "content": first}], "an answer", session="s")
        cache.promote(stored.cache_id)
        same = []
        for text in others:
            found = cache.lookup([{"role": "user", "content": text}], session="s")
            same.append(found.scores.same if found.scores.same is not None else
                        (1.0 if found.zone.value == "hit" else 0.0))
        scores["verifier p(same)"] = same
        for i, text in enumerate(others):
            rows.append((q["lang"], i < len(q["rewordings"]) - 1, {k: v[i] for k, v in scores.items()}))
    print("| lang | signal | AUC | rewordings served at <= 1 % of near misses | at none |")
    print("|---|---|---|---|---|")
    for lang in ("en", "zh"):
        for name in (*encoders, "verifier p(same)"):
            pos = np.array([s[name] for l, same, s in rows if l == lang and same])
            neg = np.array([s[name] for l, same, s in rows if l == lang and not same])
            if not len(pos) or not len(neg):
                continue
            print(f"| {lang} | {name} | {auc(pos, neg):.3f} | {np.mean(pos > np.percentile(neg, 99)):.2f} | "
                  f"{np.mean(pos > neg.max()):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
