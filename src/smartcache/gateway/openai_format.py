"""OpenAI wire format: completions, stream chunks, server-sent events, tool calls put together.

    sse(chunk(cid, created, "m", {"content": "Hi"}))
    -> b'data: {"id": ..., "object": "chat.completion.chunk", ..., "delta": {"content": "Hi"}, ...}\\n\\n'

A stream is: a role chunk, content chunks, a finish chunk, the usage chunk when the client
asked for it (``stream_options.include_usage``), then ``data: [DONE]``. ``StreamWriter``
writes every stream the gateway makes, a relayed answer and a replayed hit alike.
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any, AsyncIterator, Callable

from smartcache.engine import EngineError, Finished, TextDelta, Usage

DONE = b"data: [DONE]\n\n"


# Not uuid4: it reads os.urandom, a system call that lets go of the GIL, and at a thousand hits a
# second the event loop then waits for the lookup thread to hand it back. An id names a
# response; it guards nothing. Reseeded in a forked child, so two workers never share a stream.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)


def completion_id() -> str:
    return f"chatcmpl-{_ids.getrandbits(128):032x}"


def chunk(cid: str, created: int, model: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def usage_chunk(cid: str, created: int, model: str, usage: Usage) -> dict[str, Any]:
    """The last chunk of a stream whose client asked for usage: no choices, only the counts."""
    return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": [], "usage": usage.to_json()}


def sse(data: Any) -> bytes:
    return b"data: " + json.dumps(data, ensure_ascii=False).encode() + b"\n\n"


def completion(cid: str, created: int, model: str, answer: str, finish: str, usage: Usage,
               smartcache: dict[str, Any]) -> dict[str, Any]:
    """A plain (non-streamed) completion, with the cache's own verdict under ``smartcache``."""
    return {"id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": finish}],
            "usage": usage.to_json(), "smartcache": smartcache}


def error_event(exc: EngineError) -> bytes:
    """An engine failure once the headers are gone: reported in-band."""
    return sse({"error": {"message": str(exc), "type": "engine_error", "code": exc.code, "param": None}})


class StreamWriter:
    """The chunks of one stream the gateway writes itself (the role chunk goes out once, first)."""

    def __init__(self, model: str, *, include_usage: bool, created: float | None = None) -> None:
        self.cid, self.model = completion_id(), model
        self.created = int(time.time() if created is None else created)
        self.include_usage = include_usage
        self._sent_role = False

    def role(self) -> list[bytes]:
        if self._sent_role:
            return []
        self._sent_role = True
        return [sse(chunk(self.cid, self.created, self.model, {"role": "assistant", "content": ""}))]

    def content(self, text: str) -> list[bytes]:
        return [*self.role(), sse(chunk(self.cid, self.created, self.model, {"content": text}))]

    def finish(self, reason: str, usage: Usage) -> list[bytes]:
        """The finish chunk, and the usage chunk when asked for (``DONE`` is the caller's)."""
        frames = [*self.role(), sse(chunk(self.cid, self.created, self.model, {}, reason))]
        if self.include_usage:
            frames.append(sse(usage_chunk(self.cid, self.created, self.model, usage)))
        return frames


async def replay(writer: StreamWriter, answer: str, step: int, usage: Usage,
                 on_done: Callable[[float | None], None], finish: str = "stop") -> AsyncIterator[bytes]:
    """A cached answer as a stream, in pieces of ``step`` characters, ending with ``finish``.
    ``on_done`` gets the time the first piece was taken (None for an empty answer), before
    ``[DONE]`` goes out."""
    for frame in writer.role():
        yield frame
    first = None
    for i in range(0, len(answer), step):
        for frame in writer.content(answer[i:i + step]):
            yield frame
        first = first or time.perf_counter()
    for frame in writer.finish(finish, usage):
        yield frame
    on_done(first)
    yield DONE


async def collect(first: TextDelta | Finished, events: AsyncIterator[TextDelta | Finished]
                  ) -> tuple[str, ToolCalls, Finished | None]:
    """A whole answer for a plain completion, from the engine's first event and the rest:
    its text, its tool calls put together, and its finish (None: the engine stopped early)."""
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
    return "".join(text), calls, final


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
