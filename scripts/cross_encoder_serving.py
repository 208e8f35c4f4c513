"""What a configuration serves of the gateway rewording test, and what it costs in memory
(figures, not a test).

    .venv/bin/python scripts/cross_encoder_serving.py [--config FILE]

Runs the ten rewordings and the four changed questions of tests/test_gateway_rewordings.py
per language through the gateway (fake engine, system prompt, one session) and prints how many
are hits, then the process's resident memory after the cache and its models are loaded and
used. Run once with the defaults and once with a TOML that sets use_cross_encoder = true.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    import psutil
    from fastapi.testclient import TestClient

    from smartcache import SmartCache, load_config
    from smartcache.engine import FakeEngine
    from smartcache.gateway import create_app
    from test_gateway_rewordings import CASES, ask

    parser = argparse.ArgumentParser()
    parser.add_argument("--config", help="a TOML config merged over the defaults")
    args = parser.parse_args()
    config = load_config(args.config, lifecycle={"promotion_window_s": 0.0})
    for lang, (first, rewordings, changed) in sorted(CASES.items()):
        served = {}
        for name, texts in (("rewordings", rewordings), ("changed questions", changed)):
            with TestClient(create_app(SmartCache(config), FakeEngine(), close_engine=False)) as client:
                ask(client, first)
                served[name] = sum(ask(client, t) == "hit" for t in texts)
        print(f"{lang}: {served['rewordings']} of {len(rewordings)} rewordings served, "
              f"{served['changed questions']} of {len(changed)} changed questions")
    print(f"resident memory: {psutil.Process().memory_info().rss / 2**20:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
