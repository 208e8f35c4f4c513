"""The first thing a new user tries: a question, then plain rewordings of it, with a system
prompt, in one session, through the gateway. Rewordings are hits; a question that changes
what is asked stays a miss. The rewordings were written for this test before it was run."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from smartcache import SmartCache, load_config
from smartcache.engine import FakeEngine
from smartcache.gateway import create_app

SYSTEM = "You are a helpful assistant. Keep answers short."

CASES = {
    "en": ("What is the capital of France? Answer in one sentence.", [
        "What is the capital city of France? Answer in one sentence.",
        "What's the capital of France? Reply in one sentence.",
        "Which city is the capital of France? Answer in one sentence.",
        "Tell me the capital of France, in one sentence.",
        "In one sentence: what is France's capital?",
        "What city serves as the capital of France? One sentence, please.",
        "Can you tell me what the capital of France is? Answer in a single sentence.",
        "Name the capital of France in one sentence.",
        "what is the capital of france? answer in one sentence",
        "France's capital city: what is it? Please answer in one sentence.",
    ], [
        "What is the capital of Spain? Answer in one sentence.",
        "What is the largest city in France? Answer in one sentence.",
        "What is the capital of France? Answer in three paragraphs.",
        "What was the capital of France in the year 1000? Answer in one sentence.",
    ]),
    "zh": ("法国的首都是哪里？请用一句话回答。", [
        "法国首都是哪个城市？请用一句话回答。",
        "法国的首都在哪儿？一句话回答。",
        "请问法国的首都是哪里？用一句话回答。",
        "法国的首都是什么城市？请用一句话说明。",
        "用一句话告诉我法国的首都是哪里。",
        "法国首都是哪里？请一句话回答我。",
        "哪座城市是法国的首都？请用一句话回答。",
        "你知道法国的首都是哪里吗？用一句话回答。",
        "法国的首都叫什么？请用一句话回答。",
        "告诉我法国的首都，用一句话。",
    ], [
        "西班牙的首都是哪里？请用一句话回答。",
        "法国最大的城市是哪里？请用一句话回答。",
        "法国的首都是哪里？请写三段话详细介绍。",
        "一千年前法国的首都是哪里？请用一句话回答。",
    ]),
}


def ask(client: TestClient, text: str) -> str:
    r = client.post("/v1/chat/completions", headers={"x-session-id": "newcomer"},
                    json={"model": "fake-engine", "messages": [{"role": "system", "content": SYSTEM},
                                                               {"role": "user", "content": text}]})
    assert r.status_code == 200, r.text
    return r.headers["x-smartcache-status"]


def gateway(encoder) -> TestClient:
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}), encoder=encoder)
    return TestClient(create_app(cache, FakeEngine(), close_engine=False))


@pytest.mark.parametrize("lang", sorted(CASES))
def test_a_question_that_changes_what_is_asked_is_a_miss(encoder, lang):
    first, _, changed = CASES[lang]
    with gateway(encoder) as client:
        assert ask(client, first) == "miss"
        wrong = [t for t in changed if ask(client, t) == "hit"]
    assert not wrong, f"served a cached answer to a different question: {wrong}"


# Measured with the packaged verifier: 2 of 10 English and 3 of 10 Chinese rewordings are
# served (a cross-encoder trained here did not do better and was removed). Strict: once the
# default serves them, the marker must go.
@pytest.mark.xfail(strict=True, reason="issues 19 and 28: the packaged verifier refuses plain rewordings")
@pytest.mark.parametrize("lang", sorted(CASES))
def test_plain_rewordings_with_a_system_prompt_are_hits(encoder, lang):
    first, rewordings, _ = CASES[lang]
    with gateway(encoder) as client:
        assert ask(client, first) == "miss"
        outcomes = {t: ask(client, t) for t in rewordings}
    hits = [t for t, status in outcomes.items() if status == "hit"]
    assert len(hits) >= 9, f"{len(hits)} of 10 rewordings served; missed: {[t for t in rewordings if t not in hits]}"
