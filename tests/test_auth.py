"""Tenants from credentials: the keys file, the resolver (controls -> tenant, namespace, signed
session), and the isolation property over the real store scoping. No engine, no HTTP: these
run in seconds (the HTTP side is in test_gateway_auth.py)."""

from __future__ import annotations

import hashlib
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from smartcache import SmartCache, load_config
from smartcache.errors import AuthenticationError, ConfigError, InvalidRequest, PermissionDenied
from smartcache.gateway import AuthPolicy, KeyRegistry, read_controls, sign_session
from smartcache.gateway.auth import LOCAL
from smartcache.store import MemoryStore, Scope, SearchFilter

SECRET = "initech-session-secret-0123456789"
KEYS = {   # API key -> (tenant, namespaces)
    "sk-acme-1": ("acme", []),
    "sk-acme-support": ("acme", ["support"]),
    "sk-globex": ("globex", ["*"]),
    "sk-initech": ("initech", ["support"]),
}


def make_keys_toml(keys=KEYS, *, secrets={"initech": SECRET}, hashed=True) -> str:
    rows = []
    for key, (tenant, namespaces) in keys.items():
        stored = "sha256:" + hashlib.sha256(key.encode()).hexdigest() if hashed else key
        rows.append(f'[[keys]]\nkey = "{stored}"\ntenant = "{tenant}"\nnamespaces = {namespaces!r}\n'
                    f'alias = "{key}-alias"\n'.replace("'", '"'))
    rows += [f'[tenants.{t}]\nsession_secret = "{s}"\n' for t, s in secrets.items()]
    return "\n".join(rows)


def make_registry(**kw) -> KeyRegistry:
    import tomllib
    return KeyRegistry.from_mapping(tomllib.loads(make_keys_toml(**kw)))


def make_policy(*, trust=False, **kw) -> AuthPolicy:
    return AuthPolicy(make_registry(**kw), trust_tenant_header=trust)


def headers_for(key=None, *, tenant=None, namespace=None, session=None, signature=None) -> dict[str, str]:
    h = {"authorization": f"Bearer {key}"} if key else {}
    for name, value in (("x-tenant-id", tenant), ("x-smartcache-namespace", namespace),
                        ("x-session-id", session), ("x-session-signature", signature)):
        if value is not None:
            h[name] = value
    return h


def resolve(policy: AuthPolicy, headers: dict[str, str], body: dict | None = None):
    return read_controls(headers, body or {}, policy.authenticate(headers), policy)


# -- the keys file ----------------------------------------------------------------------------

def test_keys_file_loads_hashed_and_plain_keys(tmp_path):
    for hashed in (True, False):
        path = tmp_path / f"keys-{hashed}.toml"
        path.write_text(make_keys_toml(hashed=hashed))
        registry = KeyRegistry.load(path)
        assert registry.lookup("sk-acme-1").tenant == "acme"
        assert registry.lookup("sk-globex").namespaces == frozenset({"*"})
        assert registry.lookup("sk-acme-support").alias == "sk-acme-support-alias"
        assert registry.lookup("sk-nobody") is None
        assert registry.secrets == {"initech": SECRET.encode()}
        assert registry.tenants == {"acme", "globex", "initech"}
        # Only hashes are kept, whatever the file held.
        assert all(len(k) == 64 for k in registry.keys)


def test_uppercase_hex_is_accepted():
    digest = hashlib.sha256(b"sk-x").hexdigest().upper()
    registry = KeyRegistry.from_mapping({"keys": [{"key": f"sha256:{digest}", "tenant": "t"}]})
    assert registry.lookup("sk-x").tenant == "t"


@pytest.mark.parametrize("text, match", [
    ("", "at least one key"),
    ('[[keys]]\nkey = "k"\n', "needs key and tenant"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\nmodels = []\n', "takes only"),
    ('[[keys]]\nkey = "sha256:abc"\ntenant = "t"\n', "64 hex digits"),
    ('[[keys]]\nkey = "k"\ntenant = "a/b"\n', "without '/'"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\nnamespaces = ["x/y"]\n', "without '/'"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\nnamespaces = "x"\n', "list of names"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\n[[keys]]\nkey = "k"\ntenant = "u"\n', "repeats"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\n[tenants.typo]\nsession_secret = "0123456789abcdefg"\n', "no key maps"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\n[tenants.t]\nsession_secret = "short"\n', "at least 16"),
    ('[[keys]]\nkey = "k"\ntenant = "t"\n[tenants.t]\nsecret = "0123456789abcdefg"\n', "only session_secret"),
    ('[users]\nx = 1\n', "unknown tables"),
    ("not toml [", "not valid TOML"),
], ids=["empty", "no-tenant", "unknown-field", "short-hash", "slash-tenant", "slash-namespace",
        "namespaces-not-list", "duplicate", "secret-for-unknown-tenant", "short-secret", "unknown-tenant-field",
        "unknown-table", "bad-toml"])
def test_bad_keys_file_is_a_config_error(tmp_path, text, match):
    path = tmp_path / "keys.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=match):
        KeyRegistry.load(path)


def test_missing_keys_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        KeyRegistry.load(tmp_path / "absent.toml")


# -- authentication and the tenant ------------------------------------------------------------

def test_without_keys_every_client_is_the_local_tenant():
    policy = AuthPolicy()
    for headers in ({}, headers_for("sk-anything"), headers_for("sk-acme-1")):
        assert resolve(policy, headers).tenant == "default"
    assert resolve(policy, headers_for(tenant="default")).tenant == "default"
    assert resolve(policy, headers_for(namespace="team")).tenant == "default/team"
    with pytest.raises(PermissionDenied) as denied:
        resolve(policy, headers_for(tenant="acme"))
    assert denied.value.code == "tenant_not_allowed"


@pytest.mark.parametrize("headers", [{}, headers_for("sk-wrong"), {"authorization": "sk-acme-1"},
                                     {"authorization": "Basic sk-acme-1"}, headers_for(" ")],
                         ids=["none", "wrong", "no-scheme", "basic", "blank"])
def test_keys_configured_refuse_a_request_without_a_valid_key(headers):
    with pytest.raises(AuthenticationError) as refused:
        make_policy().authenticate(headers)
    assert refused.value.code == "invalid_api_key"


@pytest.mark.parametrize("trust, key, claimed, namespace, expect", [
    (False, "sk-acme-1", None, None, "acme"),
    (False, "sk-acme-1", "acme", None, "acme"),
    (False, "sk-acme-1", "globex", None, "tenant_not_allowed"),
    (False, "sk-acme-1", "default", None, "tenant_not_allowed"),
    (False, "sk-acme-1", None, "support", "namespace_not_allowed"),
    (False, "sk-acme-support", None, "support", "acme/support"),
    (False, "sk-acme-support", None, "billing", "namespace_not_allowed"),
    (False, "sk-globex", None, "anything", "globex/anything"),
    (False, "sk-globex", "acme", "support", "tenant_not_allowed"),
    (True, "sk-acme-1", "globex", None, "globex"),
    (True, "sk-acme-1", None, None, "acme"),
    (True, "sk-acme-1", "globex", "support", "namespace_not_allowed"),
    (True, "sk-globex", "acme", "support", "acme/support"),
], ids=["own", "own-named", "spoofed", "spoofed-default", "ns-not-listed", "ns-listed", "ns-other", "ns-any",
        "spoofed-with-ns", "trusted", "trusted-no-header", "trusted-ns-not-listed", "trusted-ns-any"])
def test_the_tenant_comes_from_the_key(trust, key, claimed, namespace, expect):
    policy = make_policy(trust=trust)
    headers = headers_for(key, tenant=claimed, namespace=namespace)
    if expect.endswith("_allowed"):
        with pytest.raises(PermissionDenied) as denied:
            resolve(policy, headers)
        assert denied.value.code == expect
    else:
        assert resolve(policy, headers).tenant == expect


def test_trusted_header_without_keys_names_any_tenant():
    policy = AuthPolicy(trust_tenant_header=True)
    assert resolve(policy, headers_for(tenant="acme")).tenant == "acme"
    assert resolve(policy, {}).tenant == "default"
    with pytest.raises(InvalidRequest, match="without '/'"):    # 'a/b' would be tenant a, namespace b
        resolve(policy, headers_for(tenant="acme/support"))


# -- signed sessions --------------------------------------------------------------------------

@pytest.mark.parametrize("signature, ok", [
    (sign_session(SECRET, "alice"), True),
    (sign_session(SECRET, "alice").upper(), True),
    (None, False),
    ("", False),
    (sign_session(SECRET, "bob"), False),
    (sign_session("another-tenants-secret-xyz", "alice"), False),
    ("0" * 64, False),
    ("é" * 64, False),
], ids=["valid", "valid-upper", "unsigned", "empty", "other-session", "other-secret", "zeros", "non-ascii"])
def test_signed_sessions(signature, ok):
    policy = make_policy()
    headers = headers_for("sk-initech", session="alice", signature=signature)
    if ok:
        assert resolve(policy, headers).session == "alice"
    else:
        with pytest.raises(PermissionDenied) as denied:
            resolve(policy, headers)
        assert denied.value.code == "invalid_session_signature"


def test_signing_covers_every_session_source_and_only_signed_tenants():
    policy = make_policy()
    key = "sk-initech"
    for body in ({"user": "alice@example.com"}, {"metadata": {"session_id": "alice@example.com"}}):
        with pytest.raises(PermissionDenied):
            resolve(policy, headers_for(key), body)
        signed = headers_for(key, signature=sign_session(SECRET, "alice@example.com"))
        assert resolve(policy, signed, body).session == "alice@example.com"
    assert resolve(policy, headers_for(key)).session is None        # no session: the global pool only
    assert resolve(policy, headers_for("sk-acme-1", session="alice")).session == "alice"   # acme signs nothing
    # The secret is the tenant's, so a namespace of it needs the same signature.
    signed = headers_for(key, namespace="support", session="alice", signature=sign_session(SECRET, "alice"))
    assert resolve(policy, signed).tenant == "initech/support"


@pytest.mark.integration
@settings(max_examples=400, deadline=None)
@given(key=st.sampled_from(sorted(KEYS)), claimed=st.one_of(st.none(), st.sampled_from(["acme", "globex", "initech",
                                                                                       "default"]), st.text()),
       namespace=st.one_of(st.none(), st.sampled_from(["support", "hr", "*"]), st.text()),
       session=st.one_of(st.none(), st.text(max_size=20)), signature=st.one_of(st.none(), st.text(max_size=70)))
def test_an_untrusted_resolver_never_leaves_the_keys_tenant(key, claimed, namespace, session, signature):
    headers = {"authorization": f"Bearer {key}"}
    for name, value in (("x-tenant-id", claimed), ("x-smartcache-namespace", namespace), ("x-session-id", session),
                        ("x-session-signature", signature)):
        if value is not None:
            headers[name] = value
    policy = make_policy()
    try:
        controls = resolve(policy, headers)
    except (PermissionDenied, InvalidRequest):
        return
    tenant, allowed = KEYS[key]
    root, _, ns = controls.tenant.partition("/")
    assert root == tenant
    assert not ns or ns in allowed or "*" in allowed
    if tenant == "initech" and controls.session is not None:
        assert signature is not None and signature.lower() == sign_session(SECRET, controls.session)


# -- the isolation property: authenticated tenants over the real store scoping ----------------

class HashEncoder:
    """Deterministic vectors from a text's hash: identical texts meet at cosine 1, anything
    else near 0. Every entry below asks the same question, so only scoping keeps them apart."""

    name = "hash-test"
    dim = 32

    def encode(self, texts):
        rows = [np.random.default_rng(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little"))
                .standard_normal(self.dim) for t in texts]
        out = np.asarray(rows, dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)


QUESTION = [{"role": "user", "content": "How do I reset my password?"}]
TENANTS = ("acme", "globex", "initech")
SCOPES = ("", "/support", "/hr")
SESSIONS = ("alice", "bob", "s1", "alice@example.com")
WRONG_KEYS = ("", "sk-wrong", "sk-acme", "sk-acme-1x")


def make_isolation_cache() -> SmartCache:
    """Every tenant (root and two namespaces) answers QUESTION in each session and in its global pool;
    each answer names where it lives."""
    config = load_config(lifecycle={"promotion_window_s": 0.0},
                         thresholds={HashEncoder.name: {"default": {"hit": 0.8, "half_hit": 0.45, "context": 0.8}}})
    cache = SmartCache(config, encoder=HashEncoder(), store=MemoryStore(HashEncoder.dim))
    for tenant in TENANTS:
        for scope in SCOPES:
            for session in SESSIONS:
                stored = cache.store(QUESTION, f"{tenant}{scope}|{session}", session=session, tenant=tenant + scope)
                cache.promote(stored.cache_id)
            stored = cache.store(QUESTION, f"{tenant}{scope}|global", session="seed", tenant=tenant + scope,
                                 scope="global")
            cache.promote(stored.cache_id)
    return cache


def make_probe(rng: random.Random) -> tuple[dict[str, str], str | None]:
    """One request as a caller might craft it: its own, a wrong or no key; any tenant, namespace and
    session it likes; a signature that is missing, made up, another session's or another secret's,
    or (as the application would send it) right. Returns the headers and the key used."""
    key = rng.choice(sorted(KEYS) * 3 + list(WRONG_KEYS))
    session = rng.choice(SESSIONS + (None,))
    signature = None
    if session is not None:
        signature = rng.choice([None, "0" * 64, sign_session(SECRET, rng.choice(SESSIONS)),
                                sign_session("globex-has-no-secret-1234", session), sign_session(SECRET, session)])
    headers = headers_for(key or None, tenant=rng.choice((None,) + TENANTS + ("default",)),
                          namespace=rng.choice((None, None, "support", "hr", "ops")), session=session,
                          signature=signature)
    return headers, (key if key in KEYS else None)


def probe_store(cache: SmartCache, policy: AuthPolicy, probes: int, seed: int, *, full_every: int = 0):
    """Send ``probes`` crafted requests through the resolver and the store; count what leaked.

    A leak is an entry returned to a caller whose key's tenant is not the entry's (cross-tenant),
    a session-scoped entry of another session than the request's (cross-session), one from a
    namespace its key does not allow, or from a signed tenant's session the request did not sign. The store is searched as SmartCache.lookup searches it; every ``full_every``-th resolved
    probe also runs the whole lookup (context, fingerprint, decide) and checks the answer it serves."""
    rng = random.Random(seed)
    vector = cache.encoder.encode([QUESTION[0]["content"]])[0]
    version = cache.fingerprint(QUESTION)[1].digest()
    counts = {"probes": 0, "refused_401": 0, "refused_403": 0, "served": 0, "cross_tenant": 0,
              "cross_session": 0, "namespace": 0, "unsigned_session": 0, "full_lookups": 0, "full_hits": 0}
    for _ in range(probes):
        headers, key = make_probe(rng)
        counts["probes"] += 1
        try:
            controls = resolve(policy, headers)
        except AuthenticationError:
            counts["refused_401"] += 1
            continue
        except PermissionDenied:
            counts["refused_403"] += 1
            continue
        flt = SearchFilter(tenant=controls.tenant, version_key=version, session_id=controls.session, now=time.time())
        found = [e for e, _ in cache.backend.search(flt, vector, 8)]
        if full_every and (counts["probes"] - counts["refused_401"] - counts["refused_403"]) % full_every == 0:
            decision = cache.lookup(QUESTION, session=controls.session, tenant=controls.tenant)
            counts["full_lookups"] += 1
            counts["full_hits"] += decision.entry is not None
            found += [decision.entry] if decision.entry is not None else []
        counts["served"] += bool(found)
        tenant, allowed = KEYS[key] if key else ("default", ["*"])
        for entry in found:
            root, _, ns = entry.tenant.partition("/")
            counts["cross_tenant"] += root != tenant
            # A session-scoped answer reaches only the session (as the gateway scoped it) that wrote it.
            counts["cross_session"] += entry.scope is Scope.SESSION and entry.session_id != controls.session
            counts["namespace"] += bool(ns) and ns not in allowed and "*" not in allowed
            counts["unsigned_session"] += (root == "initech" and entry.scope is Scope.SESSION and headers.get(
                "x-session-signature") != sign_session(SECRET, entry.session_id))
    return counts


@pytest.mark.integration
def test_isolation_property_with_authenticated_tenants():
    cache = make_isolation_cache()
    started = time.perf_counter()
    counts = probe_store(cache, make_policy(), 100_000, seed=13, full_every=8)
    print(f"\nisolation: {counts} in {time.perf_counter() - started:.1f} s")
    assert counts["probes"] >= 100_000 and counts["full_lookups"] >= 2_000
    # The probes do reach answers (of their own tenant), through the store and the whole lookup.
    assert counts["served"] > 10_000 and counts["full_hits"] > 1_000
    assert counts["cross_tenant"] == counts["cross_session"] == counts["namespace"] == 0, counts
    assert counts["unsigned_session"] == 0, counts


def test_the_isolation_probe_fails_when_the_header_is_trusted_as_the_old_gateway_did():
    # Before tenants came from keys, x-tenant-id was honoured whatever the key: the same probes
    # then read other tenants' answers. This is what the property above would catch.
    counts = probe_store(make_isolation_cache(), make_policy(trust=True), 2_000, seed=13)
    assert counts["cross_tenant"] > 100, counts


def test_local_principal_is_one_tenant():
    assert LOCAL.tenant == "default" and LOCAL.allows("anything") and not LOCAL.authenticated
