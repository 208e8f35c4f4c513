"""Development traffic streams (STREAMS.md) from ../shared/data and the dev case files, fixed seed.

    python scripts/build_streams.py --out build/streams --seed 0

Mixes (3,000 requests each unless --size says otherwise), one file a mix and language:

    paraphrase-{zh,en}   popular questions come back reworded (and some word for word); near
                         misses and new questions between them
    nearmiss-{zh,en}     a question's near miss (a pair labelled different) arrives a few
                         requests after it; paraphrases are rarer
    tenants-{zh,en}      the paraphrase mix spread over four tenants, each with its own questions
                         and a share asked in every tenant (an answer must never cross a tenant)
    zipf-{zh,en}         most requests repeat a popular question word for word (Zipf), from 400
                         users' sessions and with no ``scope``: the cache's own policy decides what
                         is shared across users (proven the same in three sessions)
    multiturn            the dev case files (docs/eval/devset, but the unread sets) as
                         conversations: each case's cached turns first, its probe later

Single-turn pairs come from sources the verifier was never trained on where there is one:
BQ for Chinese (``build_training.py`` holds it out whole). English has one pair source here,
QQP: its streams use only pairs ``build_training.py`` did not sample, so the rows are unseen
but the source is not. Answers are an oracle: one text per cluster of paraphrases (pairs
labelled the same question, joined), so comparing answers is exact.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from build_training import Sources, clusters  # noqa: E402

from smartcache.context import normalize_text, parse_messages, read_key  # noqa: E402
from smartcache.eval.calibrate import load_pair_set  # noqa: E402
from smartcache.eval.cases import load_cases  # noqa: E402
from smartcache.eval.harness import keeps_own_answer  # noqa: E402  (the same rule as competing runs)
from smartcache.paths import shared_data  # noqa: E402

from devsets_competing import UNREAD as UNREAD_SETS  # noqa: E402  (kept unread: never in a stream)


def unseen_pairs(data: Path, name: str, seed: int) -> list[tuple[str, str, int]]:
    """A source's pairs minus the ones ``build_training.py`` samples at ``seed``."""
    rows = load_pair_set(name, data)
    trained = Sources(data, seed, 1.0).pairs().get(name, [])
    seen = {(a, b) for a, b, _, _ in trained}
    return [r for r in rows if (r[0], r[1]) not in seen]


class Mixer:
    """Draws a stream from pairs: firsts, paraphrases, near misses, repeats and new questions."""

    def __init__(self, rows: list[tuple[str, str, int]], lang: str, source: str, rng: random.Random) -> None:
        self.rng, self.lang, self.source = rng, lang, source
        self.key = clusters([(a, b, label, lang) for a, b, label in rows])
        self.same = [(a, b) for a, b, label in rows if label]
        self.different = [(a, b) for a, b, label in rows if not label]
        rng.shuffle(self.same)
        rng.shuffle(self.different)

    def request(self, text: str, category: str, tenant: str = "t0") -> dict:
        k = self.key[normalize_text(text)]
        return {"tenant": tenant, "lang": self.lang, "source": self.source, "category": category,
                "messages": [{"role": "user", "content": text}], "answer_key": f"{self.source}-{k}",
                "answer": f"({self.lang} answer {self.source}-{k})"}

    def draw(self, size: int, shares: dict[str, float], near_gap: int, tenant: str = "t0") -> list[dict]:
        """``shares``: of paraphrase, near_miss, repeat, new (firsts fill the rest)."""
        out: list[dict] = []
        pending: list[tuple[int, dict]] = []        # (earliest position, request) waiting to be sent
        asked: list[dict] = []                       # firsts, most popular first
        while len(out) < size:
            due = [p for p in pending if p[0] <= len(out)]
            if due:
                item = min(due, key=lambda p: p[0])
                pending.remove(item)
                out.append(item[1])
                continue
            roll, acc = self.rng.random(), 0.0
            kind = "first"
            for name in ("paraphrase", "near_miss", "repeat", "new"):
                acc += shares[name]
                if roll < acc:
                    kind = name
                    break
            if kind == "repeat" and asked:
                # Zipf-like popularity: earlier questions come back more often.
                pick = asked[min(int(self.rng.paretovariate(1.2)) - 1, len(asked) - 1)]
                out.append({**pick, "category": "repeat"})
            elif kind == "paraphrase" and self.same:
                a, b = self.same.pop()
                first = self.request(a, "first", tenant)
                out.append(first)
                asked.insert(0, first)
                pending.append((len(out) + self.rng.randint(5, 400), self.request(b, "paraphrase", tenant)))
            elif kind == "near_miss" and self.different:
                a, b = self.different.pop()
                first = self.request(a, "first", tenant)
                out.append(first)
                asked.append(first)
                pending.append((len(out) + self.rng.randint(1, near_gap), self.request(b, "near_miss", tenant)))
            elif self.different:
                a, _ = self.different.pop()
                out.append(self.request(a, "new" if kind == "new" else "first", tenant))
            else:
                break
        return out[:size]


def numbered(requests: list[dict], name: str, step: float = 2.0) -> list[dict]:
    return [{"id": f"{name}-{i:05d}", "t": round(i * step, 1), **r} for i, r in enumerate(requests)]


def multiturn(devset: Path, rng: random.Random) -> list[dict]:
    """The dev cases as traffic: a case's cached conversations are sent (and answered) first,
    its probe some requests later, in the case's sessions. A probe's key is its expected
    answer's when it expects a hit, its own otherwise.

    One conversation has one answer: the sets write their answers per case, so a conversation
    another case caches word for word (as the exact path reads it) takes the first such case's
    answer and key, as the engine would answer it once; so does a probe expecting a miss that
    asks it. Cases about answers personal to a session or to one moment keep their own
    (``eval.harness.keeps_own_answer``)."""
    sets = [(path, load_cases(path)) for path in sorted(devset.glob("*.jsonl")) if path.stem not in UNREAD_SETS]
    answered: dict[str, tuple[str, str]] = {}      # conversation -> (answer key, answer)
    for path, cases in sets:
        for case in cases:
            if not keeps_own_answer(case):
                for i, item in enumerate(case.cached):
                    answered.setdefault(_conversation(item.messages), (f"{path.stem}:{case.id}:{i}", item.answer))
    events: list[tuple[float, int, dict]] = []
    for path, cases in sets:
        for case in cases:
            start = rng.random()
            tenant = "t0"
            keys = []
            for i, item in enumerate(case.cached):
                key, answer = f"{path.stem}:{case.id}:{i}", item.answer
                if not keeps_own_answer(case):
                    key, answer = answered[_conversation(item.messages)]
                keys.append(key)
                events.append((start + i * 1e-6, len(events), {
                    "tenant": tenant, "session": f"{path.stem}:{case.session}", "lang": case.lang,
                    "source": path.stem, "category": "cached", "messages": item.messages,
                    "answer_key": key, "answer": answer}))
            index = case.expect_index % len(case.cached) if case.cached else 0
            answer = f"(engine answer to {case.id})"
            if case.expect == "hit":
                key = keys[index] if keys else f"{path.stem}:{case.id}:{index}"
            else:
                key = f"{path.stem}:{case.id}:probe"
                if not keeps_own_answer(case):    # the words another case caches
                    key, answer = answered.get(_conversation(case.probe), (key, answer))
            events.append((start + (1 - start) * rng.random() + 1e-3, len(events), {
                "tenant": tenant, "session": f"{path.stem}:{case.probe_session}", "lang": case.lang,
                "source": path.stem, "category": f"{case.expect}:{case.category}", "messages": case.probe,
                "answer_key": key, "answer": answer}))
    events.sort(key=lambda e: (e[0], e[1]))
    return [e[2] for e in events]




def _conversation(messages: list[dict]) -> str:
    """What makes two requests the same request to the exact path: the system prompt, the
    history, and the current turn's words."""
    key = read_key(parse_messages(messages))
    return f"{key.system_hash}|{key.digest}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "streams"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", type=int, default=3000)
    args = parser.parse_args(argv)
    data = shared_data()
    if data is None:
        print("../shared/data not found: no streams", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    streams: dict[str, list[dict]] = {}
    sources = {"zh": ("bq", load_pair_set("bq", data)), "en": ("qqp", unseen_pairs(data, "qqp", args.seed))}
    paraphrase = {"paraphrase": 0.35, "near_miss": 0.12, "repeat": 0.15, "new": 0.13}
    nearmiss = {"paraphrase": 0.10, "near_miss": 0.45, "repeat": 0.05, "new": 0.15}
    for lang, (source, rows) in sources.items():
        streams[f"paraphrase-{lang}"] = Mixer(rows, lang, source, rng).draw(args.size, paraphrase, 30)
        streams[f"nearmiss-{lang}"] = Mixer(rows, lang, source, rng).draw(args.size, nearmiss, 10)
        # Four tenants: each draws its own traffic, and a share of one tenant's questions is
        # asked in the others too (the same text, never the same entry).
        mixer = Mixer(rows, lang, source, rng)
        per = [mixer.draw(args.size // 4, paraphrase, 30, tenant=f"t{i}") for i in range(4)]
        shared = [dict(r, tenant=f"t{(i + 1) % 4}", category="other_tenant") for i, part in enumerate(per)
                  for r in part[::12]]
        merged = [r for part in per for r in part] + shared
        order = defaultdict(float)
        for i, part in enumerate(per):
            for j, r in enumerate(part):
                order[id(r)] = j + rng.random()
        for r in shared:
            order[id(r)] = rng.uniform(args.size // 8, args.size // 4)
        streams[f"tenants-{lang}"] = sorted(merged, key=lambda r: order[id(r)])[:args.size]
    streams["multiturn"] = multiturn(ROOT / "docs" / "eval" / "devset", rng)
    # Drawn from their own generator, so that the streams above stay what they were.
    zipf_rng = random.Random(args.seed + 1)
    zipf = {"paraphrase": 0.12, "near_miss": 0.06, "repeat": 0.60, "new": 0.10}
    for lang, (source, rows) in sources.items():
        drawn = Mixer(rows, lang, source, zipf_rng).draw(args.size, zipf, 30)
        streams[f"zipf-{lang}"] = [dict(r, session=f"u{zipf_rng.randrange(400):03d}") for r in drawn]
    for name, requests in streams.items():
        path = out / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for r in numbered(requests, name):
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        print(f"{path}: {len(requests)} requests", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
