"""A first turn has nothing to refer back to (issue 27's context_dependent veto, narrowed at stop
39): its "it" is "is it safe to …" and its "there" "is there a way", so a global FAQ entry may
answer it. A turn after a history that refers back still may not be answered by an entry that
had none."""

from __future__ import annotations

from conftest import A, U
from smartcache.decide import ReasonCode, Zone

FAQ = "Is it safe to take ibuprofen on an empty stomach?"
ANSWER = "It can upset the stomach; take it with food or milk, and ask a pharmacist if you take it often."


def shared(cache, text: str, answer: str) -> None:
    stored = cache.store([U(text)], answer, session="admin")
    cache.promote(stored.cache_id, to_global=True)


def test_a_first_turn_with_a_dummy_it_or_there_is_served_from_the_global_pool(make_cache):
    cache = make_cache()
    shared(cache, FAQ, ANSWER)
    shared(cache, "Is there a way to recover deleted photos on an iPhone?", "Open Albums, then Recently Deleted.")
    for text in (FAQ, "Is it safe to take ibuprofen on an empty stomache?",
                 "is there a way to recover deleted photos on an iphone"):
        found = cache.lookup([U(text)], session="visitor")
        assert found.zone is Zone.HIT, (text, found.reasons)
        assert not found.has_reason(ReasonCode.CONTEXT_DEPENDENT)


def test_a_turn_that_refers_back_is_not_answered_by_a_global_entry_without_a_history(make_cache):
    cache = make_cache()
    shared(cache, "How much does it cost?", "The basic plan costs 9 dollars a month.")
    found = cache.lookup([U("I'm looking at the Kindle Paperwhite."), A("It's a popular e-reader."),
                          U("How much does it cost?")], session="visitor")
    assert found.zone is not Zone.HIT
    assert found.has_reason(ReasonCode.CONTEXT_DEPENDENT)
