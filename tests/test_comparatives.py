""""Less X" against X's -er form asks for one quality the other way ("make it less spicy" /
"make it spicier"): the `opposite_actions` veto. "More X" against "less X" is the lexicon's
stance pair already; "X-er" against "more X" asks the same. Each example here was written for
this rule. Measured before it became a veto: over 8,788 QQP, GPTCache and LCQMC pairs it fires
on none (scripts/rule_on_pairs.py); over the dev sets and the benchmark, once, on a case
labelled a miss. Known
to over-fire on a comparison put the other way round ("Which is less risky, bonds or stocks?"
/ "Are bonds riskier than stocks?"): a miss, never a wrong answer."""

from __future__ import annotations

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide import Zone
from smartcache.decide.swaps import comparative_reversed

from conftest import U

REVERSED = [
    ("How do I make my chili spicier?", "How do I make my chili less spicy?", ("spicier", "less spicy")),
    ("How can I make the bread softer?", "How can I make the bread less soft?", ("softer", "less soft")),
    ("Make the font bigger on this slide", "Make the font less big on this slide", ("bigger", "less big")),
    ("How do I make the coffee less bitter?", "How do I make the coffee bitterer?", ("less bitter", "bitterer")),
    ("Rewrite this so it sounds less polite.", "Rewrite this so it sounds politer.", ("less polite", "politer")),
]

NOT_REVERSED = [
    ("Make the text more formal", "Make the text less formal"),           # the lexicon's more / less
    ("How do I make my chili spicier?", "How do I make my chili more spicy?"),
    ("How can I make my code run faster?", "How can I make my code faster?"),
    ("Make it less sweet and spicier", "Make it spicier"),
    ("Make it less sweet", "Make it less sweet, please"),
    ("How do I make my room quieter?", "How do I make my room less noisy?"),  # other words: left to the verifier
]


@pytest.mark.parametrize("a,b,pair", REVERSED)
def test_less_x_against_x_er_is_found(a, b, pair):
    assert comparative_reversed(a, b) == pair


@pytest.mark.parametrize("a,b", NOT_REVERSED[1:])
def test_the_same_direction_and_other_words_are_not(a, b):
    assert comparative_reversed(a, b) is None


@pytest.mark.parametrize("side", ["cached", "request"])
def test_the_cache_never_serves_the_other_direction(encoder, side):
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    asked, other = REVERSED[0][:2] if side == "cached" else REVERSED[0][1::-1]
    stored = cache.store([U(asked)], "Add more chili flakes and a pinch of cayenne.", session="s")
    cache.promote(stored.cache_id)
    found = cache.lookup([U(other)], session="s")
    assert found.zone is not Zone.HIT
    assert any(r.code.value == "opposite_actions" for r in found.reasons), found.reasons
