"""Entries as records: JSON for the fields, raw bytes for the vectors.

Shared by the persistent stores, so an entry written by one backend reads back
identical (tests compare them field by field). Turn vectors are written as
float32 (exact: small pools scan them as they were put). Context vectors are
written as float16 (``context_bytes``: half the bytes, a cosine moves by ~1e-3
at most); ``vector_from`` reads either width, so rows written before are read
as they are.

A store that reads a million rows on open cannot afford to decode each one's
JSON into objects (it is most of the open time): ``lazy_entry`` makes an entry
from the few fields an index needs, and decodes the rest (signature, answer)
the first time one of them is read.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

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
        "prompt_tokens": entry.prompt_tokens,
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
        prompt_tokens=int(fields.get("prompt_tokens", 0)),
    )


def dumps(fields: dict[str, Any]) -> str:
    return json.dumps(fields, ensure_ascii=False, separators=(",", ":"))


# -- lazy entries ------------------------------------------------------------------------

# The JSON paths an index needs at once, in the order ``lazy_entry`` takes them (SQLite's
# json_extract with several paths parses the text once and returns them as one array).
EAGER_PATHS = ("$.scope", "$.version_key", "$.conversation_hash", "$.prefix_hash", "$.domain", "$.hit_count",
               "$.feedback_score", "$.last_hit_at", "$.prompt_tokens")
_LAZY = frozenset({"context_fingerprint", "signature", "answer", "created_at"})
_SCOPES = {s.value: s for s in Scope}
_STATES = {s.value: s for s in EntryState}
_set = object.__setattr__
_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))


class LazyEntry(Entry):
    """An entry whose signature, answer, context fingerprint and creation time stay as the row's
    JSON bytes until first read. The JSON of a multi-turn entry is about half the memory of its
    decoded objects, and reading a million of them on open costs no decode at all."""

    __slots__ = ("_raw",)

    def __getattr__(self, name: str) -> Any:   # only reached for a slot not yet set
        if name not in _LAZY:
            raise AttributeError(name)
        raw = object.__getattribute__(self, "_raw")
        if raw is not None:    # None: another thread decoded it between the lookup and here
            try:
                fields = json.loads(raw)
                signature = Signature.from_json(fields["signature"])
                answer = Answer(fields["answer"], tuple(fields.get("key_facts", ())))
                created = float(fields["created_at"])
                fingerprint = fields["context_fingerprint"]
            except (ValueError, KeyError, TypeError) as exc:
                raise StoreError(f"entry {self.cache_id} cannot be decoded: {exc}") from exc
            _set(self, "signature", signature)
            _set(self, "answer", answer)
            _set(self, "created_at", created)
            _set(self, "context_fingerprint", fingerprint)
            _set(self, "_raw", None)
        return object.__getattribute__(self, name)

    def with_changes(self, **changes: object) -> Entry:
        """A plain (decoded) Entry: it compares equal to the entry that was put."""
        values = {name: getattr(self, name) for name in _FIELDS}
        values.update(changes)
        return Entry(**values)


def lazy_entry(cache_id: str, tenant: str, session_id: str, state: str, expires_at: float | None, eager: str,
               raw: bytes, turn_vector: np.ndarray, context_vector: np.ndarray | None,
               strings: dict[str, str]) -> LazyEntry:
    """An entry from a row's columns and its ``EAGER_PATHS`` array; ``strings`` shares equal
    tenant, session, version and domain strings between rows (one object each, not a million)."""
    scope, version, conversation, prefix, domain, hits, feedback, last_hit, tokens = json.loads(eager)
    entry = object.__new__(LazyEntry)
    for name, value in (("cache_id", cache_id), ("scope", _SCOPES[scope]),
                        ("tenant", strings.setdefault(tenant, sys.intern(tenant))),
                        ("session_id", strings.setdefault(session_id, session_id)),
                        ("version_key", strings.setdefault(version, version)),
                        ("turn_vector", turn_vector), ("context_vector", context_vector),
                        ("prefix_hash", prefix), ("conversation_hash", conversation), ("state", _STATES[state]),
                        ("expires_at", float("inf") if expires_at is None else float(expires_at)),
                        ("domain", strings.setdefault(domain or "general", domain or "general")),
                        ("hit_count", int(hits or 0)),
                        ("feedback_score", 1.0 if feedback is None else float(feedback)),
                        ("last_hit_at", float(last_hit or 0.0)), ("prompt_tokens", int(tokens or 0)),
                        ("_raw", raw)):
        _set(entry, name, value)
    return entry
