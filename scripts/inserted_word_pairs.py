"""How public pairs label one request that is the other with one word inserted (figures, not a test).

    .venv/bin/python scripts/inserted_word_pairs.py [--sets lcqmc,bq,qqp,pawsx] [--n 4000] [--show 8]

A candidate rule for narrowing modifiers ("a screenshot" / "a scrolling screenshot") would
refuse a pair whose only edit, in the diff's tokens (fillers and synonyms folded, as the rules
see them), is one English word or one to three Chinese characters inserted, not a question or
form word. Counts such pairs per set by label: where most are labelled the same question, the
shape cannot be a veto.
"""

from __future__ import annotations

import argparse
import random
import sys

from smartcache.context import normalize_text
from smartcache.decide.tokens import _QUESTION_WORDS, _is_form_word, _tokens, diff
from smartcache.eval.calibrate import load_pair_set
from smartcache.paths import shared_data


def inserted_word(a: str, b: str) -> str | None:
    """The word one request inserts into the other, its only edit, or None."""
    ta, tb = _tokens(normalize_text(a)), _tokens(normalize_text(b))
    ops = [op for op in diff(ta, tb).opcodes if op[0] != "equal"]
    if len(ops) != 1 or ops[0][0] not in ("insert", "delete"):
        return None
    kind, i1, i2, j1, j2 = ops[0]
    span = ta[i1:i2] if kind == "delete" else tb[j1:j2]
    chinese = all(len(t) == 1 and t >= "\u3400" for t in span)
    if len(span) > (3 if chinese else 1) or any(_is_form_word(t) or t in _QUESTION_WORDS for t in span):
        return None
    if not any(t.isalnum() for t in span):
        return None
    return ("" if chinese else " ").join(span)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="lcqmc,bq,qqp,pawsx")
    parser.add_argument("--n", type=int, default=4000, help="pairs per set (shuffled, seed 0)")
    parser.add_argument("--show", type=int, default=8, help="examples shown per set and label")
    args = parser.parse_args()
    data = shared_data()
    if data is None:
        print("../shared/data not found: no pair sets", file=sys.stderr)
        return 2
    totals = [0, 0]
    for name in args.sets.split(","):
        rows = load_pair_set(name, data)
        random.Random(0).shuffle(rows)
        found: dict[int, list[tuple[str, str, str]]] = {0: [], 1: []}
        for a, b, label in rows[:args.n]:
            word = inserted_word(a, b)
            if word:
                found[int(label)].append((word, a, b))
        totals[0] += len(found[0])
        totals[1] += len(found[1])
        print(f"{name}: one word inserted in {len(found[0]) + len(found[1])} pairs, {len(found[1])} labelled the "
              f"same question, {len(found[0])} different")
        for label, tag in ((1, "same"), (0, "different")):
            for word, a, b in found[label][:args.show]:
                print(f"    {tag}: {word!r}: {a!r} / {b!r}")
    print(f"all: {totals[0] + totals[1]} pairs, {totals[1]} labelled the same question")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
