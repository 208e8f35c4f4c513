"""The command line: ``smartcache COMMAND``, one module per subcommand.

Each subcommand's module holds its flags next to the code they steer:
``add_parser(subparsers)`` declares the flags and ``run(args)`` carries the command
out, returning the exit status (2 for a usage or input error, as argparse does).

    explain.py    smartcache explain    one case's decision and every reason behind it
    evaluate.py   smartcache eval       SmartCache and the baselines scored on cases
    calibrate.py  smartcache calibrate  hit thresholds from labelled pairs or cases
    replay.py     smartcache replay     whole sessions turn by turn: hit rate, saved tokens
    warmup.py     smartcache warmup     recurring scenarios of logged sessions into the store
    train.py      smartcache train      the verifier, trained and calibrated
    serve.py      smartcache serve      the gateway, with its engine, store and auth options

Beside them: ``console.py`` (the error line and the progress bar every command
prints) and ``store_options.py`` (the [store] table that serve's and warmup's
--store flags ask for). ``python -m smartcache.cli`` runs ``main`` too (``__main__.py``).
"""

from __future__ import annotations

import argparse
from typing import Sequence

from smartcache.cli import calibrate, evaluate, explain, replay, serve, train, warmup
from smartcache.cli.explain import explain_case

__all__ = ["build_parser", "explain_case", "main"]

# In the order ``smartcache --help`` lists them.
COMMANDS = (explain, evaluate, calibrate, replay, warmup, train, serve)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="smartcache", description="Context-aware semantic cache for LLM chat.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.run(args)
