"""Schemathesis against the gateway in process (fake engine, real encoder): no 5xx on any
endpoint, an OpenAI-style error body on every 4xx.

Generating these bodies costs about 0.1-0.25 s a request on two shared cores, so the
test sends a few hundred (``SMARTCACHE_FUZZ_REQUESTS`` to change it); ``make fuzz`` runs
the same driver (scripts/fuzz_gateway.py) with 10,000 and prints the figures.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("schemathesis", reason="schemathesis is in requirements.txt")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fuzz_gateway.py"
REQUESTS = int(os.environ.get("SMARTCACHE_FUZZ_REQUESTS", "250"))


def load_driver():
    spec = importlib.util.spec_from_file_location("fuzz_gateway", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def driver():
    return load_driver()


def test_openapi_describes_the_chat_body_and_its_headers(driver, encoder):
    doc = driver.make_app(encoder).openapi()
    op = doc["paths"]["/v1/chat/completions"]["post"]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["required"]) == {"model", "messages"}
    assert schema["properties"]["messages"]["items"]["properties"]["role"]["enum"]
    assert "$defs" not in str(doc), "pydantic's local refs must be inlined"
    assert {p["name"] for p in op["parameters"]} >= {"x-session-id", "cache-control", "x-smartcache-ttl"}


@pytest.mark.parametrize("status, body, why", [
    (200, None, None), (400, {"error": {"message": "m", "type": "t", "param": None, "code": None}}, None),
    (404, {"detail": "Not Found"}, "404 without an OpenAI error body"), (500, {}, "server error 500")])
def test_the_contract_check(driver, status, body, why):
    class Response:
        def json(self):
            return body
    assert driver.problem(status, Response()) == why


@pytest.mark.integration
def test_schemathesis_finds_no_5xx_and_only_openai_errors(driver, encoder):
    report = driver.fuzz(driver.make_app(encoder), requests=REQUESTS, seed=0)
    print("\n" + report.summary())
    assert report.requests >= REQUESTS * 0.9
    assert report.by_operation["POST /v1/chat/completions"] >= REQUESTS // 2
    assert not report.failures, report.summary()
