"""Tenants from credentials at the HTTP edge: 401 / 403 bodies, spoofed tenants, signed sessions,
the admin token and its log (in process, on the FakeEngine; the resolver itself and the
isolation property are in test_auth.py)."""

from __future__ import annotations

import logging

import pytest

from conftest import chat
from smartcache.gateway import AuthPolicy, KeyRegistry, sign_session

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
ASK = [SYSTEM, {"role": "user", "content": "How do I reset my password?"}]
PARAPHRASE = [SYSTEM, {"role": "user", "content": "How can I reset my password"}]
AGAIN = [SYSTEM, {"role": "user", "content": "How do I reset my password"}]   # a repeat would be a regenerate
SECRET = "acme-signs-its-sessions-0123"
ADMIN = "admin-token-of-its-own"


def make_registry(*, signed: bool = False) -> KeyRegistry:
    data = {"keys": [{"key": "sk-acme", "tenant": "acme", "namespaces": ["support"]},
                     {"key": "sk-globex", "tenant": "globex"}]}
    if signed:
        data["tenants"] = {"acme": {"session_secret": SECRET}}
    return KeyRegistry.from_mapping(data)


def key(name: str, **extra: str) -> dict[str, str]:
    return {"authorization": f"Bearer sk-{name}", **extra}


def status(response) -> str:
    return response.headers.get("x-smartcache-status", str(response.status_code))


@pytest.fixture
def keyed(gateway):
    with gateway(auth=AuthPolicy(make_registry()), admin_token=ADMIN) as client:
        yield client


def assert_openai_error(response, code: int, error_code: str) -> None:
    assert response.status_code == code, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["message"] and error["type"] == "invalid_request_error" and error["code"] == error_code


@pytest.mark.parametrize("call", [
    lambda c: chat(c, ASK),
    lambda c: chat(c, ASK, headers={"authorization": "Bearer sk-wrong"}),
    lambda c: chat(c, ASK, headers={"authorization": f"Bearer {ADMIN}"}),
    lambda c: c.get("/v1/models"),
    lambda c: c.post("/v1/smartcache/feedback", json={"entry": "e", "kind": "negative"}),
], ids=["no-key", "wrong-key", "admin-token-as-key", "models", "feedback"])
def test_401_without_a_valid_key(keyed, call):
    response = call(keyed)
    assert_openai_error(response, 401, "invalid_api_key")
    assert response.headers["www-authenticate"] == "Bearer"


def test_spoofed_tenant_header_gets_403_and_never_anothers_answer(keyed):
    assert status(chat(keyed, ASK, session="alice", headers=key("acme"))) == "miss"
    assert status(chat(keyed, PARAPHRASE, session="alice", headers=key("acme"))) == "hit"
    spoofed = chat(keyed, PARAPHRASE, session="alice", headers=key("globex", **{"x-tenant-id": "acme"}))
    assert_openai_error(spoofed, 403, "tenant_not_allowed")
    # Without the header, globex's key reads its own tenant, where alice has asked nothing.
    own = chat(keyed, PARAPHRASE, session="alice", headers=key("globex"))
    assert status(own) == "miss"
    # Naming its own tenant is allowed.
    assert status(chat(keyed, AGAIN, session="alice", headers=key("acme", **{"x-tenant-id": "acme"}))) == "hit"


def test_namespaces_outside_the_keys_allowance_get_403(keyed):
    assert status(chat(keyed, ASK, headers=key("acme", **{"x-smartcache-namespace": "support"}))) == "miss"
    for who, namespace in (("acme", "billing"), ("globex", "support")):
        denied = chat(keyed, ASK, headers=key(who, **{"x-smartcache-namespace": namespace}))
        assert_openai_error(denied, 403, "namespace_not_allowed")
    entries = keyed.get("/admin/entries", headers={"authorization": f"Bearer {ADMIN}"}).json()["data"]
    assert {e["tenant"] for e in entries} == {"acme/support"}


def test_without_keys_the_tenant_header_is_refused_unless_trusted(gateway):
    with gateway() as client:
        assert status(chat(client, ASK)) == "miss"
        denied = chat(client, PARAPHRASE, headers={"x-tenant-id": "acme"})
        assert_openai_error(denied, 403, "tenant_not_allowed")
        feedback = client.post("/v1/smartcache/feedback", json={"entry": "e", "kind": "negative"},
                               headers={"x-tenant-id": "acme"})
        assert_openai_error(feedback, 403, "tenant_not_allowed")
        # Any API key is the same local tenant: the answer is shared, as the README says.
        assert status(chat(client, PARAPHRASE, headers={"authorization": "Bearer sk-anyone"})) == "hit"


def test_a_guessed_session_in_signed_mode_reads_nothing(gateway):
    with gateway(auth=AuthPolicy(make_registry(signed=True))) as client:
        signed = key("acme", **{"x-session-signature": sign_session(SECRET, "alice")})
        assert status(chat(client, ASK, session="alice", headers=signed)) == "miss"
        assert status(chat(client, PARAPHRASE, session="alice", headers=signed)) == "hit"
        for signature in (None, "0" * 64, sign_session(SECRET, "bob"), sign_session("not-acmes-secret-000", "alice")):
            extra = {"x-session-signature": signature} if signature else {}
            guessed = chat(client, PARAPHRASE, session="alice", headers=key("acme", **extra))
            assert_openai_error(guessed, 403, "invalid_session_signature")
        # The body's user is a session id like any other: signed too.
        by_user = chat(client, PARAPHRASE, session=None, user="alice", headers=key("acme"))
        assert_openai_error(by_user, 403, "invalid_session_signature")
        assert status(chat(client, AGAIN, session=None, user="alice", headers=signed)) == "hit"


def test_admin_needs_its_own_token_and_logs_the_tenant(keyed, caplog):
    chat(keyed, ASK, session="alice", headers=key("acme"))
    for headers in ({}, key("acme"), key("globex"), {"authorization": "Bearer wrong"}):
        denied = keyed.get("/admin/entries", headers=headers)
        assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_admin_token"
    admin = {"authorization": f"Bearer {ADMIN}"}
    with caplog.at_level(logging.INFO, logger="smartcache.admin"):
        listed = keyed.get("/admin/entries?tenant=acme", headers=admin).json()
        entry = listed["data"][0]["id"]
        assert keyed.get(f"/admin/entries/{entry}", headers=admin).status_code == 200
        invalidated = keyed.post("/admin/sessions/alice/invalidate?tenant=acme", headers=admin).json()
    assert listed["total"] == 1 and invalidated["invalidated"] == 1
    lines = [r.getMessage() for r in caplog.records if r.name == "smartcache.admin"]
    assert lines == ["admin list_entries tenant=acme", f"admin inspect tenant=acme entry={entry}",
                     "admin invalidate_session tenant=acme session=alice"]


def test_with_keys_and_no_admin_token_the_admin_api_is_closed(gateway):
    with gateway(auth=AuthPolicy(make_registry())) as client:
        for headers in ({}, key("acme")):
            response = client.get("/admin/stats", headers=headers)
            assert response.status_code == 401 and response.json()["error"]["code"] == "admin_api_closed"


def test_beyond_loopback_without_a_token_the_admin_api_is_closed(gateway):
    # `serve --host 0.0.0.0` without --admin-token builds the app this way.
    with gateway(close_admin=True) as client:
        response = client.get("/admin/stats")
        assert response.status_code == 401 and response.json()["error"]["code"] == "admin_api_closed"
    with gateway(close_admin=True, admin_token=ADMIN) as client:
        assert client.get("/admin/stats").status_code == 401
        assert client.get("/admin/stats", headers={"authorization": f"Bearer {ADMIN}"}).status_code == 200


def test_a_tenant_cannot_write_into_the_global_pool(keyed):
    # Whatever a client sends, its answers are session-scoped; only /admin promotes to the global pool.
    headers = key("acme", **{"x-session-id": "alice", "x-smartcache-scope": "global"})
    assert chat(keyed, ASK, session=None, headers=headers, metadata={"scope": "global"}).status_code == 200
    admin = {"authorization": f"Bearer {ADMIN}"}
    entries = keyed.get("/admin/entries?tenant=acme", headers=admin).json()["data"]
    assert entries and {e["scope"] for e in entries} == {"session"}
    other = chat(keyed, PARAPHRASE, session=None, headers=key("acme", **{"x-session-id": "bob"}))
    assert status(other) != "hit"
    keyed.post(f"/admin/entries/{entries[0]['id']}/promote", json={"to_global": True}, headers=admin)
    after = chat(keyed, PARAPHRASE, session=None, headers=key("acme", **{"x-session-id": "carol"}))
    assert status(after) == "hit", after.headers


def test_a_tenant_key_cannot_be_the_admin_token(gateway):
    from smartcache.errors import ConfigError
    with pytest.raises(ConfigError, match="admin token"):
        gateway(auth=AuthPolicy(make_registry()), admin_token="sk-acme")
