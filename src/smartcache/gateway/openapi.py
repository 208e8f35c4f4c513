"""The OpenAPI description of what the chat endpoint reads by hand.

``/v1/chat/completions`` parses its body itself (to answer OpenAI-style errors and keep
unknown fields), so FastAPI sees no body parameter and would document none. This module
describes the body (the ``ChatCompletionRequest`` schema, with the message shape spelled
out) and the control headers of ``gateway.controls``, for ``openapi_extra`` on the route:
clients, and fuzzers such as schemathesis, then know what to send.
"""

from __future__ import annotations

from typing import Any

from smartcache.gateway.schema import ROLES, ChatCompletionRequest

# One content part: text, or an opaque non-text part (image, audio) the cache hashes.
_PART: dict[str, Any] = {
    "type": "object", "additionalProperties": True, "required": ["type"],
    "properties": {"type": {"type": "string", "enum": ["text", "input_text", "image_url", "input_audio"]},
                   "text": {"type": "string"}},
}

MESSAGE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": True, "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": sorted(ROLES)},
        "content": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"anyOf": [{"type": "string"}, _PART]}},
                              {"type": "null"}]},
        "name": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
    },
}

# name -> what it does (gateway.controls is the reference).
CONTROL_HEADERS: dict[str, str] = {
    "x-session-id": "the session the request belongs to (else the body's user, else metadata.session_id)",
    "x-tenant-id": "the tenant; may only repeat the API key's unless the gateway trusts the header",
    "x-smartcache-namespace": "a sub-tenant",
    "x-session-signature": "HMAC of the session id, where the tenant requires signed sessions",
    "cache-control": "no-cache skips the lookup, no-store skips the write",
    "x-smartcache-ttl": "seconds the answer may be served (a positive, finite number)",
    "x-kb-version": "the knowledge-base version, part of the version key",
    "x-smartcache-regenerate": "1: the user asked for a new answer to the last one",
}


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``#/$defs/Name`` reference replaced by its definition: pydantic's
    refs point into its own ``$defs``, which mean nothing inside an OpenAPI document."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: _inline(v, defs) for k, v in schema.items() if k != "$defs"}
    if isinstance(schema, list):
        return [_inline(v, defs) for v in schema]
    return schema


def chat_openapi() -> dict[str, Any]:
    """The ``openapi_extra`` of the chat route: its JSON body and its control headers."""
    raw = ChatCompletionRequest.model_json_schema()
    schema = _inline(raw, raw.get("$defs", {}))
    schema["properties"]["messages"]["items"] = MESSAGE_SCHEMA
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}},
        "parameters": [{"name": name, "in": "header", "required": False, "description": text,
                        "schema": {"type": "string"}} for name, text in CONTROL_HEADERS.items()],
    }
