"""What proven sharing can serve on a stream: a request counts when its words (punctuation
aside) were asked before in its own session, or in ``--sessions`` other sessions of its tenant.

    .venv/bin/python scripts/stream_ceiling.py build/streams/zipf-zh.jsonl build/streams/zipf-en.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from smartcache.context import normalize_text
from smartcache.decide.decider import words_only


def ceiling(path: str, sessions: int) -> float:
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    served = total = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            total += 1
            key = (r.get("tenant") or "default", words_only(normalize_text(r["messages"][-1]["content"])))
            session = r.get("session") or r["id"]
            served += session in seen[key] or len(seen[key]) >= sessions
            seen[key].add(session)
    return served / total if total else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("streams", nargs="+")
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args(argv)
    for path in args.streams:
        print(f"{path}: {100 * ceiling(path, args.sessions):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
