"""Where the public evaluation data lives: ``../shared/data`` beside the checkout.

One helper, so scripts, tests and commands agree. ``$SMARTCACHE_SHARED_DATA``
overrides it; otherwise the folder beside the repository root (found from this
file in a checkout), then beside the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path


def shared_data() -> Path | None:
    """The data folder if it exists, else None (callers skip and say so)."""
    override = os.environ.get("SMARTCACHE_SHARED_DATA")
    candidates = [Path(override)] if override else []
    candidates += [Path(__file__).resolve().parents[2].parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    return next((p for p in candidates if p.is_dir()), None)
