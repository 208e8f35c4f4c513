"""The tables of docs/eval/wrong-answers.md, from the runs that measure them (issue 27).

    make competing streams && .venv/bin/python scripts/attack_probe.py --json build/attack.json
    .venv/bin/python scripts/wrong_answers_report.py > build/wrong-answers-tables.md

Reads build/stream-*.json (``smartcache replay --stream``), build/devsets.json and
build/devsets-before.json (``scripts/devsets_competing.py``), build/shapes-b.json and
build/attack.json when present, and prints markdown.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
STREAMS = ("paraphrase-zh", "paraphrase-en", "nearmiss-zh", "nearmiss-en", "tenants-zh", "tenants-en", "multiturn")


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.2f} %"


def streams() -> list[str]:
    lines = ["| stream | system | hit rate | error rate (95 % upper) | precision@hit |", "|---|---|---|---|---|"]
    for name in STREAMS:
        path = BUILD / f"stream-{name}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text(encoding="utf-8"))
        for system, s in report["systems"].items():
            o = s["overall"]
            lines.append(f"| {name} ({o['n']}) | {system} | {_pct(o['hit_rate'])} | {_pct(o['error_rate'])} "
                         f"({_pct(o['error_rate_upper95'])}) | {_pct(o['precision_at_hit'])} |")
    return lines


def devsets() -> list[str]:
    path = BUILD / "devsets.json"
    if not path.exists():
        return []
    after = json.loads(path.read_text(encoding="utf-8"))["sets"]
    before_path = BUILD / "devsets-before.json"
    before = json.loads(before_path.read_text(encoding="utf-8"))["sets"] if before_path.exists() else {}
    lines = ["| set | before: recall / false-hit | one case at a time | one session, competing | global pool, competing |",
             "|---|---|---|---|---|"]
    for name, runs in after.items():
        old = before.get(name, {}).get("case", {}).get("overall")
        cells = [f"{old['hit_recall']:.3f} / {old['false_hit_rate']:.3f}" if old else "–"]
        for mode in ("case", "session", "global"):
            o = runs.get(mode, {}).get("overall")
            cells.append(f"{o['hit_recall']:.3f} / {o['false_hit_rate']:.3f} (≤ {o['false_hit_rate_upper95']:.3f})"
                         if o else "–")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def shapes_b() -> list[str]:
    path = BUILD / "shapes-b.json"
    if not path.exists():
        return []
    runs = json.loads(path.read_text(encoding="utf-8"))["sets"]["shapes-b"]
    lines = ["| mode | lang | category | n | hit recall (95 % lower) | false-hit rate (95 % upper) |",
             "|---|---|---|---|---|---|"]
    for mode, r in runs.items():
        for cat, o in r["by_category"].items():
            recall = f"{o['hit_recall']:.3f} ({o['hit_recall_lower95']:.3f})" if o.get("positives") else "–"
            false = f"{o['false_hit_rate']:.3f} ({o['false_hit_rate_upper95']:.3f})" if o["n"] - o.get("positives", 0) else "–"
            lines.append(f"| {mode} | all | {cat} | {o['n']} | {recall} | {false} |")
        for lang, o in r["by_lang"].items():
            lines.append(f"| {mode} | {lang} | all | {o['n']} | {o['hit_recall']:.3f} ({o['hit_recall_lower95']:.3f}) | "
                         f"{o['false_hit_rate']:.3f} ({o['false_hit_rate_upper95']:.3f}) |")
    return lines


def attack() -> list[str]:
    path = BUILD / "attack.json"
    if not path.exists():
        return []
    r = json.loads(path.read_text(encoding="utf-8"))
    served = r["poisoned_served"]
    lines = [f"attack requests: {r['attack_requests']}; poisoned answers served: {served['total']} of "
             f"{served.get('lookups', '?')} victim lookups", "",
             "| attack kind | served | of |", "|---|---|---|"]
    for kind, row in served.get("by_kind", {}).items():
        lines.append(f"| {kind} | {row['served']} | {row['asked']} |")
    return lines


def main() -> int:
    for title, part in (("Streams", streams()), ("Dev sets and the benchmark", devsets()),
                        ("shapes-b (unread until scored once)", shapes_b()), ("Attack probe", attack())):
        if part:
            print(f"## {title}\n")
            print("\n".join(part) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
