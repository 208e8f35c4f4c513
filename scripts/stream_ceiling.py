"""What proven sharing can serve on a stream, word for word: a request counts when its words
(punctuation aside) were asked before in its own session, or when ``--sessions`` other sessions
of its tenant asked them (``words``), or asked any wording of its question (``question``: the
stream's ``answer_key``, which only this scorer reads), the words themselves asked before.

    .venv/bin/python scripts/stream_ceiling.py build/streams/zipf-zh.jsonl build/streams/zipf-en.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from smartcache.context import normalize_text
from smartcache.decide.decider import words_only


def ceilings(path: str, sessions: int) -> tuple[float, float]:
    """(words, question): the share of requests each rule would serve."""
    asked: dict[tuple[str, str], set[str]] = defaultdict(set)       # (tenant, words) -> sessions
    question: dict[tuple[str, str], set[str]] = defaultdict(set)    # (tenant, answer_key) -> sessions
    by_words = by_question = total = 0
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            total += 1
            tenant = r.get("tenant") or "default"
            key = (tenant, words_only(normalize_text(r["messages"][-1]["content"])))
            wanted = (tenant, r["answer_key"])
            session = r.get("session") or r["id"]
            own = session in asked[key]
            by_words += own or len(asked[key]) >= sessions
            by_question += own or (bool(asked[key]) and len(question[wanted]) >= sessions)
            asked[key].add(session)
            question[wanted].add(session)
    return (by_words / total, by_question / total) if total else (0.0, 0.0)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("streams", nargs="+")
    parser.add_argument("--sessions", type=int, default=3)
    args = parser.parse_args(argv)
    for path in args.streams:
        words, question = ceilings(path, args.sessions)
        print(f"{path}: words {100 * words:.1f} %, question {100 * question:.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
