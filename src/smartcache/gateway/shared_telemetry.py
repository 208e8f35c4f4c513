"""The dashboard's figures of a gateway of several workers (``serve --workers N``).

Each worker counts its own traffic (``Telemetry``); every tick it writes an ``export`` of
it to ``$SMARTCACHE_TELEMETRY_DIR/<pid>.json`` (written whole, then renamed into place), and
the admin API answers from a view that adds every worker's file to the answering worker's
live counts. So the dashboard and ``/admin/stats`` show the whole gateway, whichever worker
a poll reaches, at most a tick behind for the others. A worker that died keeps its file:
its traffic happened. Without the variable (one process) the worker's own ``Telemetry``
is the view.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from smartcache.gateway.telemetry import Telemetry

ENV = "SMARTCACHE_TELEMETRY_DIR"

log = logging.getLogger("smartcache.gateway")


class SharedTelemetry:
    def __init__(self, own: Telemetry, folder: str | Path) -> None:
        self.own, self.folder = own, Path(folder)
        self.name = f"{os.getpid()}.json"

    @classmethod
    def from_env(cls, own: Telemetry) -> "SharedTelemetry | None":
        folder = os.environ.get(ENV)
        return cls(own, folder) if folder else None

    def publish(self) -> None:
        """Write this worker's counts where the others' admin API reads them."""
        tmp = self.folder / f".{self.name}.tmp"
        tmp.write_text(json.dumps(self.own.export(), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.folder / self.name)

    def view(self) -> Telemetry:
        """This worker's live counts plus every other worker's last published ones."""
        total = Telemetry(self.own.metrics, recent=self.own._recent.maxlen or 200, bucket_s=self.own.bucket_s,
                          buckets=self.own.buckets, clock=self.own.clock)
        total.absorb(self.own.export())
        for path in self.folder.glob("*.json"):
            if path.name == self.name:
                continue
            try:
                total.absorb(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, KeyError, TypeError) as exc:    # one worker's file, not the page
                log.warning("smartcache: cannot read the figures of worker %s: %s", path.stem, exc)
        return total
