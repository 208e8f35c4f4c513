"""One chat request on its way through the gateway, and what it says about itself.

A ``Turn`` is made by ``ChatService.handle`` and filled in as the request goes: the
versions and docked messages, the decision, the status and its reasons. It writes the
``x-smartcache-*`` headers, the ``smartcache`` member of a completion and the record the
dashboard lists; ``Outcome`` is what the app sends back (a body or a stream).
"""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator

from smartcache.engine import EngineRequest, GenerationParams
from smartcache.gateway.controls import RequestControls
from smartcache.gateway.schema import ChatCompletionRequest
from smartcache.gateway.telemetry import DecisionRecord
from smartcache.lookup import CacheRequest, Lookup


class Bypass(enum.StrEnum):
    """Why a request skips the lookup; the value is what ``x-smartcache-reason`` shows."""

    CACHE_DISABLED = "cache_disabled"        # the gateway runs with the cache off
    TOOLS = "tools"                          # the answer depends on tool results
    LAST_TURN_NOT_USER = "last_turn_not_user"
    NO_CACHE = "no-cache"                    # the client asked; its answer may still be stored
    STORE_UNAVAILABLE = "store_unavailable"  # without the version generation a stale answer could pass
    LOGPROBS = "logprobs"                    # a cached answer has no token log-probabilities
    AUDIO = "audio"                          # a cached answer is text only


@dataclass
class Outcome:
    status: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None
    stream: AsyncIterator[bytes] | None = None


@dataclass
class Turn:
    """What one request carries through the path."""

    req: ChatCompletionRequest
    controls: RequestControls
    versions: dict[str, str]
    key: str
    started: float
    status: str = "miss"
    decision: Lookup | None = None
    cacheable: bool = True
    reasons: list[str] = field(default_factory=list)
    docked: int = 0
    lookup_s: float | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)    # as looked up, sent and stored
    request: CacheRequest | None = None     # read by the cache once; looked up once or twice

    @property
    def entry_id(self) -> str | None:
        d = self.decision
        return d.entry.cache_id if d is not None and d.entry is not None else None

    @property
    def include_usage(self) -> bool:
        """Whether the client asked for a usage chunk at the end of its stream."""
        return bool(self.req.stream_options and self.req.stream_options.include_usage)

    def engine_request(self, *, default_max_tokens: int) -> EngineRequest:
        """What the engine is asked: the messages as looked up (docked), the client's sampling."""
        req = self.req
        params = GenerationParams(
            max_tokens=req.max_completion_tokens or req.max_tokens or default_max_tokens,
            temperature=req.temperature if req.temperature is not None else 0.0,
            top_p=req.top_p if req.top_p is not None else 1.0, seed=req.seed, stop=req.stop_list())
        return EngineRequest(req.model, self.messages, params, req.passthrough())

    def headers(self) -> dict[str, str]:
        d = self.decision
        headers = {"x-smartcache-status": self.status,
                   "x-smartcache-reason": ",".join(dict.fromkeys(self.reasons)) or "none"}
        if self.entry_id is not None:
            headers["x-smartcache-entry"] = self.entry_id
        if d is not None and d.scores.turn is not None:
            headers["x-smartcache-similarity"] = f"{d.scores.turn:.4f}"
        if self.docked:
            headers["x-smartcache-docked"] = str(self.docked)
        if self.lookup_s is not None:
            headers["server-timing"] = f"lookup;dur={self.lookup_s * 1000:.2f}"
        return headers

    def verdict(self) -> dict[str, Any]:
        """The ``smartcache`` member of a plain completion."""
        return {"status": self.status, "reasons": self.reasons, "entry": self.entry_id}

    def record(self, *, prompt_tokens: int, saved: int, total_s: float) -> DecisionRecord:
        """The dashboard's line for this request, once it is answered."""
        d = self.decision
        question = next((str(m.get("content")) for m in reversed(self.req.messages) if m.get("role") == "user"), "")
        return DecisionRecord(
            at=time.time(), tenant=self.controls.tenant, session=self.controls.session, status=self.status,
            entry=self.entry_id, similarity=round(d.scores.turn, 4) if d and d.scores.turn is not None else None,
            reasons=[str(r) for r in d.reasons] if d else list(self.reasons), prompt_tokens=prompt_tokens,
            saved_tokens=saved, latency_ms=round(total_s * 1000, 2), question=question[:120])
