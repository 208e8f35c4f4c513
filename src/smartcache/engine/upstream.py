"""The upstream engine: any OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, OpenAI).

Requests go out as streams (``stream_options.include_usage`` asked for, so the
usage and ``cached_tokens`` of the engine's own prefix cache come back) and every
chunk is forwarded unchanged; the gateway assembles a plain completion from
them when the client did not ask for a stream. Transport failures become
``EngineError``s with the status the gateway returns: 504 on a timeout, 502 when
the server is unreachable or fails, the upstream's own 4xx otherwise.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator

import httpx

from smartcache.engine.base import EngineError, EngineEvent, EngineRequest, Finished, TextDelta, Usage


def _tokens(value: Any) -> int:
    """A token count as an upstream reported it; anything but a finite number >= 0 counts as 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
        return 0
    return int(value)


def _usage(data: Any) -> Usage | None:
    # Usage is bookkeeping, not the answer: an odd one is read as zeros rather than failing the answer.
    if not isinstance(data, dict):
        return None
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else 0
    return Usage(_tokens(data.get("prompt_tokens")), _tokens(data.get("completion_tokens")), _tokens(cached))


def _read_chunk(chunk: Any) -> tuple[str, str, bool, str | None]:
    """(text, reasoning, tool calls?, finish reason) of one chunk. Raises ValueError when the
    chunk is not the OpenAI shape: a server that sends one is broken, its answer unusable."""
    if not isinstance(chunk, dict):
        raise ValueError("not an object")
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise ValueError("choices is not a list")
    text, reasoning, tool_calls, finish = "", "", False, None
    for choice in choices:
        delta = (choice.get("delta") or {}) if isinstance(choice, dict) else None
        if not isinstance(delta, dict):
            raise ValueError("a choice or its delta is not an object")
        content, thought = delta.get("content") or "", delta.get("reasoning_content") or ""
        reason = choice.get("finish_reason")
        if not isinstance(content, str) or not isinstance(thought, str) or not isinstance(reason, (str, type(None))):
            raise ValueError("content, reasoning_content or finish_reason is not a string")
        text, reasoning = text + content, reasoning + thought
        tool_calls = tool_calls or bool(delta.get("tool_calls"))
        finish = reason or finish
    return text, reasoning, tool_calls, finish


class UpstreamEngine:
    accepts_any_model = True      # the upstream decides which models exist

    def __init__(self, base_url: str, *, api_key: str | None = None, model: str | None = None,
                 tokenizer: str | None = None, timeout_s: float = 120.0, connect_timeout_s: float = 5.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """``transport`` replaces the network, as in httpx: tests pass ``httpx.MockTransport``."""
        if not base_url.startswith(("http://", "https://")):
            raise EngineError(f"upstream must be an http(s) URL, got {base_url!r}", status=500, code="config")
        self.base_url = base_url.rstrip("/")
        self.model_id = model or "upstream"
        self.tokenizer_id = tokenizer or self.model_id
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(base_url=self.base_url, headers=headers,
                                         timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
                                         transport=transport)

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        # No tokenizer of the upstream model here: a size estimate (about 4 characters
        # a token in English, 1.5 in Chinese) used only until the engine's usage arrives.
        text = "".join(str(m.get("content") or "") for m in messages)
        cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
        return int(cjk / 1.5 + (len(text) - cjk) / 4) + 4 * len(messages)

    async def list_models(self) -> list[dict[str, Any]]:
        try:
            r = await self._client.get("/models")
            r.raise_for_status()
            data = r.json()
        except (httpx.HTTPError, ValueError):
            data = None
        models = data.get("data") if isinstance(data, dict) else None
        if not isinstance(models, list):
            return [{"id": self.model_id, "object": "model", "owned_by": "upstream"}]
        return [m for m in models if isinstance(m, dict)]

    def _body(self, request: EngineRequest) -> dict[str, Any]:
        """What goes upstream: the client's fields as it sent them, always as a stream with usage."""
        return {**request.extra, "model": request.model, "messages": request.messages, "stream": True,
                "stream_options": {"include_usage": True}}

    async def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]:
        body = self._body(request)
        finish, usage, tool_calls, reasoning = None, None, False, []
        done = False
        try:
            async with self._client.stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                async for line in response.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        done = True
                        break
                    try:
                        chunk = json.loads(data)
                        text, thought, calls, reason = _read_chunk(chunk)
                    except ValueError:
                        raise EngineError(f"upstream sent a malformed chunk: {data[:200]}") from None
                    usage = _usage(chunk.get("usage")) or usage
                    reasoning.append(thought)
                    tool_calls, finish = tool_calls or calls, reason or finish
                    yield TextDelta(text, raw=chunk)
        except httpx.TimeoutException as exc:
            raise EngineError(f"upstream timed out: {exc}", status=504, code="upstream_timeout") from None
        except httpx.ConnectError as exc:
            raise EngineError(f"upstream unreachable at {self.base_url}: {exc}", status=502,
                              code="upstream_unreachable") from None
        except httpx.TransportError as exc:     # the connection broke during the answer
            raise EngineError(f"upstream connection failed: {exc!r}", status=502, code="upstream_cut") from None
        except httpx.HTTPError as exc:      # a body httpx cannot decode (bad gzip), too many redirects
            raise EngineError(f"upstream sent a broken response: {exc}", status=502, code="upstream_error") from None
        if not done and finish is None:
            # The connection closed before the answer said it was finished: a cut answer,
            # which must never be taken (and cached) as complete.
            raise EngineError("upstream stream ended before the answer was finished", status=502,
                              code="upstream_cut")
        yield Finished(finish or "stop", usage or Usage(0, 0), tool_calls=tool_calls,
                       reasoning="".join(reasoning))

    @staticmethod
    def _status_error(response: httpx.Response) -> EngineError:
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message:
            message = response.text
        status = response.status_code if response.status_code < 500 else 502
        return EngineError(f"upstream answered {response.status_code}: {message[:500]}", status=status,
                           code="upstream_error", body=body if isinstance(body, dict) else None)

    async def aclose(self) -> None:
        await self._client.aclose()
