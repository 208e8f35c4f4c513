"""Per-request cache controls, read from headers and body the way gateway users expect.

- session: ``x-session-id``, else the body's ``user``, else ``metadata.session_id``; always
  scoped under the tenant, and signed where the tenant says so (``x-session-signature``);
- tenant: the caller's, as its API key says (``auth.AuthPolicy``); ``x-tenant-id`` may only
  repeat it, unless the gateway trusts the header (behind an authenticating proxy);
- ``cache-control: no-cache`` skips the lookup, ``no-store`` skips the write;
- ``x-smartcache-ttl`` (seconds), ``x-smartcache-namespace`` (a sub-tenant),
  ``x-kb-version`` (part of the version key), ``x-smartcache-regenerate: 1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from smartcache.errors import InvalidRequest
from smartcache.gateway.auth import LOCAL, OPEN, AuthPolicy, Principal, check_name

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


def _name(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    try:
        return check_name(value, what)
    except ValueError as exc:
        raise InvalidRequest(str(exc)) from None


def read_controls(headers: Mapping[str, str], body: Mapping[str, Any], principal: Principal = LOCAL,
                  policy: AuthPolicy = OPEN) -> RequestControls:
    """The controls of one request of ``principal`` (see ``AuthPolicy.authenticate``); raises
    InvalidRequest (400) on a malformed value, PermissionDenied (403) on a tenant, namespace or
    session the caller may not use."""
    metadata = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    session = (_ident(headers.get("x-session-id"), "x-session-id")
               or _ident(body.get("user"), "user")
               or _ident(metadata.get("session_id"), "metadata.session_id"))
    tenant, session = policy.identify(
        principal, tenant=_name(headers.get("x-tenant-id"), "x-tenant-id"),
        namespace=_name(headers.get("x-smartcache-namespace"), "x-smartcache-namespace"),
        session=session, signature=headers.get("x-session-signature"))
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
