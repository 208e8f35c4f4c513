"""A lean HTTP/1.1 keep-alive client for timing the gateway: one connection, one request at a time.

httpx spends about as much CPU on a request as a word-for-word hit costs the gateway, and
the benchmark's client shares the gateway's two cores: its figures were then the client's as
much as the gateway's. This client writes the request bytes itself and reads the answer by its
Content-Length (the gateway's JSON answers always carry one), so what is timed is the gateway.
It speaks only what the benchmark needs: POST and GET of JSON on one keep-alive connection,
no chunked bodies, no redirects, no TLS.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

from load_test import Plan, Sample


class LeanError(Exception):
    """The connection broke, or an answer this client cannot read (no Content-Length)."""


class LeanClient:
    def __init__(self, url: str, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname or "127.0.0.1", parts.port or 80, timeout
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> LeanClient:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except OSError:
                pass

    async def request(self, method: str, path: str, body: bytes = b"",
                      headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        """(status, headers with lower-case names, body) of one request on the open connection."""
        assert self._reader is not None and self._writer is not None, "use as an async context manager"
        lines = [f"{method} {path} HTTP/1.1", f"host: {self.host}:{self.port}", f"content-length: {len(body)}"]
        if body:
            lines.append("content-type: application/json")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self._writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body)
        return await asyncio.wait_for(self._read_response(), self.timeout)

    async def _read_response(self) -> tuple[int, dict[str, str], bytes]:
        assert self._reader is not None
        try:
            head = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError) as exc:
            raise LeanError(f"no answer: {exc!r}") from exc
        status_line, *header_lines = head[:-4].decode("latin-1").split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" not in headers:
            raise LeanError(f"an answer without Content-Length (status {status})")
        try:
            body = await self._reader.readexactly(int(headers["content-length"]))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise LeanError(f"the answer's body was cut: {exc!r}") from exc
        return status, headers, body


async def ask_lean(client: LeanClient, plan: Plan, messages: list[dict[str, str]], session: str,
                   kind: str) -> Sample:
    """One plain (not streamed) chat request, read as ``load_test.ask`` reads it."""
    body = json.dumps({"model": plan.model, "messages": messages, "max_tokens": plan.max_tokens},
                      ensure_ascii=False).encode("utf-8")
    started = time.perf_counter()
    status, reasons, code, error, finish = "error", "", None, None, None
    try:
        code, headers, raw = await client.request("POST", "/v1/chat/completions", body, {"x-session-id": session})
        status, reasons = headers.get("x-smartcache-status", "error"), headers.get("x-smartcache-reason", "")
        if code >= 300:
            error = f"http {code}: {raw[:200]!r}"
        else:
            choice: dict[str, Any] = json.loads(raw)["choices"][0]
            finish = choice["finish_reason"]
            choice["message"]["content"]        # noqa: B018 - a body without it is an error
    except (LeanError, asyncio.TimeoutError, OSError, ValueError, KeyError, IndexError) as exc:
        error = f"{type(exc).__name__}: {exc} (plain {kind}, {time.perf_counter() - started:.2f} s in)"
    if error is None and status not in ("hit", "half-hit", "miss", "bypass"):
        error = f"unknown x-smartcache-status {status!r}"
    return Sample(kind, "error" if error else status, time.perf_counter() - started, False, finish,
                  None, "regenerate" in reasons.split(","), error, messages[-1]["content"], reasons, started, code)
