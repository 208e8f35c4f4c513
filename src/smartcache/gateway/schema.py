"""The OpenAI request shape the gateway validates, and its error body.

Unknown fields are kept (``extra="allow"``) so an upstream gets them unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from smartcache.errors import InvalidRequest

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=256)
    messages: list[dict[str, Any]] = Field(min_length=1)    # the count limit is GatewaySettings'

    stream: bool = False
    stream_options: StreamOptions | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    max_completion_tokens: int | None = Field(default=None, ge=1, le=32768)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    seed: int | None = None
    stop: str | list[str] | None = None
    n: int = Field(default=1, ge=1, le=16)
    user: str | None = None
    metadata: dict[str, Any] | None = None

    @field_validator("messages")
    @classmethod
    def _roles(cls, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, m in enumerate(messages):
            if m.get("role") not in ROLES:
                raise ValueError(f"messages[{i}].role must be one of {sorted(ROLES)}")
            content = m.get("content")
            if content is not None and not isinstance(content, (str, list)):
                raise ValueError(f"messages[{i}].content must be a string or a list of parts")
        return messages

    @field_validator("stop")
    @classmethod
    def _stop(cls, stop: str | list[str] | None) -> str | list[str] | None:
        items = [stop] if isinstance(stop, str) else stop or []
        if len(items) > 4 or any(not s for s in items):
            raise ValueError("stop takes at most 4 non-empty strings")
        return stop

    def stop_list(self) -> tuple[str, ...]:
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop or ())

    def passthrough(self) -> dict[str, Any]:
        """The fields an upstream receives besides model, messages and stream, as the client sent them."""
        return self.model_dump(exclude={"model", "messages", "stream", "stream_options", "metadata"},
                               exclude_unset=True)

    @property
    def uses_tools(self) -> bool:
        extra = self.model_extra or {}
        return bool(extra.get("tools") or extra.get("functions"))


def error_body(message: str, *, type_: str = "invalid_request_error", code: str | None = None,
               param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def parse_chat_body(raw: object) -> ChatCompletionRequest:
    """The chat request of a decoded JSON body; InvalidRequest (a 400) naming the first
    problem, OpenAI style, or a choice count this gateway does not serve."""
    if not isinstance(raw, dict):
        raise InvalidRequest("the body must be a JSON object")
    try:
        req = ChatCompletionRequest.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InvalidRequest(f"{where or 'body'}: {first.get('msg', str(exc))}", param=where or None) from None
    if req.n != 1:
        raise InvalidRequest("n > 1 is not supported: this gateway returns one choice per request",
                             code="unsupported_n", param="n")
    return req
