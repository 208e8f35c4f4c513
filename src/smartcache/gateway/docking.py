"""Docking: restore the exact bytes of an answer a client re-sent reformatted.

Clients often re-send an answer with whitespace trimmed or re-wrapped; the lookup would
then see another history, and the engine's prefix cache would miss from that point on.

    dock_history([u("q"), a("Paris  is\\nthe capital."), u("and?")], "Paris is the capital.")
    -> ([u("q"), a("Paris is the capital."), u("and?")], 1)
"""

from __future__ import annotations

import unicodedata
from typing import Any

from smartcache.cache import SmartCache
from smartcache.errors import SmartCacheError

Messages = list[dict[str, Any]]


def _squash(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split())


def dock_history(messages: Messages, answer: str) -> tuple[Messages, int]:
    """Make the assistant turn before the last user turn byte-identical to the cached answer.

    Only a whitespace / width difference is repaired; any other edit is the user's and is
    left alone. Returns the messages (a copy when changed) and how many turns were docked.
    """
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i in range(last_user - 1, -1, -1):
        m = messages[i]
        if m.get("role") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, str) and content != answer and _squash(content) == _squash(answer):
            docked = list(messages)
            docked[i] = {**m, "content": answer}
            return docked, 1
        break
    return messages, 0


def dock_on_session(cache: SmartCache, messages: Messages, tenant: str, session: str | None
                    ) -> tuple[Messages, int]:
    """Dock the history on an answer this session was given (a store call: run it on a worker
    thread). A store fault leaves the messages as they came; the lookup that follows fails open too."""
    if session is None or len(messages) < 3:
        return messages, 0
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    previous = messages[last_user - 1] if last_user > 0 else {}
    content = previous.get("content")
    if previous.get("role") != "assistant" or not isinstance(content, str):
        return messages, 0
    squashed = _squash(content)
    try:
        entries = cache.session_entries(tenant, session)
    except SmartCacheError:
        return messages, 0
    for entry in entries:
        if entry.answer.text != content and _squash(entry.answer.text) == squashed:
            return dock_history(messages, entry.answer.text)
    return messages, 0
