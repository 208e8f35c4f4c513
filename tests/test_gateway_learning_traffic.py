"""Issue 28's gateway test: 20 questions (10 en, 10 zh), each asked in 10 rewordings, mixed
with 10 near-miss questions each, 400 requests from 40 users of one tenant, no ``scope`` on
any of them, through the gateway on a scripted engine (a rewording gets its question's
answer, a near miss its own). The cache's own policy decides what is shared.

Bars: no near miss is served, and at least half of the rewordings after the first 100 requests
are hits. Neither is met (1 of 200 near misses served, 17 of 151 rewordings): their tests are
expected failures, strict, so that meeting them is noticed. What must hold, and does: no
rewording is served another question's answer. The data
(``tests/data/rewordings_20x10.json``) was written for this test, by a helper that saw no
other set, before the cache was run on it."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from conftest import CONTEXT_LENGTH, MODEL, U, _app_factory, chat

DATA = Path(__file__).parent / "data" / "rewordings_20x10.json"
USERS = 40
WARM_UP = 100       # requests before the rewordings are counted
REWORDINGS_SERVED = 0.5


def _traffic() -> tuple[list[tuple[str, str, bool]], dict[str, str]]:
    """The 400 requests in a seeded order, (text, user, is a rewording), and each text's answer."""
    questions = json.loads(DATA.read_text(encoding="utf-8"))["questions"]
    answer_of: dict[str, str] = {}
    requests = []
    for i, q in enumerate(questions):
        for text in q["rewordings"]:
            answer_of[text] = f"The answer to question {i}: {q['rewordings'][0]}"
            requests.append((text, True))
        for j, text in enumerate(q["near_misses"]):
            answer_of[text] = f"The answer to near miss {i}.{j}: {text}"
            requests.append((text, False))
    rng = random.Random(28)
    rng.shuffle(requests)
    return [(text, f"user-{rng.randrange(USERS)}", rewording) for text, rewording in requests], answer_of


@pytest.fixture(scope="module")
def outcomes(encoder):
    """Every request's status and whether the answer it got was its own."""
    from smartcache.engine import FakeEngine

    engine = FakeEngine(model_id=MODEL, context_length=CONTEXT_LENGTH)
    requests, answer_of = _traffic()
    engine.answer_for = lambda request: answer_of[request.messages[-1]["content"]]
    results = []
    with _app_factory(engine, encoder)() as client:
        cache = client.app.state.service.cache
        for text, user, rewording in requests:
            response = chat(client, [U(text)], session=user)
            assert response.status_code == 200, response.text
            status = response.headers["x-smartcache-status"]
            got = response.json()["choices"][0]["message"]["content"]
            results.append({"text": text, "rewording": rewording, "status": status,
                            "own_answer": got == answer_of[text]})
            cache.tick()            # the promotion window (0 s here) has passed
    return results


@pytest.mark.integration
def test_every_hit_is_its_own_questions_answer_but_the_near_misses(outcomes):
    wrong = [r["text"] for r in outcomes if r["status"] == "hit" and not r["own_answer"] and r["rewording"]]
    assert not wrong, wrong
    assert sum(r["status"] == "hit" for r in outcomes) >= 10      # the cache serves: the check above is not vacuous


@pytest.mark.integration
@pytest.mark.xfail(strict=True, reason="issue 28: 'How do I take a scrolling screenshot on Windows 11?' is served "
                                       "the answer to '… a screenshot …' (p(same) 0.789 at the point 0.780); a "
                                       "word inserted as the only edit is labelled the same question in 422 of "
                                       "656 public pairs, so no rule refuses it")
def test_no_near_miss_is_served(outcomes):
    served = [r["text"] for r in outcomes if not r["rewording"] and r["status"] == "hit"]
    assert not served, f"{len(served)} of {sum(not r['rewording'] for r in outcomes)} near misses served: {served}"


@pytest.mark.integration
@pytest.mark.xfail(strict=True, reason="issue 28: the learned point does not reach rewordings the verifier "
                                       "refuses; the figure is in the assertion's message")
def test_half_the_rewordings_after_the_first_100_requests_are_hits(outcomes):
    later = [r for r in outcomes[WARM_UP:] if r["rewording"]]
    hits = sum(r["status"] == "hit" for r in later)
    assert hits >= REWORDINGS_SERVED * len(later), f"{hits} of {len(later)} rewordings served after {WARM_UP}"
