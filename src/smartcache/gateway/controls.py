"""Per-request cache controls, read from headers and body the way gateway users expect.

- session: ``x-session-id``, else the body's ``user``, else ``metadata.session_id``;
- tenant: ``x-tenant-id``, else a hash of the API key (the key itself is never kept);
- ``cache-control: no-cache`` skips the lookup, ``no-store`` skips the write;
- ``x-smartcache-ttl`` (seconds), ``x-smartcache-namespace`` (a sub-tenant),
  ``x-kb-version`` (part of the version key), ``x-smartcache-regenerate: 1``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Mapping

from smartcache.errors import InvalidRequest

_MAX_ID = 256


@dataclass(frozen=True)
class RequestControls:
    tenant: str
    session: str | None
    no_cache: bool = False
    no_store: bool = False
    ttl: float | None = None
    kb_version: str = ""
    regenerate: bool = False


def _ident(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > _MAX_ID or any(ord(c) < 32 for c in value):
        raise InvalidRequest(f"{what} must be a printable string of at most {_MAX_ID} characters")
    return value


def read_controls(headers: Mapping[str, str], body: Mapping[str, Any]) -> RequestControls:
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    session = (_ident(headers.get("x-session-id"), "x-session-id")
               or _ident(body.get("user"), "user")
               or _ident(metadata.get("session_id"), "metadata.session_id"))
    tenant = _ident(headers.get("x-tenant-id"), "x-tenant-id")
    if tenant is None:
        auth = headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        tenant = "key-" + hashlib.sha256(key.encode()).hexdigest()[:16] if key else "default"
    namespace = _ident(headers.get("x-smartcache-namespace"), "x-smartcache-namespace")
    if namespace:
        tenant = f"{tenant}/{namespace}"
    directives = {d.strip().lower() for d in headers.get("cache-control", "").split(",") if d.strip()}
    ttl = None
    if headers.get("x-smartcache-ttl"):
        try:
            ttl = float(headers["x-smartcache-ttl"])
        except ValueError:
            raise InvalidRequest("x-smartcache-ttl must be a number of seconds") from None
        if not ttl > 0 or ttl == float("inf"):
            raise InvalidRequest("x-smartcache-ttl must be a positive, finite number of seconds")
    kb = _ident(headers.get("x-kb-version"), "x-kb-version") or ""
    regenerate = headers.get("x-smartcache-regenerate", "").strip().lower() in ("1", "true", "yes")
    return RequestControls(tenant=tenant, session=session, no_cache="no-cache" in directives,
                           no_store="no-store" in directives, ttl=ttl, kb_version=kb, regenerate=regenerate)
