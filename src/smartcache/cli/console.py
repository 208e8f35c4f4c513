"""How the commands talk to the terminal: results on stdout; errors and progress on stderr."""

from __future__ import annotations

import sys
from typing import Callable


def fail(message: object) -> int:
    """Print an error as argparse does and return its exit status, 2, for the command to return."""
    print(f"smartcache: error: {message}", file=sys.stderr)
    return 2


def progress_bar(label: str, total: int) -> Callable[[], None] | None:
    """A tqdm bar on stderr when tqdm is installed (it comes with transformers), else nothing."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    bar = tqdm(total=total, desc=label, unit="case", file=sys.stderr, leave=False, mininterval=0.5)
    def step() -> None:
        bar.update(1)
        if bar.n >= total:
            bar.close()
    return step
