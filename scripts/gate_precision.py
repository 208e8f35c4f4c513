"""How well the gates that settle a turn before any candidate read it: reset, correction, time.

    .venv/bin/python scripts/gate_precision.py docs/eval/devset/gates-a.jsonl docs/eval/devset/timely-a.jsonl [--show]

Reads cases (CASES.md) by ``category``; the turn read is the probe's last user turn:

- ``genuine_reset`` / ``genuine_correction``: must be stopped by the gate of its kind (a
  correction on a first turn only where it opens the turn, as the gate reads it);
- ``topical_marker``: uses the words of a reset or a correction about its topic, must pass both;
- ``time_bound``: its answer depends on when it is asked, must be read as time-sensitive;
- ``timeless_time_word``: holds a time word but not such an answer, must not be.

Prints, per language and category, the turns read right, with the 95 % Clopper-Pearson bounds
of the share read wrong. ``--show`` prints every turn read wrongly. To score an older version,
run this script with that version's ``src`` first on ``PYTHONPATH`` (a git worktree).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from smartcache.context import normalize_text
from smartcache.fingerprint.tags import ChangeFlag, change_flags, corrects_an_answer, is_time_sensitive
from smartcache.learn.bound import lower, upper

CATEGORIES = ("genuine_reset", "genuine_correction", "topical_marker", "time_bound", "timeless_time_word")


def gates(text: str, has_context: bool) -> set[str]:
    """The gates a normalised turn meets: "reset", "correction", "time"."""
    flags = change_flags(text)
    found = {f.value for f in flags & {ChangeFlag.RESET, ChangeFlag.CORRECTION}}
    if "correction" in found and not corrects_an_answer(text, has_context):
        found.discard("correction")
    if is_time_sensitive(text):
        found.add("time")
    return found


def read_right(category: str, met: set[str]) -> bool:
    if category == "genuine_reset":
        return "reset" in met
    if category == "genuine_correction":
        return "correction" in met
    if category == "topical_marker":
        return not met & {"reset", "correction"}
    if category == "time_bound":
        return "time" in met
    return "time" not in met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--show", action="store_true", help="print every turn read wrongly")
    args = parser.parse_args()
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for path in args.cases:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            case = json.loads(line)
            category = case.get("category")
            if category not in CATEGORIES:
                continue
            messages = case["probe"]["messages"]
            text = normalize_text(messages[-1]["content"])
            has_context = any(m["role"] == "assistant" for m in messages[:-1])
            met = gates(text, has_context)
            right = read_right(category, met)
            counts = tally[(case["lang"], category)]
            counts[0] += right
            counts[1] += 1
            if args.show and not right:
                print(f"  wrong: {case['id']} {category} {sorted(met)}: {messages[-1]['content'][:100]}")
    print("| lang | category | read right | read wrong (95 % bounds) |")
    print("|---|---|---|---|")
    for lang, category in sorted(tally, key=lambda k: (k[0], CATEGORIES.index(k[1]))):
        k, n = tally[(lang, category)]
        wrong = n - k
        print(f"| {lang} | {category} | {k} / {n} | {wrong / n:.3f} ({lower(wrong, n):.3f}–{upper(wrong, n):.3f}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
