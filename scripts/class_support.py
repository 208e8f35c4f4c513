"""Does agreeing with several verified phrasings of one question tell rewordings from near
misses better than the nearest phrasing alone? (figures, not a test)

    .venv/bin/python scripts/class_support.py [--components 150] [--seed 0]

QQP's duplicate pairs, joined transitively, give questions with many phrasings. For each of
``--components`` questions with five or more: three phrasings are the class (each stored alone
in a fresh memory cache), up to five more are rewordings to look up, and up to six questions
QQP labels not duplicates of a member are the near misses. Each lookup's verifier P(same)
against each of the three (a vetoed or gated lookup counts 0); then, per signal (the best of
the three, the second best, the worst, the mean), the ROC AUC of rewordings against near
misses and the share of rewordings above the threshold that lets through 0, 1, 2 and 5 % of
the near misses (chosen on the data itself: an upper bound for any threshold). The verifier
trained on QQP rows, so these figures are in its source (a held-out family would do worse).
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tarfile

import numpy as np

from smartcache import SmartCache, load_config
from smartcache.paths import shared_data


def components(rows: list[dict]) -> tuple[list[list[str]], dict[str, set[str]]]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    negatives: dict[str, set[str]] = collections.defaultdict(set)
    for r in rows:
        a, b = r["text_a"], r["text_b"]
        find(a), find(b)
        if str(r["label"]) == "1":
            parent[find(a)] = find(b)
        else:
            negatives[a].add(b)
            negatives[b].add(a)
    groups: dict[str, list[str]] = collections.defaultdict(list)
    for x in list(parent):
        groups[find(x)].append(x)
    return [sorted(g) for g in groups.values()], negatives


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--components", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("../shared/data not found: no QQP", file=sys.stderr)
        return 2
    with tarfile.open(data / "qqp" / "similiar_qqp_full.tar.gz") as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(".json"))
        rows = json.load(tar.extractfile(member))
    groups, negatives = components(rows)
    rng = random.Random(args.seed)
    big = [g for g in groups if len(g) >= 5]
    rng.shuffle(big)
    config = load_config(store={"backend": "memory"})
    encoder = SmartCache(config).encoder
    scores, labels, used = [], [], 0
    for members in big[:args.components]:
        rng.shuffle(members)
        phrasings, rewordings = members[:3], members[3:8]
        near = sorted({n for m in members for n in negatives[m]} - set(members))[:6]
        if not near:
            continue
        queries = [(q, 1) for q in rewordings] + [(q, 0) for q in near]
        got = np.zeros((len(queries), len(phrasings)))
        caches = []
        for phrasing in phrasings:
            cache = SmartCache(config, encoder=encoder)
            stored = cache.store([{"role": "user", "content": phrasing}], "an answer", session="s")
            if not stored.stored:       # never cached (time-sensitive, say): the question is left out
                break
            cache.promote(stored.cache_id)
            caches.append(cache)
        if len(caches) < len(phrasings):
            continue
        used += 1
        for j, cache in enumerate(caches):
            for i, (q, _) in enumerate(queries):
                found = cache.lookup([{"role": "user", "content": q}], session="s")
                got[i, j] = found.scores.same if found.scores.same is not None else float(found.zone.value == "hit")
        scores += [sorted(row, reverse=True) for row in got.tolist()]
        labels += [label for _, label in queries]
    s, y = np.asarray(scores), np.asarray(labels)
    print(f"{int(y.sum())} rewordings, {int((1 - y).sum())} near misses, from {used} questions\n")
    print("| signal | AUC | rewordings served at 0 / 1 / 2 / 5 % of near misses |")
    print("|---|---|---|")
    for name, x in (("best of three", s[:, 0]), ("second best", s[:, 1]), ("worst", s[:, 2]), ("mean", s.mean(1))):
        pos, neg = x[y == 1], x[y == 0]
        auc = float((pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean())
        served = [np.mean(pos > (neg.max() if fa == 0 else np.quantile(neg, 1 - fa))) for fa in (0, 0.01, 0.02, 0.05)]
        print(f"| {name} | {auc:.3f} | " + " / ".join(f"{v:.2f}" for v in served) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
