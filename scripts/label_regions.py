"""The labels a stream gives the learning cache, by the verifier's P(same) and the turn cosine:
whether a second score finds a region below the packaged point that the bound could earn.

    .venv/bin/python scripts/label_regions.py build/streams/paraphrase-en.jsonl

Replays the stream with the packaged defaults, every answer in the global pool (as
``smartcache@global``), and prints right / all labels of forwarded requests per cell.
"""

from __future__ import annotations

import argparse

from smartcache import SmartCache, load_config
from smartcache.cache import SmartCache as _Cache
from smartcache.eval import streams as st
from smartcache.fingerprint import shared_encoder

SAME_EDGES = (0.0, 0.1, 0.3, 0.5, 0.65, 0.78, 1.01)
COSINE_EDGES = (0.0, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 1.01)


def labels(path: str) -> list[tuple[float, float, bool]]:
    """(P(same), turn cosine, right) of every forwarded request's candidate the judge labelled."""
    seen: list[tuple[float, float, bool]] = []
    observe = _Cache._observe

    def recording(self, found, answer, kind):
        judgement = observe(self, found, answer, kind)
        if judgement is not None and judgement.label.value != "undecided" and kind == "forwarded" \
                and found.scores.same is not None and found.scores.turn is not None:
            seen.append((found.scores.same, found.scores.turn, judgement.label.value == "same"))
        return judgement

    _Cache._observe = recording
    try:
        encoder = shared_encoder()
        system = st.SmartCacheStream(lambda clock: SmartCache(load_config(), encoder=encoder, clock=clock),
                                     scope="global")
        for request in st.load_stream(path):
            system.handle(request)
    finally:
        _Cache._observe = observe
    return seen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("stream")
    args = parser.parse_args(argv)
    seen = labels(args.stream)
    cols = [f"{lo:.2f}-{hi:.2f}" for lo, hi in zip(COSINE_EDGES, COSINE_EDGES[1:])]
    print(f"{len(seen)} labels; right / all, rows P(same), columns turn cosine\n")
    print("| P(same) | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for lo, hi in zip(SAME_EDGES, SAME_EDGES[1:]):
        cells = []
        for clo, chi in zip(COSINE_EDGES, COSINE_EDGES[1:]):
            cell = [right for same, cos, right in seen if lo <= same < hi and clo <= cos < chi]
            cells.append(f"{sum(cell)}/{len(cell)}")
        print(f"| {lo:.2f}-{min(hi, 1.0):.2f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
