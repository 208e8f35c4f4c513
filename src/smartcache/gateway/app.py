"""The FastAPI app: OpenAI-compatible endpoints, metrics, the admin API and the dashboard."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from importlib import resources
from typing import Any, Awaitable, Callable

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException

from smartcache.cache import SmartCache
from smartcache.engine import EngineError
from smartcache.errors import (
    AuthenticationError, EntryNotFound, InvalidRequest, PermissionDenied, SmartCacheError,
)
from smartcache.gateway.admin import FeedbackBody, admin_router
from smartcache.gateway.auth import OPEN, AuthPolicy, Principal
from smartcache.gateway.controls import read_controls
from smartcache.gateway.limits import BodyLimit, check_messages
from smartcache.gateway.openapi import chat_openapi
from smartcache.gateway.schema import error_body, parse_chat_body
from smartcache.gateway.service import ChatService, GatewaySettings

log = logging.getLogger("smartcache.gateway")

CHAT_PATH = "/v1/chat/completions"


def _error(status: int, message: str, *, type_: str = "invalid_request_error", code: str | None = None,
           param: str | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, type_=type_, code=code, param=param), status_code=status)


async def _promote_on_time(service: ChatService) -> None:
    """Pending answers become servable when their window passes, whether or not this
    replica sees another request (other replicas read them from the shared store). Of the
    workers of one gateway, the holder of the lifecycle lease does it (``Lifecycle.tick``);
    each publishes its per-process counts for the summed /metrics."""
    cache = service.cache
    while True:
        # Woken when this worker's own write falls due: another worker's lookup cannot promote it.
        await asyncio.sleep(max(cache.next_tick_in(), 0.01))
        try:
            await asyncio.to_thread(cache.tick)     # a store call: off the event loop
        except SmartCacheError as exc:
            log.warning("smartcache: promotion tick failed: %s", exc)
        if service.shared_telemetry is None and service.metrics.multiprocess_dir is None:
            continue        # one process: nothing to share
        try:
            await asyncio.to_thread(_publish, service)
        except (SmartCacheError, OSError) as exc:
            log.warning("smartcache: cannot publish this worker's counts: %s", exc)


def _publish(service: ChatService) -> None:
    """This worker's counts where the other workers' /metrics and admin API add them up."""
    service.metrics.publish()
    if service.shared_telemetry is not None:
        service.shared_telemetry.publish()


def error_response(exc: Exception) -> JSONResponse | None:
    """The OpenAI error body and status an exception's kind implies (None: not one of ours)."""
    if isinstance(exc, RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(400, f"{where or 'body'}: {first.get('msg', 'invalid request')}", param=where or None)
    if isinstance(exc, StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail), code="not_found" if exc.status_code == 404 else None)
    if isinstance(exc, EntryNotFound):
        return _error(404, str(exc), code="entry_not_found")
    if isinstance(exc, AuthenticationError):
        response = _error(401, str(exc), code=exc.code)
        response.headers["www-authenticate"] = "Bearer"
        return response
    if isinstance(exc, PermissionDenied):
        return _error(403, str(exc), code=exc.code)
    if isinstance(exc, InvalidRequest):
        return _error(400, str(exc), code=exc.code, param=exc.param)
    if isinstance(exc, EngineError):
        if exc.body and isinstance(exc.body.get("error"), dict):
            return JSONResponse(exc.body, status_code=exc.status)
        kind = "invalid_request_error" if exc.status < 500 else "api_error"
        return _error(exc.status, str(exc), type_=kind, code=exc.code)
    if isinstance(exc, SmartCacheError):
        log.exception("smartcache error", exc_info=exc)
        return _error(500, str(exc), type_="api_error", code="smartcache_error")
    return None


def _add_error_handlers(app: FastAPI) -> None:
    """Every error leaves as an OpenAI error body with the status its kind implies."""

    async def handle(_: Request, exc: Exception) -> JSONResponse:
        response = error_response(exc)
        assert response is not None, "registered only for the kinds error_response maps"
        return response

    for kind in (RequestValidationError, StarletteHTTPException, EntryNotFound, AuthenticationError,
                 PermissionDenied, InvalidRequest, EngineError, SmartCacheError):
        app.add_exception_handler(kind, handle)


class Gateway(FastAPI):
    """FastAPI with a lane of its own for the chat endpoint. A word-for-word hit costs about a
    dictionary look-up, and FastAPI's layers (its middleware, routing, dependencies, request
    object) cost several times that; the chat endpoint reads and writes only JSON, so its
    requests go straight to ``chat_lane`` and every other path through FastAPI."""

    chat_lane: Callable[..., Awaitable[None]] | None = None

    async def __call__(self, scope, receive, send) -> None:
        if (self.chat_lane is not None and scope["type"] == "http" and scope["method"] == "POST"
                and _route_path(scope) == CHAT_PATH):
            await self.chat_lane(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _route_path(scope: dict[str, Any]) -> str:
    path, root = scope["path"], scope.get("root_path", "")
    return path[len(root):] if root and path.startswith(root) else path


def create_app(cache: SmartCache, engine, settings: GatewaySettings | None = None, *,
               admin_token: str | None = None, auth: AuthPolicy = OPEN, close_engine: bool = True,
               close_admin: bool = False, close_store: bool = False) -> Gateway:
    """The gateway app. ``auth`` says who the callers are (see ``gateway.auth``); with keys
    and no ``admin_token`` the admin API is closed, as it is with ``close_admin`` (a gateway
    bound beyond loopback without a token). ``close_engine=False`` leaves the engine
    running at shutdown (an engine shared by several apps, as in tests). ``close_store`` closes
    the cache's store at shutdown (``serve``: a SQLite file saves its index snapshot and
    graphs, so the next start reads no row); a store shared beyond this app stays open."""
    auth.check_admin_token(admin_token)
    service = ChatService(cache, engine, settings)

    async def principal(request: Request) -> Principal:
        # async: a plain def would be run on the thread pool, a hop per request for one hash.
        return auth.authenticate(request.headers)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI):
        ticker = asyncio.create_task(_promote_on_time(service))
        yield
        ticker.cancel()
        await asyncio.to_thread(service.close)     # joins the markers writer: off the loop
        await service.shadow.drain()
        await asyncio.to_thread(cache.flush_hits)       # the last second's hit counts
        close = getattr(cache.backend, "close", None) if close_store else None
        if close is not None:
            await asyncio.to_thread(close)
        if close_engine:
            await engine.aclose()

    app = Gateway(title="SmartCache gateway", version="0.1.0", lifespan=lifespan)
    app.state.service = service
    app.add_middleware(BodyLimit, max_bytes=service.settings.max_body_bytes)

    _add_error_handlers(app)

    async def chat(headers: Headers, body: bytes) -> Response:
        """One chat completion: who asks, the body read and checked, then the cache's answer."""
        caller = auth.authenticate(headers)
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError):    # not JSON, not UTF-8, or nested too deep
            return _error(400, "the body must be a JSON object")
        req = parse_chat_body(raw)
        settings = service.settings
        check_messages(req.messages, max_messages=settings.max_messages, max_message_chars=settings.max_message_chars)
        if not getattr(engine, "accepts_any_model", False) and req.model != engine.model_id:
            return _error(404, f"the model '{req.model}' does not exist; this gateway serves '{engine.model_id}'",
                          code="model_not_found", param="model")
        controls = read_controls(headers, raw, caller, auth)
        outcome = await service.handle(req, controls)
        if outcome.stream is not None:
            return StreamingResponse(outcome.stream, media_type="text/event-stream",
                                     headers={**outcome.headers, "cache-control": "no-cache"})
        return JSONResponse(outcome.body, headers=outcome.headers)

    async def chat_lane(scope: dict[str, Any], receive, send) -> None:
        """The chat endpoint as a bare ASGI app (``Gateway.__call__``): the body comes whole from
        ``BodyLimit``, every error leaves as ``error_response`` writes it."""
        body = (await receive()).get("body", b"")
        try:
            response = await chat(Headers(scope=scope), body)
        except Exception as exc:    # noqa: BLE001 - every error leaves as an OpenAI error body
            response = error_response(exc)
            if response is None:
                log.exception("smartcache: unexpected error on the chat path", exc_info=exc)
                response = _error(500, "the gateway failed on this request", type_="api_error",
                                  code="internal_error")
        await response(scope, receive, send)

    app.chat_lane = BodyLimit(chat_lane, max_bytes=service.settings.max_body_bytes)

    # The route documents the endpoint (OpenAPI) and serves it wherever the lane is not taken.
    @app.post(CHAT_PATH, openapi_extra=chat_openapi())     # the body is read by hand in chat()
    async def chat_completions(request: Request) -> Response:
        return await chat(request.headers, await request.body())

    @app.get("/v1/models", dependencies=[Depends(principal)])
    async def models() -> dict[str, Any]:
        if hasattr(engine, "list_models"):
            data = await engine.list_models()
        else:
            data = [{"id": engine.model_id, "object": "model", "created": 0, "owned_by": "smartcache"}]
        return {"object": "list", "data": data}

    # Handlers that touch the store are plain functions, run on the thread pool (see admin.py).
    @app.get("/health")
    def health() -> dict[str, Any]:
        """"ok", or "degraded" while the store fails: requests are then passed through to the
        engine uncached, and the gateway recovers by itself once the store answers again."""
        try:
            entries: int | None = cache.entry_count()
        except SmartCacheError:
            entries = None
        store = cache.store_health()
        return {"status": "ok" if store.up else "degraded", "model": engine.model_id, "encoder": cache.encoder.name,
                "entries": entries, "cache_enabled": service.settings.cache_enabled,
                "store": {"up": store.up, "since": store.since, "error": store.last_error}}

    @app.get("/metrics")
    def metrics() -> Response:
        return Response(service.metrics.render(), media_type="text/plain; version=0.0.4")

    @app.get("/dashboard", response_class=HTMLResponse)
    async def dashboard() -> HTMLResponse:
        page = resources.files("smartcache.gateway").joinpath("static/dashboard.html").read_text("utf-8")
        return HTMLResponse(page)

    @app.post("/v1/smartcache/feedback")
    def feedback(request: Request, body: FeedbackBody, caller: Principal = Depends(principal)
                       ) -> dict[str, Any]:
        """A client's verdict on an answer it was given (the entry id comes in x-smartcache-entry)."""
        controls = read_controls(request.headers, {}, caller, auth)
        entry = cache.get(body.entry)
        if entry is None or entry.tenant != controls.tenant:
            raise EntryNotFound(f"no entry {body.entry} for this tenant")
        result = cache.feedback(body.entry, body.kind)
        return {"entry": result.cache_id, "state": result.state.value, "score": result.feedback_score}

    closed = admin_token is None and (auth.keys_required or close_admin)
    if closed:
        log.warning("smartcache: no --admin-token with API keys or beyond loopback: the admin API is closed")
    app.include_router(admin_router(service, admin_token, closed=closed))
    return app
