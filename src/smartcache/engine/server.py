"""The bundled engine as a process of its own, for a gateway of several workers.

``smartcache serve --workers N`` starts one of these and N workers that reach it
through ``RemoteEngine`` (``remote.py``): the model and its radix tree of KV prefixes
are loaded once, and every worker's forwarded request reuses the same prefixes.

It serves the OpenAI-compatible subset the workers ask of it, on a Unix socket
(``--uds``) or 127.0.0.1 (``--port``):

    POST /v1/chat/completions   stream or not; ``usage.prompt_tokens_details.cached_tokens``
                                says how many prompt tokens came from the radix tree
    GET  /v1/models             the one model, as the in-process gateway lists it
    GET  /kv                    the radix tree's stats (``/admin/stats`` shows them)
    GET  /health                200 once the model is loaded

An engine error before the first token is an HTTP status with an OpenAI error body
(its ``code`` kept: ``context_length_exceeded``), so the worker reports it exactly as
the in-process engine would. A client that hangs up closes its generation, whose KV
goes into the tree as it does in process.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
import time
import uuid
from dataclasses import asdict
from typing import Any, AsyncIterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from smartcache.engine.base import EngineError, EngineRequest, Finished, GenerationParams, TextDelta

log = logging.getLogger("smartcache.engine")


def _error(exc: EngineError) -> JSONResponse:
    kind = "invalid_request_error" if exc.status < 500 else "api_error"
    return JSONResponse({"error": {"message": str(exc), "type": kind, "param": None, "code": exc.code}},
                        status_code=exc.status)


def _bad_request(message: str) -> JSONResponse:
    return _error(EngineError(message, status=400, code="invalid_request"))


def engine_request(body: Any) -> EngineRequest:
    """The sampling fields a worker sends (``RemoteEngine`` sends every one of them)."""
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        raise ValueError("the body must be an object with a list of messages")
    stop = body.get("stop") or ()
    params = GenerationParams(max_tokens=int(body.get("max_tokens") or 256),
                              temperature=float(body.get("temperature") or 0.0),
                              top_p=float(body.get("top_p") if body.get("top_p") is not None else 1.0),
                              seed=None if body.get("seed") is None else int(body["seed"]),
                              stop=(stop,) if isinstance(stop, str) else tuple(str(s) for s in stop))
    return EngineRequest(str(body.get("model") or ""), body["messages"], params)


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def create_engine_app(engine) -> FastAPI:
    """The engine's HTTP face; ``engine`` is a ``LocalEngine`` (or a ``FakeEngine`` in tests)."""
    app = FastAPI(title="SmartCache engine", docs_url=None, redoc_url=None, openapi_url=None)

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": engine.model_id}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list",
                "data": [{"id": engine.model_id, "object": "model", "created": 0, "owned_by": "smartcache"}]}

    @app.get("/kv")
    async def kv() -> dict[str, Any]:
        tree = getattr(engine, "kv", None)
        return asdict(tree.stats()) if tree is not None else {}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
            req = engine_request(body)
        except (ValueError, TypeError) as exc:
            return _bad_request(f"bad engine request: {exc}")
        events = engine.stream(req).__aiter__()
        try:
            first = await events.__anext__()     # an error before any output is an HTTP status
        except EngineError as exc:
            await events.aclose()
            return _error(exc)
        except StopAsyncIteration:
            return _error(EngineError("the engine produced nothing", code="engine_ended_early"))
        cid, created, model = f"chatcmpl-{uuid.uuid4().hex}", int(time.time()), engine.model_id
        if body.get("stream"):
            return StreamingResponse(_stream(events, first, cid, created, model), media_type="text/event-stream")
        text, final = [], None
        try:
            event = first
            while True:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                else:
                    final = event
                event = await events.__anext__()
        except StopAsyncIteration:
            pass
        except EngineError as exc:
            return _error(exc)
        finally:
            await events.aclose()
        if final is None:
            return _error(EngineError("the engine ended the answer before finishing it", code="engine_ended_early"))
        return Response(json.dumps({
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(text)},
                         "finish_reason": final.finish_reason}],
            "usage": final.usage.to_json()}, ensure_ascii=False), media_type="application/json")

    return app


async def _stream(events: AsyncIterator, first, cid: str, created: int, model: str) -> AsyncIterator[bytes]:
    """OpenAI chunks: one per text delta, then the finish chunk with the usage, then [DONE]."""
    head = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model}
    event = first
    try:
        while True:
            if isinstance(event, TextDelta):
                yield _sse({**head, "choices": [{"index": 0, "delta": {"content": event.text},
                                                 "finish_reason": None}]})
            elif isinstance(event, Finished):
                yield _sse({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": event.finish_reason}],
                            "usage": event.usage.to_json()})
                yield b"data: [DONE]\n\n"
                return
            event = await events.__anext__()
    except StopAsyncIteration:
        return                  # no finish, no [DONE]: the worker reads a cut answer, and stores nothing
    except EngineError as exc:
        yield _sse({"error": {"message": str(exc), "type": "engine_error", "code": exc.code, "param": None}})
    finally:
        await events.aclose()


PARENT_ENV = "SMARTCACHE_PARENT_PID"     # set by ``serve --workers``: the process its children die with


def die_with_parent() -> None:
    """Linux: be killed when the process that started this one dies, even by SIGKILL, so a
    crashed ``serve`` leaves no engine or worker holding its port, socket or file. A parent
    that died before this was called (a worker still importing when ``serve`` was killed) sends
    no signal: that one is read from ``SMARTCACHE_PARENT_PID``, after the signal is asked for,
    and this process exits at once (an orphaned worker went on serving the port)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG
    except (OSError, AttributeError):       # not Linux: the parent's orderly shutdown still stops it
        pass
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit() and os.getppid() != int(parent):
        os._exit(1)                         # no cleanup to run: nothing was started yet


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m smartcache.engine.server",
                                     description="the bundled engine, served for the gateway's workers")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--uds", help="serve on this Unix socket")
    where.add_argument("--port", type=int, help="serve on 127.0.0.1:PORT")
    parser.add_argument("--kv-budget-mb", type=int, default=512)
    parser.add_argument("--fake", action="store_true", help="the FakeEngine instead of SmolLM2 (tests)")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    die_with_parent()
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import uvicorn

    if args.fake:
        from smartcache.engine.fake import FakeEngine
        from smartcache.engine.local import MODEL_ID
        engine: Any = FakeEngine(model_id=MODEL_ID)
    else:
        from smartcache.engine.local import LocalEngine
        engine = LocalEngine(kv_budget_mb=args.kv_budget_mb)
    where_kw = {"uds": args.uds} if args.uds else {"host": "127.0.0.1", "port": args.port}
    uvicorn.run(create_engine_app(engine), log_level=args.log_level.lower(), **where_kw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
