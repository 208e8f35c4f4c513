"""Gray cache: a served answer is checked against a fresh one from the engine, in the background.

Suspect entries are always checked, and the share of hits the learning cache asks for
(``Decision.verify``); other hits are sampled at ``--shadow RATE``. The cache's answer
judge compares the fresh answer with the cached one first (``SmartCache.check``: one
observation for the learned point, and the measured live error); where it cannot tell,
or learning is off, the answers are compared by the cache's own encoder and by key facts
(money, counts, days, dates, names): close answers keep the entry (positive feedback),
loosely related ones demote it (negative feedback, which makes it suspect and, repeated,
unrecallable), unrelated ones drop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import numpy as np

from smartcache.cache import SmartCache
from smartcache.decide import key_facts
from smartcache.engine import EngineRequest, TextDelta
from smartcache.errors import SmartCacheError
from smartcache.learn import Label
from smartcache.lookup import Lookup
from smartcache.store import Entry

log = logging.getLogger("smartcache.shadow")


@dataclass(frozen=True)
class ShadowVerdict:
    outcome: str          # keep | demote | drop | error
    similarity: float
    missing_facts: tuple[str, ...] = ()


class ShadowVerifier:
    def __init__(self, cache: SmartCache, engine, metrics, *, keep_at: float = 0.8, drop_below: float = 0.5,
                 max_pending: int = 4) -> None:
        self.cache, self.engine, self.metrics = cache, engine, metrics
        self.keep_at, self.drop_below = keep_at, drop_below
        self.max_pending = max_pending
        self._tasks: set[asyncio.Task] = set()
        self.verdicts: list[tuple[str, ShadowVerdict]] = []     # (cache_id, verdict), most recent last

    def compare(self, cached: str, fresh: str) -> ShadowVerdict:
        vectors = self.cache.encoder.encode([cached, fresh])
        similarity = float(np.dot(vectors[0], vectors[1]))
        missing = tuple(f for f in key_facts(cached) if f not in set(key_facts(fresh)))
        if similarity < self.drop_below:
            return ShadowVerdict("drop", similarity, missing)
        if similarity < self.keep_at or missing:
            return ShadowVerdict("demote", similarity, missing)
        return ShadowVerdict("keep", similarity, missing)

    def schedule(self, entry: Entry, request: EngineRequest, found: Lookup | None = None) -> bool:
        """Start a verification unless too many are running (then the sample is skipped).
        ``found``: the lookup that served it, so that the check teaches the learned point."""
        if len(self._tasks) >= self.max_pending:
            self.metrics.shadow.labels("skipped").inc()
            return False
        task = asyncio.get_running_loop().create_task(self._verify(entry, request, found))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def precision(self) -> tuple[float | None, int]:
        """Of the recent verdicts that judged an entry, the share that kept it (None before
        any), and how many judged."""
        outcomes = [v.outcome for _, v in self.verdicts]
        judged = sum(1 for o in outcomes if o in ("keep", "demote", "drop"))
        kept = sum(1 for o in outcomes if o == "keep")
        return (kept / judged if judged else None), judged

    async def drain(self) -> None:
        """Wait for every running verification (tests, shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _verify(self, entry: Entry, request: EngineRequest, found: Lookup | None = None) -> None:
        try:
            async with contextlib.aclosing(self.engine.stream(request)) as events:
                parts = [e.text async for e in events if isinstance(e, TextDelta)]
            fresh = "".join(parts)
            judged = None if found is None else await asyncio.to_thread(self.cache.check, found, fresh)
            verdict = await asyncio.to_thread(self.compare, entry.answer.text, fresh)
            if judged is not None and judged.label is Label.SAME:
                verdict = ShadowVerdict("keep", verdict.similarity)     # the judge is the stricter reader
            elif judged is not None and judged.label is Label.DIFFERENT and verdict.outcome != "drop":
                # check() demoted it already; an unrelated answer is still dropped below.
                verdict = ShadowVerdict("demote", verdict.similarity, verdict.missing_facts)
                self._record(entry.cache_id, verdict)
                return
            if verdict.outcome == "keep":
                await asyncio.to_thread(self.cache.feedback, entry.cache_id, "positive")
            elif verdict.outcome == "demote":
                await asyncio.to_thread(self.cache.feedback, entry.cache_id, "negative")
            else:
                await asyncio.to_thread(self.cache.invalidate, tenant=entry.tenant, cache_id=entry.cache_id)
        except (SmartCacheError, OSError) as exc:
            log.warning("shadow verification of %s failed: %s", entry.cache_id, exc)
            verdict = ShadowVerdict("error", 0.0)
        self._record(entry.cache_id, verdict)

    def _record(self, cache_id: str, verdict: ShadowVerdict) -> None:
        self.metrics.shadow.labels(verdict.outcome).inc()
        self.verdicts.append((cache_id, verdict))
        del self.verdicts[:-100]
