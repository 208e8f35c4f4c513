"""The bundled engine reached in its own process (``server.py``), as a worker of ``serve --workers N`` sees it.

It is the upstream client pointed at the engine's socket, made to behave as the
in-process ``LocalEngine`` does, so that a worker's answers, headers, errors and
entries are those of a single-process gateway:

- the same ``model_id`` and ``tokenizer_id`` (so the same version keys: a SQLite file
  written by one mode is served by the other), and only that model is accepted;
- token counts from the model's own tokenizer, loaded in the worker (``ChatTokenizer``,
  about a second, no model): a hit's usage never waits on the engine process;
- every sampling field sent (``max_tokens`` included, as the gateway resolved it);
- text deltas without the engine's raw chunks, so the worker writes its stream as it
  does in process; ``cached_tokens`` (the radix tree's reuse) comes back in the usage;
- an engine error keeps its status and code (``context_length_exceeded``);
- no read timeout: a long queue on the one engine thread is not an engine failure.

``kv.stats()`` reads the radix tree's figures from the engine (``/admin/stats``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, AsyncIterator

import httpx

from smartcache.engine.base import EngineError, EngineEvent, EngineRequest, TextDelta
from smartcache.engine.upstream import UpstreamEngine

BASE_URL = "http://engine/v1"      # the host is a placeholder: the transport is the Unix socket


class _RemoteKV:
    """The engine process's radix tree, as ``/admin/stats`` reads it (a short blocking call)."""

    def __init__(self, uds: str | None, base_url: str) -> None:
        self._uds, self._base = uds, base_url.rsplit("/v1", 1)[0]

    def stats(self) -> SimpleNamespace:
        try:
            transport = httpx.HTTPTransport(uds=self._uds) if self._uds else None
            with httpx.Client(transport=transport, timeout=2.0) as client:
                return SimpleNamespace(**client.get(self._base + "/kv").json())
        except (httpx.HTTPError, ValueError, TypeError):
            return SimpleNamespace(unavailable=True)


class RemoteEngine(UpstreamEngine):
    accepts_any_model = False

    def __init__(self, *, uds: str | None = None, base_url: str = BASE_URL, tokenizer: Any = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """``uds``: the engine's Unix socket (else ``base_url`` over TCP); ``tokenizer``: something
        with ``count_tokens`` / ``count_text_tokens`` (default: the bundled model's own)."""
        from smartcache.engine.local import MODEL_ID, LocalEngine

        if transport is None and uds is not None:
            transport = httpx.AsyncHTTPTransport(uds=uds)
        super().__init__(base_url, model=MODEL_ID, tokenizer=LocalEngine.tokenizer_id, transport=transport)
        self._client.timeout = httpx.Timeout(None, connect=5.0)
        if tokenizer is None:
            from smartcache.engine.local import ChatTokenizer
            tokenizer = ChatTokenizer()
        self.count_tokens = tokenizer.count_tokens
        self.count_text_tokens = tokenizer.count_text_tokens
        self.kv = _RemoteKV(uds, base_url)

    def _body(self, request: EngineRequest) -> dict[str, Any]:
        p = request.params
        return {"model": request.model, "messages": request.messages, "stream": True,
                "max_tokens": p.max_tokens, "temperature": p.temperature, "top_p": p.top_p, "seed": p.seed,
                "stop": list(p.stop)}

    async def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]:
        async for event in super().stream(request):
            if isinstance(event, TextDelta):
                if event.text:
                    yield TextDelta(event.text)
            else:
                yield event

    @staticmethod
    def _status_error(response: httpx.Response) -> EngineError:
        try:
            error = response.json()["error"]
            return EngineError(str(error["message"]), status=response.status_code, code=str(error["code"]))
        except (ValueError, KeyError, TypeError):
            return EngineError(f"the engine answered {response.status_code}: {response.text[:300]}",
                               status=502, code="engine_error")
