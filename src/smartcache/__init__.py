"""SmartCache: a context-aware semantic cache for multi-turn LLM inference.

The pipeline, one package per stage: context -> fingerprint -> store -> decide
-> lifecycle; ``SmartCache`` ties them together. See README.md.
"""

from smartcache.cache import CacheStats, SmartCache, StoreResult
from smartcache.config import CacheConfig, LifecycleConfig, load_config
from smartcache.decide import Decision, Reason, ReasonCode, Scores, Zone
from smartcache.errors import (
    AuthenticationError, ConfigError, EncoderError, EncoderUnavailable, EntryNotFound, InvalidRequest,
    PermissionDenied, SmartCacheError, StoreError,
)
from smartcache.lookup import CacheRequest, Lookup
from smartcache.store import EntryState, Scope, VersionKey

__all__ = [
    "SmartCache", "CacheStats", "StoreResult", "CacheRequest", "Lookup", "CacheConfig", "LifecycleConfig",
    "load_config", "Decision", "Reason", "ReasonCode", "Scores", "Zone", "ConfigError", "EncoderError", "EncoderUnavailable", "EntryNotFound",
    "InvalidRequest", "SmartCacheError", "StoreError", "AuthenticationError", "PermissionDenied", "EntryState",
    "Scope", "VersionKey",
]
__version__ = "0.1.0"
