"""Engines: the bundled CPU engine with its KV prefix tree, the upstream client, and a fake for tests."""

from smartcache.engine.base import (Engine, EngineError, EngineEvent, EngineRequest, Finished, GenerationParams,
                                    TextDelta, Usage)
from smartcache.engine.fake import FakeEngine
from smartcache.engine.radix import PrefixMatch, RadixKVCache, RadixStats

__all__ = ["Engine", "EngineError", "EngineEvent", "EngineRequest", "FakeEngine", "Finished", "GenerationParams",
           "PrefixMatch", "RadixKVCache", "RadixStats", "TextDelta", "Usage"]
