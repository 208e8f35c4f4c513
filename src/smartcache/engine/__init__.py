"""Engines: the bundled CPU engine with its KV prefix tree, and the upstream client."""

from smartcache.engine.base import (Engine, EngineError, EngineEvent, EngineRequest, Finished, GenerationParams,
                                    TextDelta, Usage)
from smartcache.engine.radix import PrefixMatch, RadixKVCache, RadixStats

__all__ = ["Engine", "EngineError", "EngineEvent", "EngineRequest", "Finished", "GenerationParams", "PrefixMatch",
           "RadixKVCache", "RadixStats", "TextDelta", "Usage"]
