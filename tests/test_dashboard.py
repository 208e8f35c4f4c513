"""The dashboard rendered by headless Chromium (Debian's package) against a live gateway.

Open admin API: the page as ``--dump-dom`` leaves it. Behind the admin token: the page
driven over the DevTools protocol (``tests/cdp.py``) as a person would use it: it asks
for the token, says so when a wrong one is typed, and with the right one draws every
plot, keeping the token in the tab's sessionStorage and sending it only as a header.
``SMARTCACHE_SCREENSHOT=docs/dashboard.png`` keeps that page's screenshot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from cdp import FLAGS, Browser
from conftest import free_port, serve, wait_until_served

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                 "(`make test` installs Debian's chromium package; or apt-get install chromium)")]

MODEL = "smollm2-135m-instruct"
ADMIN = "dash-admin-7c41d9e2b05f"
KEYS = {"acme": "sk-dash-acme-1", "globex": "sk-dash-globex-1"}
# Elements each plot draws only from data: a zone's bar, a latency point, a saved-tokens
# bar and its share, a tenant's hit bar.
PLOTTED = {"timeline": "#timeline .bar-hit", "latency p50": "#latency .pt-p50", "latency p99": "#latency .pt-p99",
           "saved tokens": "#saved .bar-saved", "saved share": "#saved .pt-share", "tenant zones": "#tenants .tbar-hit"}


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--window-size=1280,900",
           "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def drive_traffic(base: str, headers: dict[str, str] | None = None) -> None:
    """A miss, its paraphrase served as a hit after the promotion window, another miss."""
    h = {"x-session-id": "dash-" + uuid.uuid4().hex[:6], **(headers or {})}
    body = {"model": MODEL, "max_tokens": 64, "stop": ["\n", "。"]}
    ask = lambda text: httpx.post(base + "/v1/chat/completions", headers=h, timeout=120,
                                  json={**body, "messages": [{"role": "user", "content": text}]})
    assert ask("How do I reset my password?").status_code == 200
    wait_until_served(base, h["x-session-id"])
    # A paraphrase the verifier serves ("How can I …" is near-exact: another form of the question).
    assert ask("How would I reset my password?").headers["x-smartcache-status"] == "hit"
    assert ask("How do I uninstall docker on ubuntu?").status_code == 200


def test_dashboard_renders_live_figures_and_decisions(gateway_server, tmp_path):
    drive_traffic(gateway_server)
    dom = chromium("--dump-dom", gateway_server + "/dashboard", profile=tmp_path / "p1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-ready="1"' in html and 'data-auth="open"' in html, "the page never finished its first refresh"
    assert 'class="decision"' in html and "st-hit" in html and "semantic_match" in html
    for name, selector in PLOTTED.items():
        kind = selector.split(" .")[1]                      # "pt-p50" is drawn as class="pt pt-p50"
        assert f'class="{kind.split("-")[0]} {kind}"' in html, f"the {name} plot drew nothing"


@pytest.fixture
def guarded_gateway(gateway_server, tmp_path):
    """``smartcache serve`` with two tenants' keys and the admin token in its environment, in
    upstream mode in front of ``gateway_server`` (its engine, without loading a second one)."""
    keys = tmp_path / "keys.toml"
    keys.write_text("".join(f'[[keys]]\nkey = "{key}"\ntenant = "{tenant}"\n\n' for tenant, key in KEYS.items()))
    with serve("--store", "memory", "--keys", str(keys), "--upstream", gateway_server + "/v1",
               "--upstream-model", MODEL, "--tokenizer", "smollm2",
               env={"SMARTCACHE_ADMIN_TOKEN": ADMIN}) as base:
        yield base


def test_dashboard_behind_the_admin_token(guarded_gateway, tmp_path):
    base = guarded_gateway
    for key in KEYS.values():
        drive_traffic(base, {"authorization": f"Bearer {key}"})
    assert httpx.get(base + "/admin/stats").status_code == 401
    with Browser(CHROMIUM, tmp_path / "profile", size=(1280, 1000)) as browser:
        page = browser.open(base + "/dashboard")
        assert page.wait_for("document.body.dataset.auth") == "needed"
        assert page.evaluate("document.getElementById('auth').hidden") is False
        assert page.evaluate("document.body.dataset.ready") is None            # no data without the token

        page.type_into("#token", "not-" + ADMIN)
        page.click("#auth-form button")
        assert page.wait_for("document.body.dataset.auth === 'refused' && document.body.dataset.auth")
        message = page.evaluate("document.getElementById('auth-message').textContent")
        assert "refused" in message and "invalid_admin_token" in message
        assert page.evaluate("sessionStorage.length") == 0                      # the wrong token is not kept

        page.type_into("#token", ADMIN)
        page.click("#auth-form button")
        page.wait_for("document.body.dataset.ready === '1'")
        assert page.evaluate("document.body.dataset.auth") == "token"
        for name, selector in PLOTTED.items():
            assert page.wait_for(f"document.querySelectorAll({selector!r}).length"), f"the {name} plot drew nothing"
        tenants = page.evaluate("[...document.querySelectorAll('#tenants .tenant')].map(t => t.textContent)")
        assert sorted(tenants) == ["acme", "globex"]
        assert page.evaluate("sessionStorage.getItem('smartcache.admin-token')") == ADMIN
        assert page.evaluate("localStorage.length") == 0

        # A reload of the tab keeps the token (sessionStorage) and asks for nothing.
        page.navigate(base + "/dashboard")
        page.wait_for("document.body.dataset.ready === '1'")
        assert page.evaluate("document.body.dataset.auth") == "token"

        sent = page.requests()
        admin_calls = [r for r in sent if "/admin/" in r["url"]]
        assert any(r["headers"].get("Authorization") == f"Bearer {ADMIN}" for r in admin_calls)
        assert all(ADMIN not in r["url"] for r in sent), "the token went into a URL"
        assert ADMIN not in page.evaluate("location.href")

        shot = page.screenshot(tmp_path / "dashboard.png")
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 20_000     # a real, non-blank render
    keep = os.environ.get("SMARTCACHE_SCREENSHOT")
    if keep:
        shutil.copyfile(tmp_path / "dashboard.png", keep)


def test_dashboard_says_when_no_token_can_open_the_admin_api(tmp_path):
    """API keys and no admin token: /admin is closed to everyone, so the page says how to
    start serve instead of asking for a token that does not exist."""
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[[keys]]\nkey = "{KEYS["acme"]}"\ntenant = "acme"\n')
    with serve("--store", "memory", "--keys", str(keys), "--upstream", f"http://127.0.0.1:{free_port()}/v1") as base:
        with Browser(CHROMIUM, tmp_path / "profile") as browser:
            page = browser.open(base + "/dashboard")
            assert page.wait_for("document.body.dataset.auth") == "closed"
            assert page.evaluate("document.getElementById('auth-form').hidden") is True
            assert "SMARTCACHE_ADMIN_TOKEN" in page.evaluate("document.getElementById('auth-message').textContent")
