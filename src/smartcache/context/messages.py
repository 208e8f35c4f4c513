"""OpenAI-style chat messages, parsed into typed values.

Accepted input is what an OpenAI-compatible client sends: a list of dicts with
``role`` in system / developer / user / assistant / tool and ``content`` either a
string or a list of parts ``{"type": "text", "text": ...}``. Non-text parts
(images, audio) are kept as an opaque marker so two requests that differ only in
an image never look identical.

    >>> parse_messages([{"role": "user", "content": "hi"}])
    Conversation(system='', turns=(Turn(role='user', text='hi'),), current='hi')
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping

from smartcache.errors import InvalidRequest

Role = Literal["user", "assistant"]

_SYSTEM_ROLES = frozenset({"system", "developer"})
_KNOWN_ROLES = _SYSTEM_ROLES | {"user", "assistant", "tool", "function"}


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: who spoke and the plain text they said."""

    role: Role
    text: str


@dataclass(frozen=True)
class Conversation:
    """A request split into its system prompt, the prior turns and the current user turn.

    ``turns`` holds every user / assistant turn, the current one last; ``history``
    is everything before it. ``raw`` keeps the messages exactly as sent (after
    validation) because the prefix hash must be byte-faithful.
    """

    system: str
    turns: tuple[Turn, ...]
    current: str
    raw: tuple[Mapping[str, Any], ...] = ()
    has_tool_calls: bool = False

    def __repr__(self) -> str:
        return f"Conversation(system={self.system!r}, turns={self.turns!r}, current={self.current!r})"

    @property
    def history(self) -> tuple[Turn, ...]:
        return self.turns[:-1]

    def history_hash(self) -> str:
        """sha256 of the canonical history: the system prompt and every turn before the current one."""
        return canonical_hash(self.system, self.history)

    def conversation_hash(self, answer: str) -> str:
        """sha256 of the whole conversation including ``answer``: what a follow-up's history will hash to."""
        return canonical_hash(self.system, self.turns + (Turn("assistant", answer),))


def canonical_hash(system: str, turns: Iterable[Turn]) -> str:
    """Hash a system prompt and turns in a canonical, order-preserving form.

    The text is hashed exactly as given (no normalisation): the prefix hash means
    "these bytes again", which is what an engine's prefix cache can reuse.
    """
    payload = [["system", system]] + [[t.role, t.text] for t in turns]
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def _utf8(text: str, where: str) -> str:
    """``text`` if it can be encoded as UTF-8. A lone surrogate (JSON allows ``"\\ud800"``) cannot:
    no hash, encoder or engine can take it, so it is the caller's error, reported as such."""
    if not text.isascii():      # the common case costs no copy
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidRequest(f"{where} is not valid Unicode (a lone surrogate)") from None
    return text


def _dump(value: Any, where: str, *, ensure_ascii: bool) -> str:
    """Canonical JSON of an opaque part or of tool calls; InvalidRequest where there is none
    (nesting deeper than the interpreter's recursion limit, a cycle, keys of mixed types)."""
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, sort_keys=True, default=str)
    except (RecursionError, ValueError, TypeError) as exc:
        raise InvalidRequest(f"{where} cannot be read as JSON: {type(exc).__name__}") from None


def content_text(content: Any, *, where: str) -> str:
    """Flatten a message's content (string or list of parts) into text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return _utf8(content, f"{where}.content")
    if isinstance(content, list):
        pieces: list[str] = []
        for i, part in enumerate(content):
            if isinstance(part, str):
                pieces.append(_utf8(part, f"{where}.content[{i}]"))
                continue
            if not isinstance(part, Mapping):
                raise InvalidRequest(f"{where}.content[{i}] must be an object or a string")
            kind = part.get("type", "text")
            if kind in ("text", "input_text"):
                text = part.get("text")
                if not isinstance(text, str):
                    raise InvalidRequest(f"{where}.content[{i}].text must be a string")
                pieces.append(_utf8(text, f"{where}.content[{i}].text"))
            else:
                # An image or audio part: an opaque marker that includes its payload's
                # digest, so requests with different images never compare equal.
                payload = _dump(part, f"{where}.content[{i}]", ensure_ascii=True)     # ASCII: no surrogate survives
                digest = hashlib.sha256(payload.encode()).hexdigest()[:16]
                pieces.append(f"[{_utf8(str(kind), f'{where}.content[{i}].type')}:{digest}]")
        return "\n".join(pieces)
    raise InvalidRequest(f"{where}.content must be a string, a list of parts or null")


def parse_messages(messages: Any) -> Conversation:
    """Validate an OpenAI-style message list and split it into a Conversation.

    Raises InvalidRequest when the list is empty, a message is malformed, or the
    last message is not a user turn (there is nothing to look up then).
    """
    if not isinstance(messages, (list, tuple)) or not messages:
        raise InvalidRequest("messages must be a non-empty list")
    system_parts: list[str] = []
    turns: list[Turn] = []
    has_tool_calls = False
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, Mapping):
            raise InvalidRequest(f"{where} must be an object")
        role = msg.get("role")
        if not isinstance(role, str) or role not in _KNOWN_ROLES:     # a list role is unhashable
            got = repr(role)[:40] if isinstance(role, str) else type(role).__name__   # repr of a deep list recurses
            raise InvalidRequest(f"{where}.role must be one of {sorted(_KNOWN_ROLES)}, got {got}")
        text = content_text(msg.get("content"), where=where)
        if role in _SYSTEM_ROLES:
            system_parts.append(text)
        elif role in ("tool", "function"):
            # Tool output is context the answer depends on: keep it as an assistant-side turn.
            has_tool_calls = True
            turns.append(Turn("assistant", f"[tool] {text}"))
        else:
            if role == "assistant" and msg.get("tool_calls"):
                has_tool_calls = True
                calls = _dump(msg["tool_calls"], f"{where}.tool_calls", ensure_ascii=False)
                calls = _utf8(calls, f"{where}.tool_calls")
                text = f"{text}\n[tool_calls] {calls}" if text else f"[tool_calls] {calls}"
            turns.append(Turn(role, text))
    if not turns or turns[-1].role != "user":
        raise InvalidRequest("the last message must be a user turn")
    current = turns[-1].text
    if not current.strip():
        raise InvalidRequest("the last user message is empty")
    return Conversation(
        system="\n".join(system_parts),
        turns=tuple(turns),
        current=current,
        raw=tuple(dict(m) for m in messages),
        has_tool_calls=has_tool_calls,
    )
