"""Context stage: messages in, a normalised ContextView out. Knows nothing of vectors or storage."""

from smartcache.context.messages import Conversation, Turn, canonical_hash, parse_messages
from smartcache.context.normalize import mask_template, normalize_text, request_words, words_only
from smartcache.context.numerals import convert_numerals, zh_to_int
from smartcache.context.turns import TurnRecord, turn_records
from smartcache.context.view import (ContextSettings, ContextView, RequestKey, ViewTurn, build_view, is_small_talk,
                                     read_key)

__all__ = [
    "Conversation", "Turn", "canonical_hash", "parse_messages",
    "mask_template", "normalize_text", "words_only", "request_words", "RequestKey", "read_key", "convert_numerals", "zh_to_int",
    "ContextSettings", "ContextView", "ViewTurn", "build_view", "is_small_talk", "TurnRecord", "turn_records",
]
