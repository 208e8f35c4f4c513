"""Two more near-duplicates whose answers differ, with the rewordings that must not be taken for
them; every example written for these rules before they were run.

- A long unbroken string replaced by another: a DNA sequence, base64, a URL, a hash. Every
  vector reads two long sequences after one instruction as the same request.
- A word with a "+" or "#" glued to it for the word without: C++ / C, Disney+ / Disney.
"""

from __future__ import annotations

import pytest

from smartcache.context import normalize_text
from smartcache.decide.swaps import payload_replaced

DNA_A = "ATGCGTACGTTAGCCGATAGCTAGCTAGGCTAACGTTGCA"
DNA_B = "TTGACCGATGCAAGTCCGATCGATTACGGACTTGCAAGTC"

PAYLOAD_REPLACED = [
    (f"What is the reverse complement of {DNA_A}?", f"What is the reverse complement of {DNA_B}?"),
    ("Decode this base64: SGVsbG8gd29ybGQsIGhvdyBhcmUgeW91Pw==", "Decode this base64: R29vZGJ5ZSB3b3JsZCwgc2VlIHlvdSBzb29u"),
    ("Summarise https://example.com/blog/2024/cache-design-notes",
     "Summarise https://example.com/blog/2024/queue-design-notes"),
    ("这个哈希是什么算法生成的：5d41402abc4b2a76b9719d911017c592", "这个哈希是什么算法生成的：7d793037a0760186574b0282f2f435e7"),
]

PAYLOAD_KEPT = [
    (f"What's the reverse complement of {DNA_A}?", f"Give me the reverse complement of {DNA_A}"),
    ("How do I compute a reverse complement?", f"What is the reverse complement of {DNA_A}?"),
    ("What is a state-of-the-art cache design?", "Which cache designs are state-of-the-art?"),
    ("How do I decode base64 in Python?", "How can I decode base64 with Python?"),
    ("Summarise https://example.com/blog/2024/cache-design-notes.",
     "Please summarise https://example.com/blog/2024/cache-design-notes"),
]


@pytest.mark.parametrize("a,b", PAYLOAD_REPLACED)
def test_a_long_string_replaced_by_another_is_found(a, b):
    assert payload_replaced(normalize_text(a), normalize_text(b)) is not None


@pytest.mark.parametrize("a,b", PAYLOAD_KEPT)
def test_the_same_string_reworded_around_it_or_on_one_side_only_is_not(a, b):
    assert payload_replaced(normalize_text(a), normalize_text(b)) is None


@pytest.fixture(scope="module")
def lookup(one_pair):
    return one_pair


@pytest.mark.integration
def test_two_long_sequences_after_one_instruction_are_two_requests(lookup):
    """Found by a review: two random 1,400-letter sequences were a hit (p(same) 0.849)."""
    import random
    rng = random.Random(7)
    first, second = ("".join(rng.choice("ACGT") for _ in range(1400)) for _ in range(2))
    prefix = "What is the reverse complement of this DNA sequence: "
    found = lookup(prefix + first, prefix + second)
    assert found.zone.value == "miss"
    assert any(r.code.value == "payload_changed" for r in found.reasons), found.reasons


@pytest.mark.integration
@pytest.mark.parametrize("cached,probe", [("How do I learn C fast?", "How do I learn C++ fast?"),
                                          ("Is Disney worth it?", "Is Disney+ worth it?"),
                                          ("C或Java哪个适合初学者？", "C#或Java哪个适合初学者？")])
def test_a_word_with_a_plus_or_hash_glued_is_another_name(lookup, cached, probe):
    found = lookup(cached, probe)
    assert found.zone.value == "miss", found.reasons
    assert any(r.code.value == "name_swapped" for r in found.reasons), found.reasons
