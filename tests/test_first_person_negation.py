""""I won't" is "I will not": the user's own intent negated (issue 27: "asking my landlord to
renew my lease" served "telling my landlord I won't be renewing"). A thing that won't work is a
complaint, not a negation. "I won't be able to" is "I will not be able to", the opposite of "I
will be able to"."""

from __future__ import annotations

import pytest

from conftest import U
from smartcache.decide import Zone
from smartcache.fingerprint.tags import negation_count


@pytest.mark.parametrize("text, count", [
    ("we won't be attending the wedding", 1),
    ("i wont renew the contract", 1),
    ("i will not renew the contract", 1),
    ("my laptop won't turn on", 0),
    ("the app won't start after the update", 0),
    ("i won't be able to attend the meeting", 1),
    ("i will not be able to attend the meeting", 1),
])
def test_a_first_person_won_t_is_a_negation(text, count):
    assert negation_count(text) == count


def test_a_reversed_intent_with_won_t_is_a_miss_and_the_same_intent_still_hits(make_cache):
    cache = make_cache()
    stored = cache.store([U("We'll be attending the wedding, write a short reply to the invitation")],
                         "Dear Anna, we are delighted to accept and look forward to celebrating with you.",
                         session="s")
    cache.promote(stored.cache_id)
    assert cache.lookup([U("We won't be attending the wedding, write a short reply to the invitation")],
                        session="s").zone is not Zone.HIT
    declined = cache.store([U("I won't be able to attend the meeting, write a polite note")],
                           "Hi team, I am sorry I cannot make the meeting; I will read the notes afterwards.",
                           session="t")
    cache.promote(declined.cache_id)
    assert cache.lookup([U("I won't be able to attend the meeting, write a polite note!")],
                        session="t").zone is Zone.HIT
    assert cache.lookup([U("I will be able to attend the meeting, write a polite note")],
                        session="t").zone is not Zone.HIT
