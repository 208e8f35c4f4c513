"""Fingerprint stage: coarse tags (zh + en rules), dense vectors from a real encoder, prefix hash."""

from smartcache.fingerprint.encoders import (
    E5Encoder, Encoder, MemoEncoder, MiniLMEncoder, UseOnnxEncoder, encoder_names, make_encoder, shared_encoder,
)
from smartcache.fingerprint.entities import Entity, extract_entities
from smartcache.fingerprint.fingerprint import Fingerprint, Fingerprinter, Signature
from smartcache.fingerprint.resolve import resolve_references
from smartcache.fingerprint.tags import (
    HIGH_RISK_DOMAINS, ChangeFlag, action_sides, actions_conflict, change_flags, has_reference, intent_domain,
    is_time_sensitive, negation_count, skeletons_conflict, task_actions, task_skeleton,
)

__all__ = [
    "E5Encoder", "Encoder", "MemoEncoder", "MiniLMEncoder", "UseOnnxEncoder", "encoder_names", "make_encoder",
    "shared_encoder", "Entity", "extract_entities", "Fingerprint", "Fingerprinter", "Signature",
    "resolve_references", "HIGH_RISK_DOMAINS", "ChangeFlag", "action_sides", "actions_conflict", "change_flags",
    "intent_domain",
    "has_reference", "is_time_sensitive", "negation_count", "skeletons_conflict", "task_actions", "task_skeleton",
]
