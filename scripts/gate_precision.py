"""How well the reset and correction gates tell a turn spoken to the conversation from one about its topic.

    .venv/bin/python scripts/gate_precision.py docs/eval/devset/gates-a.jsonl [--show]

Reads cases (CASES.md) whose ``category`` is ``topical_marker`` (a turn that uses the words of
a reset or a correction about its topic: must pass the gates), ``genuine_reset`` or
``genuine_correction`` (must be stopped by the gate of its kind). The turn read is the probe's
last user turn, after the probe's history. Prints, per language, the share of genuine turns
each gate stops (its 95 % lower bound) and the share of topical turns either gate stops (its
95 % Clopper-Pearson bounds). ``--show`` prints every turn read wrongly. To score an older
version, run this script with that version's ``src`` first on ``PYTHONPATH`` (a git worktree).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from smartcache.context import normalize_text
from smartcache.fingerprint.tags import ChangeFlag, change_flags, corrects_an_answer
from smartcache.learn.bound import lower, upper

KINDS = {"genuine_reset": ChangeFlag.RESET, "genuine_correction": ChangeFlag.CORRECTION}


def gates(text: str, has_context: bool) -> set[ChangeFlag]:
    """The gates a normalised turn meets: a reset, a correction (with the gate's own rule that a
    first turn corrects only when it opens with the correction)."""
    found = set(change_flags(text)) & {ChangeFlag.RESET, ChangeFlag.CORRECTION}
    if ChangeFlag.CORRECTION in found and not corrects_an_answer(text, has_context):
        found.discard(ChangeFlag.CORRECTION)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("cases", nargs="+")
    parser.add_argument("--show", action="store_true", help="print every turn read wrongly")
    args = parser.parse_args()
    rows = []
    for path in args.cases:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                if case.get("category") in ("topical_marker", *KINDS):
                    rows.append(case)
    print("| lang | genuine resets stopped | genuine corrections stopped | topical turns stopped (95 % bounds) |")
    print("|---|---|---|---|")
    tally: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for case in rows:
        messages = case["probe"]["messages"]
        text = normalize_text(messages[-1]["content"])
        has_context = any(m["role"] == "assistant" for m in messages[:-1])
        met = gates(text, has_context)
        category = case["category"]
        right = bool(met) is False if category == "topical_marker" else KINDS[category] in met
        counts = tally[(case["lang"], category)]
        counts[0] += right
        counts[1] += 1
        if args.show and not right:
            print(f"  wrong: {case['id']} {category} {sorted(f.value for f in met)}: {messages[-1]['content'][:100]}")
    for lang in sorted({lang for lang, _ in tally}):
        cells = []
        for category in ("genuine_reset", "genuine_correction"):
            k, n = tally[(lang, category)]
            cells.append(f"{k} / {n}" + (f" ({k / n:.2f}, ≥ {lower(k, n):.2f})" if n else ""))
        k, n = tally[(lang, "topical_marker")]
        stopped = n - k
        cells.append(f"{stopped} / {n}" + (f" ({stopped / n:.3f}, {lower(stopped, n):.3f}–{upper(stopped, n):.3f})"
                                          if n else ""))
        print(f"| {lang} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
