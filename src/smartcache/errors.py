"""The one exception tree of SmartCache.

    SmartCacheError
    ├── InvalidRequest        the caller's input is malformed (messages, scope, ids)
    ├── ConfigError           a config or thresholds file is wrong
    ├── EncoderError          an encoder failed to load or to encode
    │   └── EncoderUnavailable  an optional encoder's package is not installed
    ├── StoreError            the store failed; callers fail open (serve from the engine)
    ├── EntryNotFound         an admin or feedback call named an unknown entry
    ├── AuthenticationError   no valid credentials (the gateway answers 401)
    └── PermissionDenied      valid credentials, but not for this tenant, namespace or session (403)

Backend errors (onnxruntime, torch, a database) are mapped to these at the
boundary of the part that called them, so callers catch one family.
"""

from __future__ import annotations


class SmartCacheError(Exception):
    """Base class of every error SmartCache raises on purpose."""


class InvalidRequest(SmartCacheError, ValueError):
    """The request (messages, session, tenant, versions, scope) is malformed. ``code`` and
    ``param``, when given, go into the gateway's error body."""

    def __init__(self, message: str, *, code: str | None = None, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.param = param


class ConfigError(SmartCacheError, ValueError):
    """A configuration value or file is invalid."""


class EncoderError(SmartCacheError):
    """An encoder could not be loaded or failed while encoding."""


class EncoderUnavailable(EncoderError, ImportError):
    """An optional encoder's package is not installed; the message says how to get it."""


class StoreError(SmartCacheError):
    """The store failed; the cache fails open on these (lookup becomes a miss)."""


class EntryNotFound(SmartCacheError, KeyError):
    """No entry has the given id."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "entry not found"


class AuthenticationError(SmartCacheError):
    """The caller presented no valid API key or admin token. ``code`` goes into the error body."""

    def __init__(self, message: str, code: str = "invalid_api_key") -> None:
        super().__init__(message)
        self.code = code


class PermissionDenied(SmartCacheError):
    """The caller is known but may not act for what it named (tenant, namespace, session)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code
