"""The load-test upstream: a minimal, instant OpenAI-compatible server for scripts/load_test.py.

It exists only so the load test measures the gateway, not an engine: every answer
is ready at once and the same for the same last user message, so a session can
re-send it byte for byte (the history hash, half-hit docking). Not a mock for
unit tests and used nowhere else.

    POST /v1/chat/completions   plain or SSE (``stream: true``; ``stream_options.include_usage``
                                adds the usage chunk); usage with ``prompt_tokens_details.cached_tokens``
    GET  /v1/models             one model, ``load-upstream``

    python scripts/load_upstream.py --port 8001      # binds 127.0.0.1 only

Token counts are estimates (4 characters a token, 1.5 for Chinese); ``cached_tokens``
is the part of the prompt before the last message, as an engine with a warm prefix
cache would report it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from typing import Any, AsyncIterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MODEL = "load-upstream"
# Answers carry no numbers, dates or names: the gateway checks a hit's key facts against the
# request, and an answer that stated facts of its own would turn paraphrase hits into half-hits.
WORDS_EN = ("calm", "brisk", "simple", "careful", "steady", "gentle", "clear", "quick")
WORDS_ZH = ("稳妥", "简单", "清楚", "轻松", "周到", "实用", "灵活", "省心")
PIECES = 3      # stream chunks an answer is cut into: enough to exercise relaying, cheap to send


def _tokens(text: str) -> int:
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return max(1, int(cjk / 1.5 + (len(text) - cjk) / 4))


def _last_user(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def answer_for(messages: list[dict[str, Any]]) -> str:
    """The answer to a request: fixed per last user message (its sha256 picks the words)."""
    question = _last_user(messages)
    digest = hashlib.sha256(question.encode()).digest()
    if any("\u4e00" <= ch <= "\u9fff" for ch in question):
        a, b = WORDS_ZH[digest[0] % 8], WORDS_ZH[digest[1] % 8]
        return f"好的，建议按{a}、{b}的思路来安排，细节可以再商量。"
    a, b = WORDS_EN[digest[0] % 8], WORDS_EN[digest[1] % 8]
    return f"Sure: a {a}, {b} plan works well here, and we can adjust the details later."


def usage_for(messages: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    texts = [str(m.get("content") or "") for m in messages]
    prompt = sum(_tokens(t) for t in texts) + 4 * len(texts)
    history = sum(_tokens(t) for t in texts[:-1]) + 4 * (len(texts) - 1)
    completion = _tokens(answer)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": history}}


def _chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"


async def _stream(cid: str, created: int, model: str, answer: str, usage: dict[str, Any] | None
                  ) -> AsyncIterator[bytes]:
    yield _chunk(cid, created, model, {"role": "assistant", "content": ""})
    step = max(1, -(-len(answer) // PIECES))
    for i in range(0, len(answer), step):
        yield _chunk(cid, created, model, {"content": answer[i:i + step]})
    yield _chunk(cid, created, model, {}, "stop")
    if usage is not None:
        body = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage}
        yield b"data: " + json.dumps(body, ensure_ascii=False).encode() + b"\n\n"
    yield b"data: [DONE]\n\n"


async def chat_completions(request: Request) -> Response:
    try:
        body = await request.json()
        messages = body["messages"]
        assert isinstance(messages, list) and messages
    except (ValueError, KeyError, TypeError, AssertionError):
        return JSONResponse({"error": {"message": "a JSON body with a non-empty 'messages' list is required",
                                       "type": "invalid_request_error", "param": "messages", "code": None}},
                            status_code=400)
    model = str(body.get("model") or MODEL)
    answer = answer_for(messages)
    usage = usage_for(messages, answer)
    cid, created = f"chatcmpl-load-{hashlib.sha256(answer.encode()).hexdigest()[:12]}", int(time.time())
    if body.get("stream"):
        include = bool((body.get("stream_options") or {}).get("include_usage"))
        return StreamingResponse(_stream(cid, created, model, answer, usage if include else None),
                                 media_type="text/event-stream")
    return JSONResponse({"id": cid, "object": "chat.completion", "created": created, "model": model,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                      "finish_reason": "stop"}],
                         "usage": usage})


async def models(_: Request) -> Response:
    return JSONResponse({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0,
                                                     "owned_by": "load-test"}]})


app = Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"]),
                        Route("/v1/models", models, methods=["GET"])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    # No access log: at a few hundred requests a second it would cost more than the answers.
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
