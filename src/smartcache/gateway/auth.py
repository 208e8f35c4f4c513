"""Who is calling: API keys mapped to tenants, the tenant a request may act for, signed sessions.

    no keys          every client is the one local tenant ``default``; Authorization is not read
    keys             ``Authorization: Bearer <key>`` must be a listed key (else 401); the tenant is
                     the key's, and ``x-tenant-id`` may only repeat it (else 403)
    trusted header   (``--trust-tenant-header``, behind a proxy that authenticates) ``x-tenant-id``
                     names the tenant; with keys, the key must still be valid
    signed sessions  a tenant with a ``session_secret`` accepts a session id only with
                     ``x-session-signature: hex(HMAC-SHA256(secret, session id))`` (else 403)

The keys file (TOML), after LiteLLM's virtual keys and Portkey's workspaces:

    [[keys]]
    key = "sha256:<hex of sha256(the API key)>"   # or the key itself; hashes are preferred
    tenant = "acme"
    namespaces = ["support"]     # x-smartcache-namespace values it may send; ["*"]: any; default none
    alias = "acme-support-bot"   # a name for logs

    [tenants.acme]
    session_secret = "…"         # optional: acme's session ids must be signed
"""

from __future__ import annotations

import hashlib
import hmac
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from smartcache.errors import AuthenticationError, ConfigError, PermissionDenied

ANY = "*"
_HEX = re.compile(r"[0-9a-f]{64}")
_MIN_SECRET = 16
_KEY_FIELDS = {"key", "tenant", "namespaces", "alias"}


@dataclass(frozen=True)
class Principal:
    """The caller as its credentials say: its tenant and the namespaces it may name."""

    tenant: str
    namespaces: frozenset[str] = frozenset()
    alias: str | None = None
    authenticated: bool = False

    def allows(self, namespace: str) -> bool:
        return ANY in self.namespaces or namespace in self.namespaces


# Without keys every client is this one: the local tenant, any namespace.
LOCAL = Principal("default", frozenset({ANY}))


class Identity(NamedTuple):
    """What a request reads and writes: the tenant (``tenant/namespace``) and the session in it."""

    tenant: str
    session: str | None


def sign_session(secret: str | bytes, session: str) -> str:
    """The ``x-session-signature`` an application sends with ``session``: hex HMAC-SHA256."""
    key = secret.encode() if isinstance(secret, str) else secret
    return hmac.new(key, session.encode(), hashlib.sha256).hexdigest()


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def check_name(value: Any, what: str) -> str:
    """A tenant or namespace name: printable, at most 128 characters, and without '/', which
    joins them (a tenant 'a/b' would otherwise share the cache of tenant 'a', namespace 'b')."""
    if (not isinstance(value, str) or not value or len(value) > 128 or "/" in value
            or any(ord(c) < 32 for c in value)):
        raise ValueError(f"{what} must be a printable string of 1-128 characters without '/'")
    return value


@dataclass(frozen=True)
class KeyRegistry:
    """API keys (by their sha256) and per-tenant session secrets, as the keys file lists them."""

    keys: Mapping[str, Principal]                       # sha256 hex of a key -> who holds it
    secrets: Mapping[str, bytes] = field(default_factory=dict)   # tenant -> session secret

    def lookup(self, key: str) -> Principal | None:
        # Only hashes are kept, so the dict lookup leaks nothing useful about a key's bytes.
        return self.keys.get(key_hash(key))

    @property
    def tenants(self) -> frozenset[str]:
        return frozenset(p.tenant for p in self.keys.values())

    @classmethod
    def load(cls, path: str | Path) -> "KeyRegistry":
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read keys file {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"keys file {path} is not valid TOML: {exc}") from exc
        return cls.from_mapping(data, source=str(path))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str = "keys") -> "KeyRegistry":
        unknown = set(data) - {"keys", "tenants"}
        if unknown:
            raise ConfigError(f"{source}: unknown tables {sorted(unknown)} (expected [[keys]] and [tenants.NAME])")
        rows = data.get("keys", [])
        if not isinstance(rows, list) or not rows:
            raise ConfigError(f"{source}: list at least one key as [[keys]] with key and tenant")
        keys: dict[str, Principal] = {}
        for i, row in enumerate(rows):
            digest, principal = _key_row(row, f"{source}: keys[{i}]")
            if digest in keys:
                raise ConfigError(f"{source}: keys[{i}] repeats an earlier key")
            keys[digest] = principal
        tenants = {p.tenant for p in keys.values()}
        secrets: dict[str, bytes] = {}
        for name, table in dict(data.get("tenants", {})).items():
            where = f"{source}: [tenants.{name}]"
            # A typo here would silently leave a tenant's sessions unsigned.
            if name not in tenants:
                raise ConfigError(f"{where} names a tenant no key maps to")
            if not isinstance(table, dict) or set(table) - {"session_secret"}:
                raise ConfigError(f"{where} takes only session_secret")
            secret = table.get("session_secret")
            if secret is None:
                continue
            if not isinstance(secret, str) or len(secret) < _MIN_SECRET:
                raise ConfigError(f"{where}: session_secret must be a string of at least {_MIN_SECRET} characters")
            secrets[name] = secret.encode()
        return cls(keys, secrets)


def _key_row(row: Any, where: str) -> tuple[str, Principal]:
    if not isinstance(row, dict):
        raise ConfigError(f"{where} must be a table")
    if set(row) - _KEY_FIELDS or not {"key", "tenant"} <= set(row):
        raise ConfigError(f"{where} needs key and tenant, and takes only {sorted(_KEY_FIELDS)}")
    key, namespaces = row["key"], row.get("namespaces", [])
    if not isinstance(key, str) or not key:
        raise ConfigError(f"{where}: key must be a non-empty string")
    if key.startswith("sha256:"):
        digest = key[7:].lower()
        if not _HEX.fullmatch(digest):
            raise ConfigError(f"{where}: sha256: must be followed by 64 hex digits")
    else:
        digest = key_hash(key)
    if not isinstance(namespaces, list):
        raise ConfigError(f"{where}: namespaces must be a list of names")
    try:
        tenant = check_name(row["tenant"], "tenant")
        allowed = frozenset(n if n == ANY else check_name(n, "a namespace") for n in namespaces)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    alias = row.get("alias")
    if alias is not None and not isinstance(alias, str):
        raise ConfigError(f"{where}: alias must be a string")
    return digest, Principal(tenant, allowed, alias, authenticated=True)


def bearer(headers: Mapping[str, str]) -> str:
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else ""


@dataclass(frozen=True)
class AuthPolicy:
    """How the gateway tells callers apart. The default (no keys, header not trusted) is the
    embedded one: every client is the local tenant."""

    registry: KeyRegistry | None = None
    trust_tenant_header: bool = False

    @property
    def keys_required(self) -> bool:
        return self.registry is not None

    def check_admin_token(self, token: str | None) -> None:
        """Raise ConfigError when the admin token is also a tenant's key: it must open /admin only."""
        if token is not None and self.registry is not None and self.registry.lookup(token) is not None:
            raise ConfigError("the admin token is also a tenant's API key; give the admin API a token of its own")

    def authenticate(self, headers: Mapping[str, str]) -> Principal:
        """The caller's principal; raises AuthenticationError (401) when keys are configured and
        the request carries none of them."""
        if self.registry is None:
            return LOCAL
        key = bearer(headers)
        if not key:
            raise AuthenticationError("this gateway needs an API key: send Authorization: Bearer <key>")
        principal = self.registry.lookup(key)
        if principal is None:
            raise AuthenticationError("the API key is not valid for this gateway")
        return principal

    def identify(self, principal: Principal, *, tenant: str | None, namespace: str | None,
                 session: str | None, signature: str | None) -> Identity:
        """Where a request of ``principal`` may read and write, from what it claims (the
        x-tenant-id and namespace headers, its session id and signature); raises PermissionDenied."""
        root = principal.tenant
        if tenant is not None and tenant != root:
            if not self.trust_tenant_header:
                raise PermissionDenied(f"x-tenant-id names a tenant other than this caller's ('{root}')",
                                       "tenant_not_allowed")
            root = tenant
        if namespace is not None and not principal.allows(namespace):
            raise PermissionDenied(f"this API key may not use the namespace '{namespace}'", "namespace_not_allowed")
        secret = self.registry.secrets.get(root) if self.registry is not None else None
        if secret is not None and session is not None:
            expected = sign_session(secret, session).encode()
            given = (signature or "").strip().lower().encode()
            if not hmac.compare_digest(expected, given):
                raise PermissionDenied("this tenant's session ids must carry a valid x-session-signature",
                                       "invalid_session_signature")
        return Identity(f"{root}/{namespace}" if namespace else root, session)


OPEN = AuthPolicy()
