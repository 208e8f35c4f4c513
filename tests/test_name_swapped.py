"""One name put in another's place, the rest of the request word for word, is another request:
the `name_swapped` veto ("北京到成都的高铁" / "北京到西安的高铁"). The verifier served such a
pair at p(same) 0.871 with the swap named as evidence. Each example here was written for this
rule; the figures it was measured on are in ``decide/evidence.py`` (``_name_swapped``)."""

from __future__ import annotations

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide import Zone

from conftest import U

SWAPPED = [
    ("上海迪士尼的门票多少钱？", "香港迪士尼的门票多少钱？"),
    ("从杭州坐高铁去南京要多久？", "从杭州坐高铁去苏州要多久？"),
    ("What's the best month to visit Kyoto?", "What's the best month to visit Osaka?"),
    ("How do I apply for a work visa for Canada?", "How do I apply for a work visa for Australia?"),
]

NOT_SWAPPED = [
    # the same name, the words around it reworded
    ("What's the best month to visit Kyoto?", "When is the best time of year to go to Kyoto?"),
    ("上海迪士尼的门票多少钱？", "上海迪士尼门票要多少钱？"),
    # more than the name changed: left to the other rules and the verifier
    ("What's the best month to visit Kyoto?", "What's the cheapest hotel area in Osaka?"),
]


def lookup(encoder, cached: str, asked: str):
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    stored = cache.store([U(cached)], "ANSWER", session="s")
    cache.promote(stored.cache_id)
    return cache.lookup([U(asked)], session="s")


@pytest.mark.parametrize("cached,asked", SWAPPED)
def test_another_name_in_the_same_words_is_refused(encoder, cached, asked):
    found = lookup(encoder, cached, asked)
    assert found.zone is Zone.MISS
    assert found.reasons[0].code.value == "name_swapped", found.reasons


@pytest.mark.parametrize("cached,asked", NOT_SWAPPED)
def test_the_same_name_reworded_or_a_different_request_is_not_a_swap(encoder, cached, asked):
    found = lookup(encoder, cached, asked)
    assert not any(r.code.value == "name_swapped" for r in found.reasons), found.reasons
