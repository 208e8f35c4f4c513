"""The gateway's own settings (the cache's live in ``CacheConfig``; the CLI fills both)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GatewaySettings:
    cache_enabled: bool = True
    shadow_rate: float = 0.0              # share of ordinary hits verified in the background
    regenerate_window_s: float = 60.0     # an identical request within this counts as regenerate
    default_max_tokens: int = 256
    recent_decisions: int = 200
    timeline_bucket_s: float = 10.0
    timeline_buckets: int = 360
    replay_chunk_chars: int = 8           # a replayed hit streams in pieces of this many characters
    max_body_bytes: int = 8 * 2**20       # a larger request body is refused with 413
    max_messages: int = 1000              # ... more messages, or a longer one, with 400
    max_message_chars: int = 400_000
    workers: int = 1                      # gateway processes sharing the store (serve --workers)
