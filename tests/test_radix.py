"""The KV prefix tree on small synthetic tensors: longest-prefix semantics, splits, the budget."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from smartcache.engine import RadixKVCache

LAYERS, HEADS, DIM = 2, 1, 3


def kv_for(ids: list[int]):
    """KV whose values encode (layer, position, token) so a wrong slice is visible."""
    out = []
    for layer in range(LAYERS):
        k = torch.tensor([[[[layer, p, t][:DIM] for p, t in enumerate(ids)]]], dtype=torch.float32)
        v = k + 0.5
        out.append((k, v))
    return out


def positions_of(kv) -> list[int]:
    return [int(x) for x in kv[0][0][0, 0, :, 1]]


def tokens_of(kv) -> list[int]:
    return [int(x) for x in kv[0][0][0, 0, :, 2]]


def test_longest_prefix_and_split():
    tree = RadixKVCache(1 << 20)
    tree.insert([1, 2, 3, 4], kv_for([1, 2, 3, 4]))
    tree.insert([1, 2, 9], kv_for([1, 2, 9]))          # splits the first edge after [1, 2]
    m = tree.match([1, 2, 3, 7])
    assert m.length == 3 and positions_of(m.kv) == [0, 1, 2] and tokens_of(m.kv) == [1, 2, 3]
    assert torch.equal(m.kv[1][0], kv_for([1, 2, 3])[1][0])
    assert tree.match([1, 2, 9, 9]).length == 3
    assert tree.match([5]).length == 0 and tree.match([5]).kv is None
    assert tree.match([1, 2, 3, 4], max_length=2).length == 2
    assert tree.stats().tokens == 5


def test_budget_evicts_least_recently_used_leaf():
    one = sum(k.numel() * 4 + v.numel() * 4 for k, v in kv_for([0] * 10))
    tree = RadixKVCache(int(one * 2.5))
    tree.insert(list(range(10)), kv_for(list(range(10))))
    tree.insert(list(range(100, 110)), kv_for(list(range(100, 110))))
    tree.match(list(range(10)))                          # the first is now the more recent
    tree.insert(list(range(200, 210)), kv_for(list(range(200, 210))))
    assert tree.stats().bytes <= tree.budget_bytes
    assert tree.match(list(range(10))).length == 10
    assert tree.match(list(range(100, 110))).length == 0  # evicted
    assert tree.match(list(range(200, 210))).length == 10
    assert tree.stats().evicted_nodes == 1


def test_a_sequence_larger_than_the_budget_is_not_stored():
    tree = RadixKVCache(64)
    assert tree.insert(list(range(50)), kv_for(list(range(50)))) == 0
    assert tree.stats().bytes == 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=8), min_size=1, max_size=8),
       st.lists(st.integers(0, 3), min_size=1, max_size=8))
def test_match_is_the_longest_common_prefix_with_any_stored_sequence(stored, probe):
    tree = RadixKVCache(1 << 24)
    for ids in stored:
        tree.insert(ids, kv_for(ids))

    def lcp(a, b):
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    m = tree.match(probe)
    assert m.length == max(lcp(s, probe) for s in stored)
    if m.length:
        assert positions_of(m.kv) == list(range(m.length))
        assert tokens_of(m.kv) == probe[:m.length]
        assert m.kv[0][0].shape[2] == m.length
