"""Entries as records: JSON for the fields, raw bytes for the vectors.

Shared by the persistent stores, so an entry written by one backend reads back
identical (tests compare them field by field). Turn vectors are written as
float32 (exact: small pools scan them as they were put). Context vectors are
written as float16 (``context_bytes``: half the bytes, a cosine moves by ~1e-3
at most); ``vector_from`` reads either width, so rows written before are read
as they are.

A store that reads a million rows on open cannot afford to decode each one's
JSON into objects (it is most of the open time), nor to hold them (a
multi-turn entry's signature, answer and context vector are about 3 KB):
``lazy_entry`` makes an entry from the few fields an index needs, and reads the
rest back from the store the first time one of them is asked for.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any, Callable

import numpy as np

from smartcache.errors import StoreError
from smartcache.fingerprint import Signature
from smartcache.store.base import Answer, Entry, EntryId, EntryState, Scope, VersionKeyHash


def _finite(x: float) -> float | None:
    return None if math.isinf(x) else x


def entry_fields(entry: Entry) -> dict[str, Any]:
    return {
        "cache_id": entry.cache_id, "scope": entry.scope.value, "tenant": entry.tenant,
        "session_id": entry.session_id, "version_key": entry.version_key,
        "context_fingerprint": entry.context_fingerprint, "signature": entry.signature.to_json(),
        "prefix_hash": entry.prefix_hash, "conversation_hash": entry.conversation_hash,
        "answer": entry.answer.text, "key_facts": list(entry.answer.key_facts), "state": entry.state.value,
        "created_at": entry.created_at, "expires_at": _finite(entry.expires_at), "domain": entry.domain,
        "hit_count": entry.hit_count, "feedback_score": entry.feedback_score, "last_hit_at": entry.last_hit_at,
        "prompt_tokens": entry.prompt_tokens, "request_key": entry.request_key, "cut_at": entry.cut_at,
        "stop": list(entry.stop), "answer_tokens": entry.answer_tokens, "personal": entry.personal,
    }


def vector_bytes(vector: np.ndarray | None) -> bytes | None:
    return None if vector is None else np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def context_bytes(vector: np.ndarray | None) -> bytes | None:
    """A context vector as float16 bytes (``vector_from`` tells the width by the length)."""
    return None if vector is None else np.ascontiguousarray(vector, dtype=np.float16).tobytes()


def vector_from(blob: bytes | None, dim: int) -> np.ndarray | None:
    """A stored vector as float32, whether it was written as float32 or float16."""
    if blob is None:
        return None
    if len(blob) == 4 * dim:
        return np.frombuffer(blob, dtype=np.float32).copy()
    if len(blob) == 2 * dim:
        return np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    raise ValueError(f"stored vector has {len(blob)} bytes, expected {4 * dim} (float32) or {2 * dim} (float16)")


def entry_from(fields: dict[str, Any], turn: bytes, context: bytes | None, dim: int) -> Entry:
    expires = fields.get("expires_at")
    return Entry(
        cache_id=EntryId(fields["cache_id"]), scope=Scope(fields["scope"]), tenant=fields["tenant"],
        session_id=fields["session_id"], version_key=VersionKeyHash(fields["version_key"]),
        context_fingerprint=fields["context_fingerprint"], signature=Signature.from_json(fields["signature"]),
        turn_vector=vector_from(turn, dim), context_vector=vector_from(context, dim),
        prefix_hash=fields["prefix_hash"], conversation_hash=fields["conversation_hash"],
        answer=Answer(fields["answer"], tuple(fields.get("key_facts", ()))), state=EntryState(fields["state"]),
        created_at=float(fields["created_at"]), expires_at=float("inf") if expires is None else float(expires),
        domain=fields.get("domain", "general"), hit_count=int(fields.get("hit_count", 0)),
        feedback_score=float(fields.get("feedback_score", 1.0)), last_hit_at=float(fields.get("last_hit_at", 0.0)),
        prompt_tokens=int(fields.get("prompt_tokens", 0)), request_key=str(fields.get("request_key") or ""),
        cut_at=int(fields.get("cut_at") or 0), stop=_stops(fields.get("stop")),
        answer_tokens=int(fields.get("answer_tokens") or 0), personal=_personal(fields.get("personal")),
    )


def _personal(value: Any) -> str | None:
    return None if value is None else str(value)


def _stops(value: Any) -> tuple[str, ...]:
    """The stop strings as stored: a JSON list (a string when SQLite's json_extract read it), or
    nothing in rows written before they were kept."""
    if isinstance(value, str):
        value = json.loads(value)
    return tuple(str(s) for s in value or ())


def dumps(fields: dict[str, Any]) -> str:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


# -- lazy entries ------------------------------------------------------------------------

# The JSON paths an index needs at once, in the order ``lazy_entry`` takes them (SQLite's
# json_extract with several paths parses the text once and returns them as one array).
EAGER_PATHS = ("$.scope", "$.version_key", "$.conversation_hash", "$.prefix_hash", "$.domain", "$.hit_count",
               "$.feedback_score", "$.last_hit_at", "$.prompt_tokens", "$.created_at", "$.request_key",
               "$.cut_at", "$.stop", "$.answer_tokens", "$.personal")
_LAZY = ("context_fingerprint", "signature", "answer", "context_vector")
_SCOPES = {s.value: s for s in Scope}
_STATES = {s.value: s for s in EntryState}
_set = object.__setattr__
_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))
_FIELD_SET = frozenset(_FIELDS)
_SLOTS = (*_FIELDS, "_fetch")


# Reads one entry's JSON fields and context vector back (None: the row is gone).
Fetch = Callable[[str], "tuple[bytes, np.ndarray | None] | None"]


class LazyEntry(Entry):
    """An entry whose signature, answer, context vector and context fingerprint stay in the store
    until first read. Copies (``with_changes``: every entry a store hands out) read them for
    themselves, so the stored one stays small however often it is looked at; sweeps over every
    entry (purge, eviction, counts) read only index fields and never touch the file."""

    __slots__ = ("_fetch",)

    def __getattr__(self, name: str) -> Any:   # only reached for a slot not yet set
        if name not in _LAZY:
            raise AttributeError(name)
        fetch = object.__getattribute__(self, "_fetch")
        if fetch is not None:    # None: another thread read it between the lookup and here
            try:
                row = fetch(self.cache_id)
                if row is None:
                    raise StoreError(f"entry {self.cache_id} was removed while it was being read")
                fields = json.loads(row[0])
                signature = Signature.from_json(fields["signature"])
                answer = Answer(fields["answer"], tuple(fields.get("key_facts", ())))
                fingerprint = fields["context_fingerprint"]
            except (ValueError, KeyError, TypeError) as exc:
                raise StoreError(f"entry {self.cache_id} cannot be decoded: {exc}") from exc
            for field_name, value in (("signature", signature), ("answer", answer),
                                      ("context_fingerprint", fingerprint), ("context_vector", row[1])):
                try:
                    object.__getattribute__(self, field_name)     # set by with_changes: it wins
                except AttributeError:
                    _set(self, field_name, value)
            _set(self, "_fetch", None)
        return object.__getattribute__(self, name)

    def with_changes(self, **changes: object) -> "LazyEntry":
        """A copy with ``changes``; what is still in the store stays there (no read)."""
        copy = object.__new__(LazyEntry)
        for name in _SLOTS:
            try:
                _set(copy, name, object.__getattribute__(self, name))
            except AttributeError:      # a lazy field not read yet
                pass
        for name, value in changes.items():
            if name not in _FIELD_SET:
                raise TypeError(f"Entry has no field {name!r}")
            _set(copy, name, value)
        return copy

    def __eq__(self, other: object) -> bool:   # equal to the plain Entry with the same fields
        if not isinstance(other, Entry):
            return NotImplemented
        return all(_same(getattr(self, name), getattr(other, name)) for name in _FIELDS)

    __hash__ = None  # type: ignore[assignment]   # like Entry: holds arrays


def _same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return a == b


def lazy_entry(cache_id: str, tenant: str, session_id: str, state: str, expires_at: float | None, eager: str,
               turn_vector: np.ndarray, fetch: Fetch, strings: dict[str, str]) -> LazyEntry:
    """An entry from a row's columns and its ``EAGER_PATHS`` array; ``strings`` shares equal
    tenant, session, version and domain strings between rows (one object each, not a million)."""
    (scope, version, conversation, prefix, domain, hits, feedback, last_hit, tokens, created, request, cut,
     stop, answer_tokens, personal) = json.loads(eager)
    entry = object.__new__(LazyEntry)
    for name, value in (("cache_id", cache_id), ("scope", _SCOPES[scope]),
                        ("tenant", strings.setdefault(tenant, sys.intern(tenant))),
                        ("session_id", strings.setdefault(session_id, session_id)),
                        ("version_key", strings.setdefault(version, version)),
                        ("turn_vector", turn_vector),
                        ("prefix_hash", prefix), ("conversation_hash", conversation), ("state", _STATES[state]),
                        ("expires_at", float("inf") if expires_at is None else float(expires_at)),
                        ("domain", strings.setdefault(domain or "general", domain or "general")),
                        ("hit_count", int(hits or 0)),
                        ("feedback_score", 1.0 if feedback is None else float(feedback)),
                        ("last_hit_at", float(last_hit or 0.0)), ("prompt_tokens", int(tokens or 0)),
                        ("created_at", float(created)), ("request_key", request or ""), ("cut_at", int(cut or 0)),
                        ("stop", _stops(stop) if stop else ()), ("answer_tokens", int(answer_tokens or 0)),
                        ("personal", _personal(personal)),
                        ("_fetch", fetch)):
        _set(entry, name, value)
    return entry
