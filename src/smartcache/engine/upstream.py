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


def _usage(data: dict[str, Any] | None) -> Usage | None:
    if not isinstance(data, dict):
        return None
    details = data.get("prompt_tokens_details") or {}
    return Usage(int(data.get("prompt_tokens") or 0), int(data.get("completion_tokens") or 0),
                 int(details.get("cached_tokens") or 0))


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
            return list(r.json().get("data", []))
        except (httpx.HTTPError, ValueError):
            return [{"id": self.model_id, "object": "model", "owned_by": "upstream"}]

    async def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]:
        body = {**request.extra, "model": request.model, "messages": request.messages, "stream": True,
                "stream_options": {"include_usage": True}}
        finish, usage, tool_calls, reasoning = "stop", None, False, []
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
                        break
                    try:
                        chunk = json.loads(data)
                    except ValueError:
                        raise EngineError(f"upstream sent a malformed chunk: {data[:200]}") from None
                    usage = _usage(chunk.get("usage")) or usage
                    text = ""
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        text += delta.get("content") or ""
                        reasoning.append(delta.get("reasoning_content") or "")
                        tool_calls = tool_calls or bool(delta.get("tool_calls"))
                        finish = choice.get("finish_reason") or finish
                    yield TextDelta(text, raw=chunk)
        except httpx.TimeoutException as exc:
            raise EngineError(f"upstream timed out: {exc}", status=504, code="upstream_timeout") from None
        except httpx.TransportError as exc:
            raise EngineError(f"upstream unreachable at {self.base_url}: {exc}", status=502,
                              code="upstream_unreachable") from None
        yield Finished(finish, usage or Usage(0, 0), tool_calls=tool_calls, reasoning="".join(reasoning))

    @staticmethod
    def _status_error(response: httpx.Response) -> EngineError:
        try:
            body = response.json()
            message = (body.get("error") or {}).get("message") or response.text
        except ValueError:
            body, message = None, response.text
        status = response.status_code if response.status_code < 500 else 502
        return EngineError(f"upstream answered {response.status_code}: {message[:500]}", status=status,
                           code="upstream_error", body=body if isinstance(body, dict) else None)

    async def aclose(self) -> None:
        await self._client.aclose()
