"""Request size limits: a body too large is refused before it is read whole, and a request
with too many or too long messages before anything is encoded.

    body larger than max_body_bytes            413  request_too_large
    more than max_messages messages            400  too_many_messages   (param: messages)
    a message longer than max_message_chars    400  message_too_long    (param: messages[i].content)

A last turn within the limits but longer than ``context.max_turn_chars`` is still answered:
the engine gets it whole, the cache reads its head and tail and neither serves nor stores it.
"""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable

from smartcache.errors import InvalidRequest
from smartcache.gateway.schema import error_body

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class BodyLimit:
    """ASGI middleware: buffers a request body up to ``max_bytes`` and answers 413 past it.

    A declared Content-Length over the limit is refused before a byte is read; a chunked
    body is counted as it arrives. Buffering is what the JSON endpoints do anyway.
    """

    def __init__(self, app: Callable[..., Awaitable[None]], max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()      # after the body: wait for the client to go away

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        payload = json.dumps(error_body(f"the request body is larger than {self.max_bytes} bytes",
                                        code="request_too_large")).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": payload})


def message_chars(content: Any) -> int:
    """Characters of text in a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return 0


def check_messages(messages: list[dict[str, Any]], *, max_messages: int, max_message_chars: int) -> None:
    """Raise InvalidRequest (400) when a request has too many or too long messages."""
    if len(messages) > max_messages:
        raise InvalidRequest(f"messages: {len(messages)} messages, at most {max_messages} are accepted",
                             code="too_many_messages", param="messages")
    for i, message in enumerate(messages):
        chars = message_chars(message.get("content"))
        if chars > max_message_chars:
            raise InvalidRequest(f"messages[{i}].content: {chars} characters, at most {max_message_chars} "
                                 "are accepted", code="message_too_long", param=f"messages[{i}].content")
