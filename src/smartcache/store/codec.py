"""Entries as records: JSON for the fields, raw float32 bytes for the vectors.

Shared by the persistent stores, so an entry written by one backend reads back
identical (tests compare them field by field).
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

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


def vector_from(blob: bytes | None, dim: int) -> np.ndarray | None:
    if blob is None:
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    if vector.shape != (dim,):
        raise ValueError(f"stored vector has {vector.size} values, expected {dim}")
    return vector.copy()


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
