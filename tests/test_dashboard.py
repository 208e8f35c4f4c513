"""The dashboard rendered by headless Chromium (Debian's package) against a live gateway."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed "
                                 "(`make test` installs Debian's chromium package; or apt-get install chromium)")]

MODEL = "smollm2-135m-instruct"


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess:
    # The flags keep Chromium off the network: only the page on 127.0.0.1 is fetched.
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900",
           "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def drive_traffic(base: str) -> None:
    h = {"x-session-id": "dash-" + uuid.uuid4().hex[:6]}
    body = {"model": MODEL, "max_tokens": 64, "stop": ["\n", "。"]}
    ask = lambda text: httpx.post(base + "/v1/chat/completions", headers=h, timeout=120,
                                  json={**body, "messages": [{"role": "user", "content": text}]})
    ask("How do I reset my password?")
    time.sleep(1.2)
    assert ask("How can I reset my password").headers["x-smartcache-status"] == "hit"
    ask("How do I uninstall docker on ubuntu?")


def test_dashboard_renders_live_figures_and_decisions(gateway_server, tmp_path):
    drive_traffic(gateway_server)
    url = gateway_server + "/dashboard"
    dom = chromium("--dump-dom", url, profile=tmp_path / "p1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'data-ready="1"' in html, "the page never finished its first refresh"
    assert 'class="decision"' in html and "st-hit" in html and "semantic_match" in html
    assert 'class="bar bar-hit"' in html                   # the timeline drew the hit
    shot = tmp_path / "dashboard.png"
    run = chromium(f"--screenshot={shot}", url, profile=tmp_path / "p2")
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000     # a real, non-blank render
    keep = os.environ.get("SMARTCACHE_SCREENSHOT")
    if keep:
        shutil.copyfile(shot, keep)
