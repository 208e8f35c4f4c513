"""The verifier refitted on a stream's first half, judged on its second half (figures, not a test).

    .venv/bin/python scripts/refit_split.py --stream build/streams/paraphrase-en.jsonl \
        --harvest build/training [--system smartcache@global] [--weight 5] [--error-bound 0.01]

Issue 28, item 7, on later traffic: the stream is replayed with the packaged verifier and
learning on (``--system``), the labels' evidence rows of its first half are what
``smartcache train --observations`` refits on (``eval/refit.py``, the public rows of
``--harvest`` beside them), and the whole stream is replayed again with the refit model.
Printed: hits and wrong answers in the second half, for each model, with the refit's report.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from smartcache import SmartCache, load_config
from smartcache.cli.replay import make_stream_systems
from smartcache.decide.verifier import TreeVerifier
from smartcache.eval import streams as st
from smartcache.eval.refit import load_public, refit
from smartcache.learn.observations import Rows


def second_half(config, stream: list, system: str, encoder) -> tuple[dict, Rows]:
    """Replay the whole stream; hits and wrong answers of its second half, and what it observed."""
    [replayer] = make_stream_systems([system], config, encoder)
    half = len(stream) // 2
    hits = wrong = 0
    for i, request in enumerate(stream):
        served = replayer.handle(request)
        if i >= half and served.hit:
            hits += 1
            wrong += served.served_key != request.answer_key
    tenant = stream[0].tenant
    return {"requests": len(stream) - half, "hits": hits, "wrong": wrong}, replayer.cache.observations(tenant)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stream", required=True)
    parser.add_argument("--harvest", required=True, help="the public rows: a harvest file or a folder of them")
    parser.add_argument("--system", default="smartcache@global")
    parser.add_argument("--weight", type=float, default=5.0)
    parser.add_argument("--error-bound", type=float, default=0.01)
    args = parser.parse_args()
    stream = st.load_stream(args.stream)
    if len({r.tenant for r in stream}) != 1:
        print("one tenant a stream, please", file=sys.stderr)
        return 2
    config = load_config(store={"backend": "memory"},
                         learning={"error_bound": args.error_bound, "observations_kept": 100_000})
    encoder = SmartCache(config).encoder
    before, observed = second_half(config, stream, args.system, encoder)
    split = stream[len(stream) // 2].t
    first = observed.take(observed.at < split)
    packaged = TreeVerifier.load()
    model, report = refit(load_public(Path(args.harvest)), first, packaged, error_bound=args.error_bound,
                          weight=args.weight, say=lambda m: print(m, file=sys.stderr))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "refit.json"
        path.write_text(json.dumps(model.to_json()), encoding="utf-8")
        after, _ = second_half(replace(config, verifier_path=str(path)), stream, args.system, encoder)
    print(json.dumps({"stream": args.stream, "system": args.system, "observations": len(observed),
                      "first_half_observations": len(first), "packaged": before, "refit": after,
                      "refit_report": {k: report[k] for k in ("held_back", "held_back_same", "raised",
                                                              "before", "after", "operating_points")}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
