"""Build the verifier's training cases (CASES.md format), one file per source, from a fixed seed.

    .venv/bin/python scripts/build_training.py --out build/training [--seed 0] [--scale 1.0]

Sources (each file is one source; `smartcache train` holds whole source families out):

    qqp, gptcache           English question pairs (QQP duplicates / GPTCache paraphrases)
    lcqmc, bq, pawsx, atec  Chinese question pairs (validation splits; ATEC valid + test)
    stsb                    STS-B in Chinese: score >= 4.4 same, <= 2.5 different, between dropped
                            (each of these as <set>.pool.jsonl: a pool of traffic in STREAMS.md lines,
                            every request judged against all earlier answers, see ``pool``)
    <set>-ctx               pairs of a set placed after a history: the same history (label kept),
                            small talk inserted (label kept), an earlier finished topic first
                            (label kept)
    crosswoz                CrossWOZ dialogues: a later turn against an earlier one of the same
                            dialogue (different), a context-dependent turn after another
                            dialogue's history (different), a turn asked again after small talk (same)
    gen-<domain>            the benchmark generator's templates (seeds 100+, never 0 or 1)

Reads only ../shared/data; skips what is absent, saying so.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from build_benchmark import Builder, load_crosswoz  # noqa: E402

from smartcache.context import normalize_text  # noqa: E402
from smartcache.eval.training import POOL_SUFFIX  # noqa: E402
from smartcache.eval.calibrate import load_pair_set  # noqa: E402
from smartcache.paths import shared_data  # noqa: E402

SMALL_TALK = {"zh": [("谢谢", "不客气！"), ("好的", "好的，还有什么需要帮忙的吗？"), ("嗯嗯，明白了", "好的。")],
              "en": [("thanks!", "You're welcome!"), ("ok got it", "Great, anything else?"), ("cool", "Glad to help.")]}
# Context-dependent CrossWOZ turns: they point back ("那", "它", "这家") or leave the subject out.
_POINTS_BACK = re.compile(r"那|这|它|他们|该|上述|刚才|前面|还有|呢[？?]?$")


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def flatten(history: list[tuple[str, str]]) -> list[dict]:
    return [m for u, a in history for m in (user(u), assistant(a))]


def pair_case(cid: str, source: str, lang: str, a: str, b: str, label: int, *, history_a=(), history_b=(),
              category: str = "pair") -> dict:
    return {"id": cid, "lang": lang, "domain": source, "category": category, "session": cid,
            "cached": [{"messages": flatten(list(history_a)) + [user(a)], "answer": f"(answer to: {a})"}],
            "probe": {"messages": flatten(list(history_b)) + [user(b)]}, "expect": "hit" if label else "miss"}


def clusters(rows: list[tuple[str, str, int, str]]) -> dict[str, str]:
    """normalised text -> its cluster key: texts joined by a pair labelled the same question,
    and identical texts (after normalisation), are one question with one answer.

        >>> sorted(clusters([("a", "b", 1, "en"), ("b", "c", 1, "en"), ("c", "d", 0, "en")]).items())
        [('a', 'k0'), ('b', 'k0'), ('c', 'k0'), ('d', 'k1')]
    """
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, label, _ in rows:
        ka, kb = find(normalize_text(a)), find(normalize_text(b))
        if label:
            parent[ka] = kb
    roots: dict[str, str] = {}
    return {text: roots.setdefault(find(text), f"k{len(roots)}") for text in list(parent)}


def pool(name: str, rows: list[tuple[str, str, int, str]], rng: random.Random) -> list[dict]:
    """A source's pairs as one pool of traffic (STREAMS.md lines, one tenant and session):
    each pair's first question arrives at a random point, its partner later, so every
    request is judged against all the answers stored before it, as in a cache of thousands
    of entries. Keys come from ``clusters``; the answers are synthetic (one text a key)."""
    key = clusters(rows)
    events = []
    for i, (a, b, label, lang) in enumerate(rows):
        first = rng.random()
        events.append((first, a, "first", lang))
        events.append((first + (1 - first) * rng.random(), b, "paraphrase" if label else "near_miss", lang))
    events.sort(key=lambda e: e[0])
    out = []
    for j, (at, text, category, lang) in enumerate(events):
        k = key[normalize_text(text)]
        out.append({"id": f"{name}-pool-{j:05d}", "t": round(at * len(events) * 2.0, 2), "tenant": name,
                    "session": "pool", "lang": lang, "source": name, "category": category,
                    "messages": [user(text)], "answer_key": k, "answer": f"(answer {k})"})
    return out


def stsb_rows(data: Path) -> list[tuple[str, str, int]]:
    try:
        return load_pair_set("stsb", data)
    except OSError:
        return []


def atec_rows(data: Path) -> list[tuple[str, str, int]]:
    try:
        return load_pair_set("atec", data)
    except OSError:
        return []


class Sources:
    def __init__(self, data: Path, seed: int, scale: float) -> None:
        self.data, self.rng, self.scale = data, random.Random(seed), scale
        self.crosswoz = load_crosswoz()
        self.en_exchanges: list[tuple[str, str]] = []

    def n(self, count: int) -> int:
        return max(1, int(count * self.scale))

    def sample(self, rows: list, count: int) -> list:
        rows = list(rows)
        self.rng.shuffle(rows)
        return rows[:self.n(count)]

    def pairs(self) -> dict[str, list[tuple[str, str, int, str]]]:
        """name -> rows (a, b, label, lang)."""
        out: dict[str, list[tuple[str, str, int, str]]] = {}
        plan = {"qqp": 3000, "gptcache-mock": 600, "lcqmc": 3000, "bq": 1500, "pawsx": 2000}
        for name, count in plan.items():
            try:
                rows = load_pair_set(name, self.data)
            except (OSError, KeyError) as exc:
                print(f"note: {name} skipped ({exc})", file=sys.stderr)
                continue
            lang = "en" if name in ("qqp", "gptcache-mock") else "zh"
            out["gptcache" if name == "gptcache-mock" else name] = [(a, b, l, lang) for a, b, l in self.sample(rows, count)]
        for name, rows, count in (("atec", atec_rows(self.data), 2500), ("stsb", stsb_rows(self.data), 1500)):
            if rows:
                out[name] = [(a, b, l, "zh") for a, b, l in self.sample(rows, count)]
            else:
                print(f"note: {name} not found under {self.data}", file=sys.stderr)
        # One text labelled a different question from itself is a labelling error (PAWS-X's
        # translation made some word-swap pairs identical): a row that teaches nothing and, in
        # a calibration split, holds an operating point at 0.999 on its own.
        out = {name: [r for r in rows if r[2] or normalize_text(r[0]) != normalize_text(r[1])]
               for name, rows in out.items()}
        # English histories: unrelated QQP questions, answered briefly.
        self.en_exchanges = [(a, f"Here is a short answer about that: {b}") for a, b, _, _ in out.get("qqp", [])[-400:]]
        return out

    def history(self, lang: str, k: int) -> list[tuple[str, str]]:
        if lang == "zh" and self.crosswoz:
            return list(self.rng.choice(self.crosswoz)[:k])
        return self.rng.sample(self.en_exchanges, k) if len(self.en_exchanges) >= k else []

    def placed(self, name: str, rows: list[tuple[str, str, int, str]], count: int) -> list[dict]:
        """A set's pairs after a history, in three forms that keep the pair's label."""
        cases = []
        for i, (a, b, label, lang) in enumerate(self.sample(rows, count)):
            history = self.history(lang, self.rng.randint(1, 3))
            form = self.rng.choice(("same_history", "small_talk", "earlier_topic"))
            probe_history = list(history)
            if form == "small_talk":
                probe_history.insert(self.rng.randint(0, len(history)), self.rng.choice(SMALL_TALK[lang]))
            elif form == "earlier_topic":
                probe_history = self.history(lang, 1)[:1] + probe_history
            cases.append(pair_case(f"{name}-ctx-{i:05d}", f"{name}-ctx", lang, a, b, label, history_a=history,
                                   history_b=probe_history, category=form))
        return cases

    def dialogues(self, count: int) -> list[dict]:
        """CrossWOZ: another question of the same dialogue, a context-dependent question after
        another dialogue, the same question again after small talk."""
        cases, woz = [], self.crosswoz
        for i in range(self.n(count) if woz else 0):
            d = self.rng.choice(woz)
            form = self.rng.choice(("later_turn", "other_dialogue", "repeat"))
            if form == "later_turn" and len(d) >= 3:
                x, y = sorted(self.rng.sample(range(len(d)), 2))
                cases.append(pair_case(f"crosswoz-{i:05d}", "crosswoz", "zh", d[x][0], d[y][0], 0,
                                       history_a=d[:x], history_b=d[:y], category=form))
            elif form == "other_dialogue":
                turns = [j for j in range(1, len(d)) if _POINTS_BACK.search(d[j][0]) or len(d[j][0]) <= 12]
                other = self.rng.choice(woz)
                if turns and other is not d:
                    j = self.rng.choice(turns)
                    k = self.rng.randint(1, max(1, min(j, len(other) - 1)))
                    cases.append(pair_case(f"crosswoz-{i:05d}", "crosswoz", "zh", d[j][0], d[j][0], 0,
                                           history_a=d[:j], history_b=other[:k], category=form))
            else:
                j = self.rng.randrange(len(d))
                cases.append(pair_case(f"crosswoz-{i:05d}", "crosswoz", "zh", d[j][0], d[j][0], 1,
                                       history_a=d[:j], history_b=d[:j] + [self.rng.choice(SMALL_TALK["zh"])],
                                       category=form))
        return cases

    def generator(self, per_cell: int) -> dict[str, list[dict]]:
        out: dict[str, list[dict]] = {}
        for case in Builder(100 + self.rng.randrange(1000), self.crosswoz).build(per_cell):
            case["id"] = "gen-" + case["id"]
            out.setdefault(f"gen-{case['domain']}", []).append(case)
        return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ROOT / "build" / "training"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every source's size (tests use 0.01)")
    parser.add_argument("--hold-out", default="bq", metavar="LIST",
                        help="pair sources left out whole, for the streams the cache is judged on "
                             "(scripts/build_streams.py); default bq, 'none' for none")
    args = parser.parse_args(argv)
    data = shared_data()
    if data is None:
        print("../shared/data not found: no training data", file=sys.stderr)
        return 2
    src = Sources(data, args.seed, args.scale)
    files: dict[str, list[dict]] = {}
    held = {n.strip() for n in args.hold_out.split(",") if n.strip() and n.strip() != "none"}
    pairs = {name: rows for name, rows in src.pairs().items() if name not in held}
    for name, rows in pairs.items():
        lang = rows[0][3] if rows else "zh"
        # Single-turn pairs as a pool of traffic, not one case each: a pair judged alone never
        # meets the near misses a cache of thousands of entries holds (issue 27).
        files[f"{name}{POOL_SUFFIX[:-len('.jsonl')]}"] = pool(name, rows, src.rng)
        if name in ("qqp", "lcqmc", "bq", "atec", "pawsx"):
            files[f"{name}-ctx"] = src.placed(name, rows, 600 if lang == "zh" else 1000)
    files["crosswoz"] = src.dialogues(1200)
    files.update(src.generator(per_cell=max(1, int(16 * args.scale))))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("*.jsonl"):      # a source renamed or dropped must not linger
        stale.unlink()
    for name, cases in sorted(files.items()):
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for case in cases:
                fh.write(json.dumps(case, ensure_ascii=False) + "\n")
        print(f"{name:16} {len(cases):6} cases", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
