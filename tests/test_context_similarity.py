"""Context similarity on vectors the stores keep in float16.

The verifier was trained on float32 context vectors and splits at 1 - 1.2e-7 to tell
"the same context" from any other. A stored float16 vector compared with the probe's
float32 one put a context against itself anywhere in 1 +- 1e-5, so the split fell by
chance: on the benchmark's background category 2 of 216 wanted hits were lost (0.403
-> 0.394 recall), and they came back with this fix.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from conftest import A, U
from smartcache.decide import context_similarity

HISTORY = [U("我下周去杭州出差，住在西湖边。"), A("好的，西湖边有很多酒店可选。")]


def stored_entry(cache, messages):
    result = cache.store(messages, "答案", session="s1")
    cache.promote(result.cache_id)
    return cache.get(result.cache_id)


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_context_read_back_from_the_store_equals_itself(make_cache, tmp_path, backend) -> None:
    overrides = {"store": {"backend": "sqlite", "path": str(tmp_path / "c.db")}} if backend == "sqlite" else {}
    cache = make_cache(**overrides)
    entry = stored_entry(cache, HISTORY + [U("那边的早餐怎么样？")])
    assert entry.context_vector is not None
    probe = cache.prepare(HISTORY + [U("那边的早餐好吃吗？")], session="s1").fingerprint
    # Another history hash, so the vectors are compared rather than the hashes.
    probe = dataclasses.replace(probe, signature=dataclasses.replace(probe.signature, history_hash="other"))
    assert np.array_equal(probe.context_vector, cache.prepare(HISTORY + [U("x")]).fingerprint.context_vector)
    assert context_similarity(probe, entry) == 1.0


def test_other_contexts_keep_their_cosine(cache) -> None:
    entry = stored_entry(cache, HISTORY + [U("那边的早餐怎么样？")])
    other = cache.prepare([U("我下周去苏州出差，住在金鸡湖边。"), A("好的。"), U("那边的早餐怎么样？")]).fingerprint
    exact = float(np.dot(other.context_vector, cache.prepare(HISTORY + [U("y")]).fingerprint.context_vector))
    got = context_similarity(other, entry)
    assert got < 1.0 and abs(got - exact) < 1e-3
