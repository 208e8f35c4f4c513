"""The engine contract: what the gateway asks of whatever produces answers.

Two engines implement it: the bundled CPU engine (SmolLM2 on transformers, with a
radix tree of KV prefixes) and the upstream client (any OpenAI-compatible
server). Both stream ``EngineEvent``s: text deltas, then one ``Finished``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Protocol, Union

from smartcache.errors import SmartCacheError


class EngineError(SmartCacheError):
    """The engine failed to answer. ``status`` is the HTTP status the gateway should return."""

    def __init__(self, message: str, *, status: int = 502, code: str = "engine_error",
                 body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.body = body


@dataclass(frozen=True)
class GenerationParams:
    max_tokens: int = 256
    temperature: float = 0.0        # 0: greedy
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0          # prompt tokens whose KV state was reused

    def to_json(self) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
                "prompt_tokens_details": {"cached_tokens": self.cached_tokens}}


@dataclass(frozen=True)
class EngineRequest:
    """One chat request as the engine sees it. ``extra`` holds the OpenAI fields the
    gateway does not interpret (tools, response_format, …); an upstream gets them as-is."""

    model: str
    messages: list[dict[str, Any]]
    params: GenerationParams = field(default_factory=GenerationParams)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TextDelta:
    text: str
    raw: dict[str, Any] | None = None          # the upstream chunk, forwarded unchanged


@dataclass(frozen=True)
class Finished:
    finish_reason: str                          # stop | length | tool_calls | content_filter | error
    usage: Usage
    tool_calls: bool = False
    reasoning: str = ""                         # an upstream's reasoning_content, kept for the history
    raw: dict[str, Any] | None = None


EngineEvent = Union[TextDelta, Finished]


class Engine(Protocol):
    model_id: str           # what /v1/models lists
    tokenizer_id: str       # part of every entry's version key

    def count_tokens(self, messages: list[dict[str, Any]]) -> int: ...

    def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]: ...

    async def aclose(self) -> None: ...
