"""The OpenAI request shape the gateway validates, and its error body.

Unknown fields are kept (``extra="allow"``) so an upstream gets them unchanged.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from smartcache.errors import InvalidRequest

ROLES = {"system", "developer", "user", "assistant", "tool", "function"}

# Request fields that shape the answer beyond the messages, so an answer given under them is an
# answer only to requests that ask the same: OpenAI's response_format, logit_bias, reasoning
# effort, verbosity and web search; vLLM's guided decoding, structured outputs, chat-template
# arguments (enable_thinking) and generation controls; llama.cpp's grammar and JSON schema.
OUTPUT_FIELDS = ("response_format", "logit_bias", "reasoning_effort", "verbosity", "web_search_options",
                 "guided_json", "guided_regex", "guided_choice", "guided_grammar", "structured_outputs",
                 "chat_template_kwargs", "include_stop_str_in_output", "min_tokens", "ignore_eos", "stop_token_ids",
                 "grammar", "json_schema")


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

    def output_shape(self) -> str:
        """A digest of the fields that shape the answer (``OUTPUT_FIELDS``), "" when none does:
        a plain-text answer must never reach a request for JSON, nor one schema's for another's."""
        extra = self.model_extra or {}
        shape = {name: extra[name] for name in OUTPUT_FIELDS if extra.get(name) not in (None, "", {}, [])}
        if shape.get("response_format") == {"type": "text"}:      # the default, said aloud
            del shape["response_format"]
        if not shape:
            return ""
        return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:32]

    @property
    def wants_logprobs(self) -> bool:
        """A cached answer has no token log-probabilities to give."""
        extra = self.model_extra or {}
        return bool(extra.get("logprobs")) or extra.get("top_logprobs") is not None

    @property
    def wants_audio(self) -> bool:
        """A cached answer is text; audio output goes to the engine."""
        extra = self.model_extra or {}
        modalities = extra.get("modalities")
        return extra.get("audio") is not None or isinstance(modalities, list) and "audio" in modalities

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
