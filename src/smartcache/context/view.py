"""ContextView: what the cache looks at in a request, in normalised form.

The current user turn is kept whole (it says what is asked); earlier turns are
compressed to speaker + key points and weighted by recency (they say in which
context it is asked); small talk is dropped because it changes no answer. The
system prompt only contributes its masked tail; its full masked hash goes into
the version key instead.

    >>> from smartcache.context import parse_messages
    >>> view = build_view(parse_messages([
    ...     {"role": "user", "content": "你好"},
    ...     {"role": "assistant", "content": "你好！有什么可以帮您？"},
    ...     {"role": "user", "content": "推荐一家西湖边的酒店"}]))
    >>> view.current, view.history
    ('推荐1家西湖边的酒店', ())
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from smartcache.context.messages import Conversation
from smartcache.context.normalize import mask_template, normalize_text, request_words
from smartcache.context.turns import TurnRecord, is_small_talk, turn_records
from smartcache.defaults import section

# build_view(conv) without settings must see what the cache sees, so the defaults are the config's.
_CONTEXT = section("context")


@dataclass(frozen=True)
class ContextSettings:
    """How much of the history the view keeps; the defaults are the [context] table of data/defaults.toml."""

    max_turns: int = _CONTEXT["max_turns"]                # prior turns kept in full key points
    recency_decay: float = _CONTEXT["recency_decay"]      # weight of a turn one step older
    assistant_weight: float = _CONTEXT["assistant_weight"]  # assistant turns say less about what is asked
    system_tail_chars: int = _CONTEXT["system_tail_chars"]
    user_point_chars: int = _CONTEXT["user_point_chars"]
    assistant_point_chars: int = _CONTEXT["assistant_point_chars"]
    # The rules compare turns with sequence diffs whose cost grows with the square of the
    # length; a longer turn is analysed by its head and tail only, and never served or stored.
    max_turn_chars: int = _CONTEXT["max_turn_chars"]


@dataclass(frozen=True)
class ViewTurn:
    """A prior turn reduced to its key points, with its weight in the context."""

    role: str
    text: str          # lower-cased key points (what is embedded)
    weight: float
    cased: str = ""    # the same key points with case kept (what entities are read from)

    def render(self) -> str:
        return f"{self.role}: {self.text}"


@dataclass(frozen=True)
class ContextView:
    """The normalised, compressed view of one request.

    ``history`` holds the kept prior turns, oldest first; ``history_hash`` is the
    exact (byte-level) hash of everything before the current turn, and
    ``system_hash`` the hash of the masked system prompt.
    """

    current: str
    current_cased: str
    history: tuple[ViewTurn, ...]
    system_tail: str
    first_topic: str
    history_hash: str
    system_hash: str
    prior_turns: int              # all prior turns, small talk and old ones included
    oversized: bool = False       # the current turn was longer than max_turn_chars (clipped)
    records: tuple[TurnRecord, ...] = ()   # every prior turn, for aligning two histories

    @property
    def has_context(self) -> bool:
        return bool(self.history)

    def user_history(self) -> tuple[ViewTurn, ...]:
        return tuple(t for t in self.history if t.role == "user")


_SENTENCE = re.compile(r"(?<=[.!?;])(?![\d.])|\n")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)、]|第\d+[天步点条])\s*")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def _bounded(text: str, limit: int) -> str:
    """Head and tail of a text far longer than any stage reads, so that normalising a pasted
    document costs no more than normalising what is kept of it."""
    return text if len(text) <= 4 * limit else f"{text[:2 * limit]}\n{text[-2 * limit:]}"


def key_points(role: str, text: str, settings: ContextSettings) -> str:
    """Compress one turn: a user turn keeps its first and last sentence when long;
    an assistant turn keeps its first sentence and the heads of its list items."""
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    if not sentences:
        return ""
    if role == "user":
        if len(text) <= settings.user_point_chars or len(sentences) == 1:
            return _clip(text.replace("\n", " "), settings.user_point_chars)
        return _clip(f"{sentences[0]} … {sentences[-1]}", settings.user_point_chars)
    points = [sentences[0]]
    for line in text.split("\n")[1:]:
        if _BULLET.match(line):
            points.append(_clip(_BULLET.sub("", line), 40))
    return _clip(" | ".join(points), settings.assistant_point_chars)


@dataclass(frozen=True)
class RequestKey:
    """What makes two requests one request word for word, read without any model: the
    current turn, normalised and without its punctuation and spacing, after a byte-identical
    history and system prompt. ``digest`` is what the store indexes (the exact path);
    tenant, scope and version key are the store's partition, not part of it."""

    current_cased: str          # the normalised current turn, clipped when oversized
    oversized: bool
    history_hash: str
    masked_system: str          # the normalised system prompt with its volatile parts masked
    system_hash: str
    digest: str

    @property
    def current(self) -> str:
        return self.current_cased.lower()


def read_key(conv: Conversation, settings: ContextSettings | None = None) -> RequestKey:
    """The exact reading of a request: a few normalisations and two hashes, no model."""
    settings = settings or ContextSettings()
    system = conv.system
    masked_system, system_hash = _system(system) if len(system) <= 16384 else _system.__wrapped__(system)
    current_cased = normalize_text(_bounded(conv.current, settings.max_turn_chars), lower=False)
    oversized = len(conv.current) > 4 * settings.max_turn_chars or len(current_cased) > settings.max_turn_chars
    if oversized:
        half = settings.max_turn_chars // 2
        current_cased = f"{current_cased[:half]} … {current_cased[-half:]}"
    history_hash = conv.history_hash()
    digest = hashlib.sha256(f"{history_hash}\x1f{request_words(current_cased.lower())}".encode("utf-8")).hexdigest()[:32]
    return RequestKey(current_cased, oversized, history_hash, masked_system, system_hash, digest)


@functools.lru_cache(maxsize=256)
def _system(system: str) -> tuple[str, str]:
    """The masked, normalised system prompt and its hash: a deployment sends a handful of
    prompts with every request, and normalising one costs as much as the rest of a repeat
    (memoised up to 16,384 characters: 256 of them are 16 MB at the very most)."""
    masked = normalize_text(mask_template(system))
    return masked, hashlib.sha256(masked.encode("utf-8")).hexdigest()


def build_view(conv: Conversation, settings: ContextSettings | None = None, key: RequestKey | None = None
               ) -> ContextView:
    """Build the ContextView of a parsed request (``key``: its ``read_key``, when read already)."""
    settings = settings or ContextSettings()
    key = key or read_key(conv, settings)
    prior = conv.history
    records = turn_records([(t.role, normalize_text(_bounded(t.text, settings.max_turn_chars), lower=False))
                            for t in prior])
    # Small talk, and the assistant's short answer to it, changes no answer: it is left out.
    kept = [(r.role, r.cased) for r in records if not r.chatter]
    recent = kept[-settings.max_turns:] if settings.max_turns > 0 else []
    history = []
    for age, (role, cased) in enumerate(reversed(recent)):
        weight = settings.recency_decay ** age
        if role == "assistant":
            weight *= settings.assistant_weight
        points = key_points(role, cased, settings)
        history.append(ViewTurn(role, points.lower(), round(weight, 6), points))
    history.reverse()
    # The first turn that asks something sets the conversation's topic.
    users = [normalize_text(_bounded(t.text, settings.max_turn_chars)) for t in conv.turns if t.role == "user"]
    first_user = next((u for u in users if not is_small_talk(u)), users[0])
    current_cased = key.current_cased
    return ContextView(
        current=current_cased.lower(),
        current_cased=current_cased,
        history=tuple(history),
        system_tail=key.masked_system[-settings.system_tail_chars:],
        first_topic=key_points("user", first_user, settings),
        history_hash=key.history_hash,
        system_hash=key.system_hash,
        prior_turns=len(prior),
        oversized=key.oversized,
        records=records,
    )
