"""A name is extracted from how it is typed: "in Python" names it, a request that opens with
"Python:" or types "python" does not. Two requests are compared on what they ask, so a name
one side extracted and the other holds in its words, in any case, is no added or dropped
entity (``decide.swaps.aligned_entities``). A name the other request does not hold stays
added or dropped, and a changed name stays a change."""

from __future__ import annotations

import pytest

from smartcache import SmartCache, load_config
from smartcache.decide.swaps import aligned_entities

from conftest import U


@pytest.fixture(scope="module")
def sign(encoder):
    cache = SmartCache(load_config(store={"backend": "memory"}), encoder=encoder)
    return lambda text: cache.fingerprint([U(text)])[0].signature


def _names(keys: set[str]) -> set[str]:
    return {k for k in keys if k.startswith("name:")}


THE_SAME_NAMES = [
    ("How do I reverse a list in Python?", "Python: how can I reverse a list?"),
    ("How do I reverse a list in Python?", "how do you reverse a python list"),
    ("How do I freeze the top row in Excel?", "how do i freeze the header row in excel"),
    ("How can I raise my ATM limit at Wells Fargo?", "how can i raise my atm limit at wells fargo"),
]

OTHER_NAMES = [
    # the name is gone, or another one is asked about
    ("How do I reverse a list in Python?", "How do I reverse a list in Java?", {"name:python"}, {"name:java"}),
    ("How do I reverse a list in Python?", "how do i reverse a list", {"name:python"}, set()),
    # a word that holds the name's letters is not the name
    ("Is Java hard to learn?", "is javascript hard to learn", {"name:java"}, set()),
    ("住在北京王府井附近有什么缺点？", "住王府井附近有哪些不好的地方？", {"name:北京"}, set()),
    # the cached name beside a new one: the request is about the new one (a review's wrong hit)
    ("How do I cancel my Spotify Premium subscription?",
     "how do i cancel my youtube premium subscription, i did spotify premium already",
     {"name:spotify premium"}, set()),
]


@pytest.mark.parametrize("cached,probe", THE_SAME_NAMES)
def test_a_name_typed_otherwise_is_no_change(sign, cached, probe):
    mine, theirs = aligned_entities(sign(probe), sign(cached))
    assert _names(mine) == _names(theirs), (mine, theirs)
    assert _names(mine), "the cached request names something: the check above is not vacuous"


@pytest.mark.parametrize("cached,probe,dropped,added", OTHER_NAMES)
def test_a_name_missing_from_the_other_request_stays_a_change(sign, cached, probe, dropped, added):
    mine, theirs = aligned_entities(sign(probe), sign(cached))
    assert _names(theirs - mine) >= dropped and _names(mine - theirs) >= added, (mine, theirs)
