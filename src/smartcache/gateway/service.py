"""The chat path of the gateway: look up, then serve a hit or forward to the engine and store.

    hit       the cached answer, as a completion or a replayed stream; the engine is not touched
    half-hit  forwarded with the history docked byte for byte onto the cached turn, so the
              engine's prefix cache reuses it; the answer is stored as a new entry
    miss      forwarded; the answer is stored once it is complete
    bypass    no lookup (no-cache, tools, n > 1, cache off, a turn that is not the user's)

An answer is written only after the engine finished it normally: never errors,
truncated or abandoned streams, content-filtered answers, or tool calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
import unicodedata
import uuid
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from typing import Any, AsyncIterator

import anyio

from smartcache.cache import SmartCache
from smartcache.decide import Decision, Zone
from smartcache.engine import EngineError, EngineRequest, Finished, GenerationParams, TextDelta, Usage
from smartcache.errors import EntryNotFound, InvalidRequest, SmartCacheError
from smartcache.gateway.controls import RequestControls
from smartcache.gateway.metrics import GatewayMetrics
from smartcache.gateway.schema import ChatCompletionRequest
from smartcache.gateway.shadow import ShadowVerifier

log = logging.getLogger("smartcache.gateway")

STATUS_OF_ZONE = {Zone.HIT: "hit", Zone.HALF_HIT: "half-hit", Zone.MISS: "miss"}


@dataclass
class GatewaySettings:
    cache_enabled: bool = True
    shadow_rate: float = 0.0              # share of ordinary hits verified in the background
    regenerate_window_s: float = 60.0     # an identical request within this counts as regenerate
    default_max_tokens: int = 256
    recent_decisions: int = 200
    timeline_bucket_s: float = 10.0
    timeline_buckets: int = 360
    replay_chunk_chars: int = 8           # a replayed hit streams in pieces of this many characters
    max_body_bytes: int = 8 * 2**20       # a larger request body is refused with 413
    max_messages: int = 1000              # ... more messages, or a longer one, with 400
    max_message_chars: int = 400_000


@dataclass(frozen=True)
class DecisionRecord:
    at: float
    tenant: str
    session: str | None
    status: str
    entry: str | None
    similarity: float | None
    reasons: list[str]
    prompt_tokens: int
    saved_tokens: int
    latency_ms: float
    question: str


@dataclass
class Outcome:
    status: str
    headers: dict[str, str]
    body: dict[str, Any] | None = None
    stream: AsyncIterator[bytes] | None = None


@dataclass
class _Answered:
    at: float
    entry_id: str | None
    was_hit: bool


@dataclass
class _Turn:
    """What one request carries through the path."""

    req: ChatCompletionRequest
    controls: RequestControls
    versions: dict[str, str]
    key: str
    started: float
    status: str = "miss"
    decision: Decision | None = None
    cacheable: bool = True
    reasons: list[str] = field(default_factory=list)
    docked: int = 0
    lookup_s: float | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)    # as looked up, sent and stored


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def dock_history(messages: list[dict[str, Any]], answer: str) -> tuple[list[dict[str, Any]], int]:
    """Make the assistant turn before the last user turn byte-identical to the cached answer.

    Clients often re-send an answer with whitespace trimmed or re-wrapped; the engine's
    prefix cache would then miss from that point on. Only a whitespace / width
    difference is repaired; any other edit is the user's and is left alone.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i in range(last_user - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, str) and content != answer and _squash(content) == _squash(answer):
            docked = list(messages)
            docked[i] = {**m, "content": answer}
            return docked, 1
        break
    return messages, 0


class ToolCalls:
    """Tool calls streamed in pieces (an id and name first, the arguments in fragments), put
    together by their index for a plain completion, as an OpenAI server returns them."""

    def __init__(self) -> None:
        self._calls: dict[int, dict[str, Any]] = {}

    def add(self, raw: dict[str, Any] | None) -> None:
        for choice in (raw or {}).get("choices") or []:
            for piece in ((choice or {}).get("delta") or {}).get("tool_calls") or []:
                if not isinstance(piece, dict):
                    continue
                index = piece.get("index") if isinstance(piece.get("index"), int) else len(self._calls)
                call = self._calls.setdefault(index, {"id": None, "type": "function",
                                                      "function": {"name": "", "arguments": ""}})
                call["id"] = piece.get("id") or call["id"]
                call["type"] = piece.get("type") or call["type"]
                function = piece.get("function") if isinstance(piece.get("function"), dict) else {}
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        call["function"][key] += function[key]

    def __bool__(self) -> bool:
        return bool(self._calls)

    def assembled(self) -> list[dict[str, Any]]:
        return [self._calls[i] for i in sorted(self._calls)]


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


class ChatService:
    def __init__(self, cache: SmartCache, engine, settings: GatewaySettings | None = None,
                 metrics: GatewayMetrics | None = None) -> None:
        self.cache = cache
        self.engine = engine
        self.settings = settings or GatewaySettings()
        self.metrics = metrics or GatewayMetrics(lambda: self.cache.stats().by_state, self.cache.store_health)
        self.shadow = ShadowVerifier(cache, engine, self.metrics)
        self.recent: deque[DecisionRecord] = deque(maxlen=self.settings.recent_decisions)
        self.timeline: dict[int, Counter[str]] = {}
        self.totals: Counter[str] = Counter()

    # -- versions -----------------------------------------------------------------------

    def versions(self, model: str, controls: RequestControls) -> dict[str, str]:
        store = self.cache.backend
        generation = store.generation(f"{controls.tenant}\x00{model}") + store.generation(f"{controls.tenant}\x00*")
        kb = f"{controls.kb_version}#{generation}" if generation else controls.kb_version
        return {"model": model, "tokenizer": self.engine.tokenizer_id, "kb": kb}

    def bump_version(self, tenant: str, model: str | None = None) -> int:
        """Change the version key of the tenant (of one model, when given): its earlier entries
        stop matching at once. A whole-tenant bump also marks them invalid; returns how many."""
        self.cache.backend.bump_generation(f"{tenant}\x00{model or '*'}")
        if model is not None:
            return 0     # entries keep only a digest of their key; they are unreachable and age out
        gone = 0
        for entry in self.cache.backend.find(tenant=tenant):
            if entry.state.value not in ("invalid", "frozen"):
                self.cache.invalidate(tenant=tenant, cache_id=entry.cache_id)
                gone += 1
        return gone

    # -- the chat path ------------------------------------------------------------------

    async def handle(self, req: ChatCompletionRequest, controls: RequestControls) -> Outcome:
        turn = _Turn(req, controls, {}, self._request_key(req, controls), time.perf_counter())
        # Every store call runs on a worker thread: on Redis each is a network round trip
        # that would stall every other request on the event loop.
        bypass, regenerate = await asyncio.to_thread(self._prepare, turn)
        if bypass:
            turn.status = "bypass"
            turn.reasons.append(bypass)
            turn.cacheable = bypass == "no-cache" and not controls.no_store
        elif not regenerate:
            began = time.perf_counter()
            decision = await asyncio.to_thread(self.cache.lookup, turn.messages, session=controls.session,
                                               tenant=controls.tenant, versions=turn.versions)
            turn.lookup_s = time.perf_counter() - began
            self.metrics.lookup_latency.observe(turn.lookup_s)
            self.metrics.lookups.labels(decision.zone.value).inc()
            self.totals["lookups"] += 1
            self.totals["lookup_hits"] += decision.zone is Zone.HIT
            self.metrics.hit_rate.set(self.totals["lookup_hits"] / self.totals["lookups"])
            turn.decision = decision
            turn.status = STATUS_OF_ZONE[decision.zone]
            turn.cacheable = decision.cacheable and not controls.no_store
            turn.reasons.extend(r.code for r in decision.reasons)
            if decision.has_reason("correction"):
                await asyncio.to_thread(self._on_correction, controls)
            if decision.zone is Zone.HIT and decision.entry is not None:
                return await self._serve_hit(turn)
        else:
            turn.cacheable = not controls.no_store
        return await self._forward(turn, turn.messages)

    def _prepare(self, turn: _Turn) -> tuple[str | None, bool]:
        """The store work before a lookup (a worker thread runs it): the version key, the
        docked history, and whether this repeats the session's last request. Returns the
        bypass reason (or None) and whether the request is a regenerate."""
        req, controls = turn.req, turn.controls
        try:
            turn.versions = self.versions(req.model, controls)
        except SmartCacheError as exc:
            # Without the version generation a stale answer could pass: no lookup, no write.
            log.warning("smartcache: store unavailable, passing the request through: %s", exc)
            turn.messages = req.messages
            return "store_unavailable", False
        turn.messages, turn.docked = self._dock(req.messages, controls)
        # Repeats count only within a known session: anonymous users asking the same FAQ
        # are different people, not one user rejecting an answer.
        regenerate = controls.regenerate or (controls.session is not None and self._is_repeat(turn.key))
        if regenerate:
            turn.reasons.append("regenerate")
            self._on_regenerate(turn.key)
        return self._bypass_reason(req, controls), regenerate

    def _dock(self, messages: list[dict[str, Any]], controls: RequestControls) -> tuple[list[dict[str, Any]], int]:
        """Restore the bytes of an answer this session was given, when the client re-sent it
        reformatted: the lookup then sees the same history, and the engine the same prefix."""
        if controls.session is None or len(messages) < 3:
            return messages, 0
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        previous = messages[last_user - 1] if last_user > 0 else {}
        content = previous.get("content")
        if previous.get("role") != "assistant" or not isinstance(content, str):
            return messages, 0
        squashed = _squash(content)
        try:
            entries = self.cache.backend.find(tenant=controls.tenant, session_id=controls.session)
        except SmartCacheError:
            return messages, 0      # the lookup that follows fails open too
        for entry in entries:
            if entry.answer.text != content and _squash(entry.answer.text) == squashed:
                return dock_history(messages, entry.answer.text)
        return messages, 0

    def _bypass_reason(self, req: ChatCompletionRequest, controls: RequestControls) -> str | None:
        if not self.settings.cache_enabled:
            return "cache_disabled"
        if req.uses_tools:
            return "tools"
        if req.messages[-1].get("role") != "user":
            return "last_turn_not_user"
        if controls.no_cache:
            return "no-cache"
        return None

    def _request_key(self, req: ChatCompletionRequest, controls: RequestControls) -> str:
        # ASCII escapes: a lone surrogate in a message cannot be encoded as UTF-8 (the lookup refuses it).
        payload = json.dumps([controls.tenant, controls.session, req.model, req.messages], sort_keys=True,
                             default=str)
        return hashlib.sha256(payload.encode()).hexdigest()

    # What a session was just answered lives in the store as markers that expire with the
    # regenerate window, so a repeat or a correction landing on another replica still counts.
    def _remember(self, name: str, record: _Answered) -> None:
        try:
            self.cache.backend.set_marker(name, json.dumps([record.at, record.entry_id, record.was_hit]),
                                          self.settings.regenerate_window_s)
        except SmartCacheError as exc:      # feedback is lost, the answer is not
            log.warning("smartcache: cannot record an answer for regenerate detection: %s", exc)

    def _recall(self, name: str, *, take: bool = False) -> _Answered | None:
        store = self.cache.backend
        try:
            raw = store.take_marker(name) if take else store.get_marker(name)
        except SmartCacheError as exc:
            log.warning("smartcache: cannot read regenerate markers: %s", exc)
            return None
        if raw is None:
            return None
        at, entry_id, was_hit = json.loads(raw)
        return _Answered(float(at), entry_id, bool(was_hit))

    @staticmethod
    def _last_hit_marker(controls: RequestControls) -> str:
        who = hashlib.sha256(f"{controls.tenant}\x00{controls.session}".encode()).hexdigest()
        return f"last-hit:{who}"

    def _is_repeat(self, key: str) -> bool:
        return self._recall(f"answered:{key}") is not None

    def _on_regenerate(self, key: str) -> None:
        seen = self._recall(f"answered:{key}", take=True)
        if seen is None or seen.entry_id is None:
            return
        if seen.was_hit:
            self._polluted()
        self._feedback(seen.entry_id, "regenerate")

    def _on_correction(self, controls: RequestControls) -> None:
        if controls.session is None:
            return
        hit = self._recall(self._last_hit_marker(controls), take=True)
        if hit is not None and hit.entry_id:
            self._polluted()
            self._feedback(hit.entry_id, "negative")

    def _polluted(self) -> None:
        self.metrics.pollution.inc()
        self.totals["pollution"] += 1

    def _feedback(self, entry_id: str, kind: str) -> None:
        try:
            self.cache.feedback(entry_id, kind)
        except EntryNotFound:
            pass      # evicted or dropped meanwhile: nothing left to mark
        except SmartCacheError as exc:      # the store is down: the feedback is lost, not the answer
            log.warning("smartcache: cannot apply %s feedback to %s: %s", kind, entry_id, exc)

    def _params(self, req: ChatCompletionRequest) -> GenerationParams:
        return GenerationParams(
            max_tokens=req.max_completion_tokens or req.max_tokens or self.settings.default_max_tokens,
            temperature=req.temperature if req.temperature is not None else 0.0,
            top_p=req.top_p if req.top_p is not None else 1.0, seed=req.seed, stop=req.stop_list())

    def _engine_request(self, req: ChatCompletionRequest, messages: list[dict[str, Any]]) -> EngineRequest:
        return EngineRequest(req.model, messages, self._params(req), req.passthrough())

    def _headers(self, turn: _Turn) -> dict[str, str]:
        d = turn.decision
        headers = {"x-smartcache-status": turn.status,
                   "x-smartcache-reason": ",".join(dict.fromkeys(turn.reasons)) or "none"}
        if d is not None and d.entry is not None:
            headers["x-smartcache-entry"] = d.entry.cache_id
        if d is not None and d.scores.turn is not None:
            headers["x-smartcache-similarity"] = f"{d.scores.turn:.4f}"
        if turn.docked:
            headers["x-smartcache-docked"] = str(turn.docked)
        if turn.lookup_s is not None:
            headers["server-timing"] = f"lookup;dur={turn.lookup_s * 1000:.2f}"
        return headers

    # -- hits ---------------------------------------------------------------------------

    async def _serve_hit(self, turn: _Turn) -> Outcome:
        d = turn.decision
        assert d is not None and d.entry is not None
        entry, req = d.entry, turn.req
        answer = entry.answer.text
        now = time.time()
        prompt_tokens, completion_tokens = await asyncio.to_thread(self._count_and_remember, turn, answer, now)
        usage = Usage(prompt_tokens, completion_tokens, cached_tokens=prompt_tokens)
        if d.verify or (self.settings.shadow_rate > 0 and random.random() < self.settings.shadow_rate):
            self.shadow.schedule(entry, self._engine_request(req, turn.messages))
        self.metrics.saved_prompt_tokens.labels("hit").inc(prompt_tokens)
        headers = self._headers(turn)
        cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(now)
        if not req.stream:
            self._finish_turn(turn, usage, saved=prompt_tokens, first_token_at=time.perf_counter())
            return Outcome(turn.status, headers, body=self._completion(cid, created, req.model, answer, "stop",
                                                                       usage, turn))
        return Outcome(turn.status, headers, stream=self._replay(turn, cid, created, answer, usage))

    def _count_and_remember(self, turn: _Turn, answer: str, now: float) -> tuple[int, int]:
        """A hit's token counts, and the markers that make a repeat of it a regenerate."""
        entry_id = turn.decision.entry.cache_id if turn.decision and turn.decision.entry else None
        self._remember(f"answered:{turn.key}", _Answered(now, entry_id, True))
        if turn.controls.session:
            self._remember(self._last_hit_marker(turn.controls), _Answered(now, entry_id, True))
        counter = getattr(self.engine, "count_text_tokens", None)
        completion = counter(answer) if counter else self.engine.count_tokens([{"role": "assistant",
                                                                                "content": answer}])
        return self.engine.count_tokens(turn.messages), completion

    async def _replay(self, turn: _Turn, cid: str, created: int, answer: str, usage: Usage) -> AsyncIterator[bytes]:
        model, step = turn.req.model, self.settings.replay_chunk_chars
        yield _sse(_chunk(cid, created, model, {"role": "assistant", "content": ""}))
        first = None
        for i in range(0, len(answer), step):
            yield _sse(_chunk(cid, created, model, {"content": answer[i:i + step]}))
            first = first or time.perf_counter()
        yield _sse(_chunk(cid, created, model, {}, "stop"))
        if turn.req.stream_options and turn.req.stream_options.include_usage:
            yield _sse({"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                        "choices": [], "usage": usage.to_json()})
        self._finish_turn(turn, usage, saved=usage.prompt_tokens, first_token_at=first)
        yield b"data: [DONE]\n\n"

    # -- forwarding ---------------------------------------------------------------------

    async def _forward(self, turn: _Turn, messages: list[dict[str, Any]]) -> Outcome:
        request = self._engine_request(turn.req, messages)
        events = self.engine.stream(request).__aiter__()
        try:
            first = await events.__anext__()      # errors before any output get a real HTTP status
        except EngineError as exc:
            self.metrics.engine_errors.labels(exc.code).inc()
            await events.aclose()
            raise
        headers = self._headers(turn)
        if not turn.req.stream:
            text, calls, final = [], ToolCalls(), None
            event = first
            while True:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                    calls.add(event.raw)
                else:
                    final = event
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    break
            if final is None:       # the engine stopped without finishing: nothing to answer with
                self.metrics.engine_errors.labels("engine_ended_early").inc()
                raise EngineError("the engine ended the answer before finishing it", status=502,
                                  code="engine_ended_early")
            answer = "".join(text)
            await self._after_answer(turn, answer, final)
            body = self._completion(f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), turn.req.model, answer,
                                    final.finish_reason, final.usage, turn)
            if calls:
                message = body["choices"][0]["message"]
                message["tool_calls"] = calls.assembled()
                message["content"] = message["content"] or None
            return Outcome(turn.status, headers, body=body)
        return Outcome(turn.status, headers, stream=self._relay(turn, first, events))

    async def _relay(self, turn: _Turn, first, events) -> AsyncIterator[bytes]:
        req = turn.req
        cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        parts: list[str] = []
        first_token_at = None
        sent_role = saw_raw = False
        event = first
        try:
            while True:
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                    if event.text and first_token_at is None:
                        first_token_at = time.perf_counter()
                    if event.raw is not None:
                        saw_raw = True
                        # An upstream's own chunks go out unchanged, except the usage chunk
                        # we asked for on the client's behalf.
                        if event.raw.get("choices") or include_usage:
                            yield _sse(event.raw)
                    else:
                        if not sent_role:
                            yield _sse(_chunk(cid, created, req.model, {"role": "assistant", "content": ""}))
                            sent_role = True
                        yield _sse(_chunk(cid, created, req.model, {"content": event.text}))
                else:
                    final: Finished = event
                    if not saw_raw:
                        if not sent_role:
                            yield _sse(_chunk(cid, created, req.model, {"role": "assistant", "content": ""}))
                        yield _sse(_chunk(cid, created, req.model, {}, final.finish_reason))
                        if include_usage:
                            yield _sse({"id": cid, "object": "chat.completion.chunk", "created": created,
                                        "model": req.model, "choices": [], "usage": final.usage.to_json()})
                    await self._after_answer(turn, "".join(parts), final, first_token_at=first_token_at)
                    yield b"data: [DONE]\n\n"
                    return
                event = await events.__anext__()
        except StopAsyncIteration:
            return      # the engine ended without finishing the answer: nothing is stored
        except EngineError as exc:
            # Headers are gone already: report in-band, store nothing.
            self.metrics.engine_errors.labels(exc.code).inc()
            yield _sse({"error": {"message": str(exc), "type": "engine_error", "code": exc.code, "param": None}})
            yield b"data: [DONE]\n\n"
        finally:
            # A client that hangs up cancels this generator; the engine's stream is closed
            # anyway (it frees its KV into the tree, or the upstream connection).
            with anyio.CancelScope(shield=True):
                await events.aclose()

    async def _after_answer(self, turn: _Turn, answer: str, final: Finished, *,
                            first_token_at: float | None = None) -> None:
        outcome = await asyncio.to_thread(self._keep, turn, answer, final)
        self.metrics.stores.labels(outcome).inc()
        if final.usage.cached_tokens:
            self.metrics.saved_prompt_tokens.labels("kv_prefix").inc(final.usage.cached_tokens)
        self._finish_turn(turn, final.usage, saved=final.usage.cached_tokens, first_token_at=first_token_at)

    def _keep(self, turn: _Turn, answer: str, final: Finished) -> str:
        """Offer a finished answer to the cache (a worker thread runs it); returns the outcome
        counted in smartcache_stores_total. Every answer gets exactly one outcome."""
        controls = turn.controls
        entry_id, outcome = None, "stored"
        if not turn.cacheable:
            outcome = "not_cacheable"
        elif final.finish_reason != "stop" or final.tool_calls:
            outcome = f"finish_{final.finish_reason}"
        elif controls.session is None:
            outcome = "no_session"
        else:
            try:
                result = self.cache.store(turn.messages, answer, session=controls.session, tenant=controls.tenant,
                                          versions=turn.versions, ttl=controls.ttl,
                                          prompt_tokens=final.usage.prompt_tokens)
            except InvalidRequest:
                result = None
            if result is not None and result.stored:
                entry_id = result.cache_id
            else:
                outcome = "store_error" if result and result.reason.startswith("store_error") else "refused"
        self._remember(f"answered:{turn.key}", _Answered(time.time(), entry_id, False))
        return outcome

    # -- bookkeeping --------------------------------------------------------------------

    def _completion(self, cid: str, created: int, model: str, answer: str, finish: str, usage: Usage,
                    turn: _Turn) -> dict[str, Any]:
        return {"id": cid, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                             "finish_reason": finish}],
                "usage": usage.to_json(),
                "smartcache": {"status": turn.status, "reasons": turn.reasons,
                               "entry": turn.decision.entry.cache_id if turn.decision and turn.decision.entry
                               else None}}

    def _finish_turn(self, turn: _Turn, usage: Usage, *, saved: int, first_token_at: float | None) -> None:
        now = time.perf_counter()
        total = now - turn.started
        self.metrics.requests.labels(turn.status).inc()
        self.metrics.latency.labels(turn.status).observe(total)
        if first_token_at is not None:
            self.metrics.ttft.labels(turn.status).observe(first_token_at - turn.started)
        self.totals[turn.status] += 1
        self.totals["saved_tokens"] += saved
        self.totals["prompt_tokens"] += usage.prompt_tokens
        bucket = int(time.time() // self.settings.timeline_bucket_s)
        self.timeline.setdefault(bucket, Counter())[turn.status] += 1
        self.timeline[bucket]["saved_tokens"] += saved
        for old in [b for b in self.timeline if b <= bucket - self.settings.timeline_buckets]:
            del self.timeline[old]
        d = turn.decision
        question = next((str(m.get("content")) for m in reversed(turn.req.messages) if m.get("role") == "user"), "")
        self.recent.append(DecisionRecord(
            at=time.time(), tenant=turn.controls.tenant, session=turn.controls.session, status=turn.status,
            entry=d.entry.cache_id if d and d.entry else None,
            similarity=round(d.scores.turn, 4) if d and d.scores.turn is not None else None,
            reasons=[str(r) for r in d.reasons] if d else list(turn.reasons), prompt_tokens=usage.prompt_tokens,
            saved_tokens=saved, latency_ms=round(total * 1000, 2), question=question[:120]))

    def recent_json(self, limit: int = 50) -> list[dict[str, Any]]:
        return [asdict(r) for r in list(self.recent)[-limit:]][::-1]
