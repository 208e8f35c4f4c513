"""The chat path of the gateway: look up, then serve a hit or forward to the engine and store.

    hit       the cached answer, as a completion or a replayed stream; the engine is not touched
    half-hit  forwarded with the history docked byte for byte onto the cached turn, so the
              engine's prefix cache reuses it; the answer is stored as a new entry
    miss      forwarded; the answer is stored once it is complete
    bypass    no lookup (no-cache, tools, cache off, a turn that is not the user's, the store down)

An answer is written only after the engine finished it normally: never errors,
truncated or abandoned streams, content-filtered answers, or tool calls.

The parts: ``openai_format`` writes the wire format, ``feedback`` turns repeats and
corrections into feedback, ``docking`` repairs re-sent answers, ``telemetry`` counts
for the dashboard; the store is reached only through the ``SmartCache`` facade.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import AsyncIterator

import anyio

from smartcache.cache import SmartCache
from smartcache.decide import ReasonCode, Zone
from smartcache.engine import EngineError, EngineRequest, Finished, TextDelta, Usage
from smartcache.errors import InvalidRequest, SmartCacheError
from smartcache.gateway import openai_format as wire
from smartcache.gateway.controls import RequestControls
from smartcache.gateway.docking import dock_history, dock_on_session
from smartcache.gateway.feedback import Answered, Feedback, request_key
from smartcache.gateway.metrics import GatewayMetrics
from smartcache.gateway.openai_format import StreamWriter, ToolCalls
from smartcache.gateway.schema import ChatCompletionRequest
from smartcache.gateway.shadow import ShadowVerifier
from smartcache.gateway.shared_telemetry import SharedTelemetry
from smartcache.gateway.settings import GatewaySettings
from smartcache.gateway.telemetry import DecisionRecord, Telemetry
from smartcache.gateway.turn import Bypass, Outcome, Turn
from smartcache.store import Entry


@dataclass(frozen=True)
class _Served:
    """A hit as served: the answer (cut to the request's limit), its finish, when, its usage."""

    answer: str
    finish: str
    at: float
    usage: Usage

# Re-exported: they lived here before the split.
__all__ = ["ChatService", "DecisionRecord", "GatewaySettings", "Outcome", "ToolCalls", "dock_history"]

log = logging.getLogger("smartcache.gateway")

STATUS_OF_ZONE = {Zone.HIT: "hit", Zone.HALF_HIT: "half-hit", Zone.MISS: "miss"}
_UNDECIDED = object()       # the exact path alone found nothing: the whole lookup decides


def _ended_early() -> EngineError:
    return EngineError("the engine ended the answer before finishing it", status=502, code="engine_ended_early")


class ChatService:
    """One gateway's chat path: ``handle`` a request, get an ``Outcome`` (a body or a stream)."""

    def __init__(self, cache: SmartCache, engine, settings: GatewaySettings | None = None,
                 metrics: GatewayMetrics | None = None) -> None:
        self.cache = cache
        self.engine = engine
        self.settings = s = settings or GatewaySettings()
        self.metrics = metrics or GatewayMetrics(lambda: self.cache.stats().by_state, self.cache.store_health,
                                                 self._learned)
        self.telemetry = Telemetry(self.metrics, recent=s.recent_decisions, bucket_s=s.timeline_bucket_s,
                                   buckets=s.timeline_buckets)
        # serve --workers N: every worker's figures, for the admin API (None in one process).
        self.shared_telemetry = SharedTelemetry.from_env(self.telemetry)
        self.feedback = Feedback(cache, self.telemetry, window_s=s.regenerate_window_s)
        self.shadow = ShadowVerifier(cache, engine, self.metrics)
        # With a store in this process's memory, every lookup runs on one thread of its own.
        # A lookup is Python under one GIL, so threads running lookups side by side only take
        # turns, and sixteen of them spent the GIL on handing it over: one thread served 15-20 %
        # more paraphrase hits a second at 16 and 64 clients (docs/results.md, issue 29). A
        # store that waits (SQLite's locks, Redis's round trips) keeps the shared pool, where
        # one request's wait holds up no other's.
        self._one_lookup_thread = cache.backend.in_memory
        self._lookups: ThreadPoolExecutor | None = None     # made on first use, again after close()

    def close(self) -> None:
        """Let the lookup thread go (at the gateway's shutdown; lookups still queued finish) and
        the markers' writer too, once it has written what waits. An app started again makes
        others."""
        if self._lookups is not None:
            self._lookups.shutdown(wait=False)
            self._lookups = None
        self.feedback.close()           # the served hits' markers still waiting are written

    def telemetry_view(self) -> Telemetry:
        """What the admin API shows: this process's figures, or every worker's added up."""
        return self.telemetry if self.shared_telemetry is None else self.shared_telemetry.view()

    def versions(self, model: str, controls: RequestControls, output: str = "") -> dict[str, str]:
        """The version mapping of a request (a store call: the bump generations); ``output``, the
        digest of what shapes its answer (``ChatCompletionRequest.output_shape``)."""
        return self.cache.versions(controls.tenant, model, controls.kb_version, tokenizer=self.engine.tokenizer_id,
                                   output=output)

    # -- the chat path ------------------------------------------------------------------

    async def handle(self, req: ChatCompletionRequest, controls: RequestControls) -> Outcome:
        key = request_key(controls.tenant, controls.session, req.model, req.messages,
                          [req.output_shape(), sorted(req.stop_list()), req.max_completion_tokens or req.max_tokens])
        turn = Turn(req, controls, {}, key, time.perf_counter())
        # One worker thread does the request's store work up to its answer: on Redis each call
        # is a network round trip, on SQLite a write may wait on another process's lock, and
        # either would stall every other request on the event loop. A store in this process's
        # memory has nothing to wait for: there the hop to a thread and back, with the GIL
        # passing between them, cost more than a word-for-word hit (docs/results.md, issue 29).
        # So the exact path alone runs there (a dict read; no model, no tick), and only when
        # nobody holds the store (a pool's graph is built under its lock, for seconds); the rest,
        # the encoder and the rules, still runs on a thread.
        served: _Served | None | object = _UNDECIDED
        if self.cache.backend.in_memory and self.cache.backend.free_now():
            served = self._look_up(turn, exact_only=True)
        if served is _UNDECIDED and self._one_lookup_thread:
            if self._lookups is None:
                self._lookups = ThreadPoolExecutor(1, thread_name_prefix="smartcache-lookup")
            served = await asyncio.get_running_loop().run_in_executor(self._lookups, self._look_up, turn)
        elif served is _UNDECIDED:
            served = await asyncio.to_thread(self._look_up, turn)
        assert served is not _UNDECIDED
        if served is not None:
            return self._serve_hit(turn, served)
        return await self._forward(turn)

    def _look_up(self, turn: Turn, *, exact_only: bool = False) -> _Served | None | object:
        """Everything before the answer: the versions, docking, the regenerate check, the lookup
        and, for a hit, its token counts and markers (None: forward). ``exact_only``: the exact
        path alone, ``_UNDECIDED`` when it found nothing (then call again without it: what was
        read before the lookup is kept in ``turn`` and not done twice)."""
        controls = turn.controls
        if turn.request is None:
            bypass, regenerate = self._prepare(turn)
            if bypass:
                turn.status = "bypass"
                turn.reasons.append(bypass)
                turn.cacheable = bypass is Bypass.NO_CACHE and not controls.no_store
                return None
            if regenerate:
                turn.cacheable = not controls.no_store
                return None
            turn.request = self.cache.prepare(turn.messages, session=controls.session, tenant=controls.tenant,
                                              versions=turn.versions)
        began = time.perf_counter()
        if exact_only:
            # An answer cut shorter than this request may run: the whole lookup decides (a tick may
            # have promoted a longer one), and nothing was counted twice.
            found = self.cache.lookup_exact(turn.request, accept=lambda entry: self._fitted(turn, entry) is not None)
            if found is None:
                return _UNDECIDED
            decision = found
        else:
            decision = self.cache.lookup(turn.request)
        turn.lookup_s = time.perf_counter() - began
        self.telemetry.lookup_done(decision.zone, turn.lookup_s)
        turn.decision = decision
        turn.status = STATUS_OF_ZONE[decision.zone]
        turn.cacheable = decision.cacheable and not controls.no_store
        turn.reasons.extend(r.code for r in decision.reasons)
        if decision.has_reason(ReasonCode.CORRECTION):     # the hit just served was wrong
            self.feedback.on_correction(controls)
        if decision.zone is not Zone.HIT or decision.entry is None:
            return None
        stops = self._engine_request(turn).params.stop
        fitted = self._fitted(turn, decision.entry)
        if fitted is None:
            # The cached answer was cut shorter than this request may run: the engine answers.
            turn.status = "miss"
            turn.reasons.append("stop_differs" if not set(decision.entry.stop) <= set(stops) else "cut_short")
            return None
        answer, finish = fitted
        now = time.time()
        prompt_tokens, completion_tokens = self._count_and_remember(turn, answer, now)
        return _Served(answer, finish, now, Usage(prompt_tokens, completion_tokens, cached_tokens=prompt_tokens))

    def _prepare(self, turn: Turn) -> tuple[Bypass | None, bool]:
        """The store work before a lookup (a worker thread runs it): the version key, the
        docked history, and whether this repeats the session's last request. Returns the
        bypass reason (or None) and whether the request is a regenerate."""
        req, controls = turn.req, turn.controls
        try:
            turn.versions = self.versions(req.model, controls, req.output_shape())
        except SmartCacheError as exc:
            # Without the version generation a stale answer could pass: no lookup, no write.
            log.warning("smartcache: store unavailable, passing the request through: %s", exc)
            turn.messages = req.messages
            return Bypass.STORE_UNAVAILABLE, False
        turn.messages, turn.docked = dock_on_session(self.cache, req.messages, controls.tenant, controls.session)
        # Repeats count only within a known session: anonymous users asking the same FAQ
        # are different people, not one user rejecting an answer.
        regenerate = controls.regenerate or (controls.session is not None and self.feedback.is_repeat(turn.key))
        if regenerate:
            turn.reasons.append("regenerate")
            self.feedback.on_regenerate(turn.key)
        return self._bypass_reason(req, controls), regenerate

    def _learned(self) -> tuple[int, int, int]:
        s = self.cache.stats()
        return s.observations, s.checks, s.checks_wrong

    def _bypass_reason(self, req: ChatCompletionRequest, controls: RequestControls) -> Bypass | None:
        if not self.settings.cache_enabled:
            return Bypass.CACHE_DISABLED
        if req.uses_tools:
            return Bypass.TOOLS
        if req.wants_logprobs:
            return Bypass.LOGPROBS
        if req.wants_audio:
            return Bypass.AUDIO
        if req.messages[-1].get("role") != "user":
            return Bypass.LAST_TURN_NOT_USER
        if controls.no_cache:
            return Bypass.NO_CACHE
        return None

    # -- hits ---------------------------------------------------------------------------

    def _fitted(self, turn: Turn, entry: Entry) -> tuple[str, str] | None:
        """The answer a hit serves and its finish_reason, cut where the engine would have cut it
        for this request, or None when the entry cannot serve it:

        - an answer generated under stop strings may have ended where one began: it serves only
          a request that stops at each of them (one that runs past would get a cut answer;
          ``stop_differs``);
        - this request's own stop strings cut the answer at the first of them, as the engine does;
        - an answer cut at ``max_tokens`` (finish_reason "length") serves a request for as many
          tokens (as it is) or fewer, never one for more;
        - a whole answer longer than this request's ``max_tokens`` is cut to it, where the engine
          can count its tokens; else it is served only when its stored count fits;
        - an answer that stopped at a stop string is not served to a request with more stop
          strings where one could have begun at its end (the engine would have stopped sooner)."""
        params = self._engine_request(turn).params
        if entry.stop and not set(entry.stop) <= set(params.stop):
            return None
        text, finish = entry.answer.text, "length" if entry.cut_at else "stop"
        if entry.stop and any(text.endswith(extra[:i]) for extra in set(params.stop) - set(entry.stop)
                              for i in range(1, len(extra))):
            return None     # the text went on past its end: another stop string may begin there
        keep = bool((turn.req.model_extra or {}).get("include_stop_str_in_output"))    # vLLM's
        found = sorted((at, len(s) if keep else 0) for at, s in ((text.find(s), s) for s in params.stop) if at >= 0)
        if found:
            text, finish = text[:found[0][0] + found[0][1]], "stop"
        limit = params.max_tokens
        cut = getattr(self.engine, "truncate_text", None)
        if finish == "length":
            if limit == entry.cut_at:
                return text, "length"
            if limit > entry.cut_at or cut is None:
                return None
            return cut(text, limit), "length"
        if entry.answer_tokens and entry.answer_tokens <= limit:
            return text, finish         # it fits whole (the usual case): nothing to count
        if cut is None:
            # No tokenizer here (an upstream): past a limit the client set, an answer whose count is
            # over it or unknown goes to the engine; with none set, the upstream's own applies.
            return None if turn.req.max_completion_tokens or turn.req.max_tokens else (text, finish)
        shorter = cut(text, limit)
        return (text, finish) if shorter == text else (shorter, "length")

    def _serve_hit(self, turn: Turn, served: _Served) -> Outcome:
        d = turn.decision
        assert d is not None and d.entry is not None
        entry, req, usage = d.entry, turn.req, served.usage
        if d.verify or (self.settings.shadow_rate > 0 and random.random() < self.settings.shadow_rate):
            self.shadow.schedule(entry, self._engine_request(turn), found=d)
        self.metrics.saved_prompt_tokens.labels("hit").inc(usage.prompt_tokens)
        headers = turn.headers()
        if not req.stream:
            self._finish_turn(turn, usage, saved=usage.prompt_tokens, first_token_at=time.perf_counter())
            body = wire.completion(wire.completion_id(), int(served.at), req.model, served.answer, served.finish,
                                   usage, turn.verdict())
            return Outcome(turn.status, headers, body=body)
        writer = StreamWriter(req.model, include_usage=turn.include_usage, created=served.at)
        stream = wire.replay(writer, served.answer, self.settings.replay_chunk_chars, usage,
                             lambda first: self._finish_turn(turn, usage, saved=usage.prompt_tokens,
                                                             first_token_at=first), served.finish)
        return Outcome(turn.status, headers, stream=stream)

    def _count_and_remember(self, turn: Turn, answer: str, now: float) -> tuple[int, int]:
        """A hit's token counts, and the markers that make a repeat of it a regenerate."""
        self.feedback.hit_served(turn.key, turn.controls, Answered(now, turn.entry_id, True))
        counter = getattr(self.engine, "count_text_tokens", None)
        completion = counter(answer) if counter else self.engine.count_tokens([{"role": "assistant",
                                                                                "content": answer}])
        return self.engine.count_tokens(turn.messages), completion

    # -- forwarding ---------------------------------------------------------------------

    async def _forward(self, turn: Turn) -> Outcome:
        events = self.engine.stream(self._engine_request(turn)).__aiter__()
        try:
            first = await events.__anext__()      # errors before any output get a real HTTP status
        except EngineError as exc:
            self.metrics.engine_errors.labels(exc.code).inc()
            await events.aclose()
            raise
        headers = turn.headers()
        if turn.req.stream:
            return Outcome(turn.status, headers, stream=self._relay(turn, first, events))
        answer, calls, final = await wire.collect(first, events)
        if final is None:       # the engine stopped without finishing: nothing to answer with
            self.metrics.engine_errors.labels("engine_ended_early").inc()
            raise _ended_early()
        await self._after_answer(turn, answer, final)
        body = wire.completion(wire.completion_id(), int(time.time()), turn.req.model, answer,
                               final.finish_reason, final.usage, turn.verdict())
        if calls:
            message = body["choices"][0]["message"]
            message["tool_calls"] = calls.assembled()
            message["content"] = message["content"] or None
        return Outcome(turn.status, headers, body=body)

    async def _relay(self, turn: Turn, first, events) -> AsyncIterator[bytes]:
        writer = StreamWriter(turn.req.model, include_usage=turn.include_usage)
        parts: list[str] = []
        first_token_at = None
        saw_raw = False
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
                        if event.raw.get("choices") or writer.include_usage:
                            yield wire.sse(event.raw)
                    else:
                        for frame in writer.content(event.text):
                            yield frame
                else:
                    final: Finished = event
                    if not saw_raw:
                        for frame in writer.finish(final.finish_reason, final.usage):
                            yield frame
                    await self._after_answer(turn, "".join(parts), final, first_token_at=first_token_at)
                    yield wire.DONE
                    return
                event = await events.__anext__()
        except StopAsyncIteration:
            # The engine ended without finishing the answer: said in-band, as the plain path's 502
            # says it; nothing is stored.
            self.metrics.engine_errors.labels("engine_ended_early").inc()
            yield wire.error_event(_ended_early())
            yield wire.DONE
        except EngineError as exc:
            # Headers are gone already: report in-band, store nothing.
            self.metrics.engine_errors.labels(exc.code).inc()
            yield wire.error_event(exc)
            yield wire.DONE
        finally:
            # A client that hangs up cancels this generator; the engine's stream is closed
            # anyway (it frees its KV into the tree, or the upstream connection).
            with anyio.CancelScope(shield=True):
                await events.aclose()

    async def _after_answer(self, turn: Turn, answer: str, final: Finished, *,
                            first_token_at: float | None = None) -> None:
        outcome = await asyncio.to_thread(self._keep, turn, answer, final)
        self.metrics.stores.labels(outcome).inc()
        if final.usage.cached_tokens:
            self.metrics.saved_prompt_tokens.labels("kv_prefix").inc(final.usage.cached_tokens)
        self._finish_turn(turn, final.usage, saved=final.usage.cached_tokens, first_token_at=first_token_at)

    def _keep(self, turn: Turn, answer: str, final: Finished) -> str:
        """Offer a finished answer to the cache (a worker thread runs it); returns the outcome
        counted in smartcache_stores_total. Every answer gets exactly one outcome."""
        controls = turn.controls
        entry_id, outcome = None, "stored"
        if not turn.cacheable:
            outcome = "not_cacheable"
        elif final.finish_reason not in ("stop", "length") or final.tool_calls:
            outcome = f"finish_{final.finish_reason}"
        elif controls.session is None:
            outcome = "no_session"
        else:
            try:
                # The lookup's reading of the request is written as it is; a request that was
                # not looked up (regenerate, no-cache) is read here.
                # The lookup itself, so that the answer also labels the candidate it weighed (learning).
                request = turn.decision if turn.decision is not None else self.cache.prepare(
                    turn.messages, session=controls.session, tenant=controls.tenant, versions=turn.versions)
                # An answer cut by max_tokens is an answer to that request at that limit.
                params = self._engine_request(turn).params
                cut_at = params.max_tokens if final.finish_reason == "length" else 0
                # An answer that stopped may have stopped at one of the request's stop strings;
                # one cut by the limit holds none of them (it would have stopped there).
                stop = params.stop if final.finish_reason == "stop" else ()
                result = self.cache.store(request, answer, ttl=controls.ttl, prompt_tokens=final.usage.prompt_tokens,
                                          cut_at=cut_at, stop=list(stop),
                                          answer_tokens=max(final.usage.completion_tokens, 0))
            except InvalidRequest:
                result = None
            if result is not None and result.stored:
                entry_id = result.cache_id
            else:
                outcome = "store_error" if result and result.reason is ReasonCode.STORE_ERROR else "refused"
        self.feedback.answered(turn.key, Answered(time.time(), entry_id, False))
        return outcome

    # -- per-request pieces -------------------------------------------------------------

    def _engine_request(self, turn: Turn) -> EngineRequest:
        return turn.engine_request(default_max_tokens=self.settings.default_max_tokens)

    def _finish_turn(self, turn: Turn, usage: Usage, *, saved: int, first_token_at: float | None) -> None:
        total = time.perf_counter() - turn.started
        record = turn.record(prompt_tokens=usage.prompt_tokens, saved=saved, total_s=total)
        self.telemetry.request_done(record, total_s=total,
                                    ttft_s=None if first_token_at is None else first_token_at - turn.started)
