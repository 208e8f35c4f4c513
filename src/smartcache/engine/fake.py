"""A fake engine for tests and fuzzing, as httpx ships ``MockTransport``: no model, no network.

Answers are instant and deterministic: a sentence naming a digest of the last user
message, so the same question always gets the same answer and different questions
different ones::

    >>> import asyncio
    >>> engine = FakeEngine()
    >>> request = EngineRequest("fake", [{"role": "user", "content": "hi"}])
    >>> asyncio.run(engine.complete(request))[0]
    'Fake answer b49177e0 to your question.'

Tokens are counted by one simple rule (``count_text_tokens``): a CJK character is a
token, and so is every other run of non-space characters; a message costs 4 tokens
of framing besides its content (``prompt_pieces`` lists them). Each streamed ``TextDelta``
is exactly one token, so ``Usage.completion_tokens`` equals the number of deltas.

Like an engine with a prefix cache, it keeps what it has seen (each prompt and the answer
generated after it) and reports in ``Usage.cached_tokens`` the longest prefix a new prompt
shares with one of them: a follow-up that re-sends the last answer byte for byte reuses
the whole conversation, one with the answer re-spaced reuses only up to it::

    >>> engine = FakeEngine()
    >>> first = [{"role": "user", "content": "hi"}]
    >>> text, done = asyncio.run(engine.complete(EngineRequest("fake", first)))
    >>> done.usage.cached_tokens
    0
    >>> follow = first + [{"role": "assistant", "content": text}, {"role": "user", "content": "more"}]
    >>> done = asyncio.run(engine.complete(EngineRequest("fake", follow)))[1]
    >>> done.usage.prompt_tokens, done.usage.cached_tokens      # reused: up to the answer's end mark
    (20, 14)

The behaviour is plain attributes, changeable between requests (``engine.fail_status
= 503``): fail before the first token, fail or stop dead mid-stream, finish with
``length`` or another reason, or answer with tool calls the way an OpenAI upstream
streams them (raw chunks, which the gateway relays unchanged).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import deque
from typing import Any, AsyncIterator

from smartcache.engine.base import EngineError, EngineEvent, EngineRequest, Finished, TextDelta, Usage

FAKE_MODEL = "fake-engine"
IM_START, IM_END, SEP = "<|im_start|>", "<|im_end|>", "\n"
MESSAGE_FRAMING = 4     # tokens a message costs besides its content: IM_START, role, SEP, IM_END
GENERATION_PROMPT = (IM_START, "assistant", SEP)    # what an answer's tokens follow

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")


def count_text_tokens(text: str) -> int:
    """Tokens of ``text`` by the fake rule: ``"hi there"`` -> 2, ``"你好 ok"`` -> 3."""
    return sum(1 for _ in _TOKEN.finditer(text))


def split_tokens(text: str) -> list[str]:
    """``text`` cut into its tokens, each with the whitespace before it, so the pieces
    join back to ``text``: ``"a b"`` -> ``["a", " b"]`` (whitespace at the end joins the last)."""
    pieces, start = [], 0
    for match in _TOKEN.finditer(text):
        pieces.append(text[start:match.end()])
        start = match.end()
    if pieces:
        pieces[-1] += text[start:]
    elif text:
        pieces.append(text)
    return pieces


def _pieces(text: str) -> list[str]:
    # Whitespace alone is no token (count_text_tokens), so it adds no piece either.
    return split_tokens(text) if count_text_tokens(text) else []


def prompt_pieces(messages: list[dict[str, Any]]) -> list[str]:
    """The prompt as the fake's tokens: per message a start mark, the role, a separator, the
    content's pieces (tool calls as JSON) and an end mark, so its length is ``count_tokens``::

        >>> prompt_pieces([{"role": "user", "content": "hi  there"}])
        ['<|im_start|>', 'user', '\\n', 'hi', '  there', '<|im_end|>']

    The pieces keep their whitespace, as a real tokenizer's do: a re-sent answer with other
    spacing shares no prefix past its first difference (what the gateway's docking repairs).
    """
    pieces: list[str] = []
    for m in messages:
        pieces += [IM_START, str(m.get("role")), SEP, *_pieces(_content_text(m.get("content")))]
        if m.get("tool_calls"):
            pieces += _pieces(json.dumps(m["tool_calls"], sort_keys=True, default=str))
        pieces.append(IM_END)
    return pieces


def _shared(a: tuple[str, ...] | list[str], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def _content_text(content: Any) -> str:
    """The text of a message's content, tolerant of any shape (the engine never rejects)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p if isinstance(p, str) else str(p.get("text") or "") if isinstance(p, dict) else ""
                         for p in content)
    return ""


def _digest(value: Any) -> str:
    # ensure_ascii: a lone surrogate in the content must hash, not raise on encode.
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:8]


class FakeEngine:
    """An ``Engine`` that answers from the request itself. See the module docstring.

    - ``fail_status``: raise ``EngineError`` with this status before the first token;
    - ``error_after``: raise ``EngineError`` after this many deltas (a stream broken mid-way);
    - ``end_after``: end the stream after this many deltas with no ``Finished`` (an engine
      that died silently);
    - ``finish``: the finish reason of a complete answer (``stop``, ``length``, ``content_filter``);
    - ``tool_calls``: answer with one tool call instead of text;
    - ``delay_s``: sleep this long before each delta (default 0: instant);
    - ``any_model``: accept any model name, as an upstream does (the gateway checks
      ``accepts_any_model``); otherwise only ``model_id``;
    - ``answer``: a fixed answer text instead of the digest sentence;
    - ``context_length``: refuse a prompt of this many tokens or more with 400
      ``context_length_exceeded``, as the bundled engine does (default: no limit).

    ``max_tokens`` and ``stop`` of the request are honoured as a real engine does: the
    answer is cut at the first stop string (``finish`` stays), or after ``max_tokens``
    tokens (finish ``length``). ``calls`` counts streams begun; ``requests`` keeps the last
    ``history`` of them for assertions, and the prefix cache the last ``history`` sequences.
    """

    def __init__(self, *, model_id: str = FAKE_MODEL, fail_status: int | None = None,
                 error_after: int | None = None, end_after: int | None = None, finish: str = "stop",
                 tool_calls: bool = False, delay_s: float = 0.0, any_model: bool = False,
                 answer: str | None = None, context_length: int | None = None, history: int = 100) -> None:
        self.model_id = model_id
        self.tokenizer_id = "fake-words-v1"
        self.fail_status = fail_status
        self.error_after = error_after
        self.end_after = end_after
        self.finish = finish
        self.tool_calls = tool_calls
        self.delay_s = delay_s
        self.accepts_any_model = any_model
        self.answer = answer
        self.context_length = context_length
        self.calls = 0
        self.requests: deque[EngineRequest] = deque(maxlen=history)
        self.kept: deque[tuple[str, ...]] = deque(maxlen=history)     # the prefix cache's sequences
        self.closed = False

    # -- the Engine contract --------------------------------------------------------------

    def count_text_tokens(self, text: str) -> int:
        return count_text_tokens(text)

    def truncate_text(self, text: str, tokens: int) -> str:
        """The first ``tokens`` tokens of ``text`` (a cached answer cut to a request's limit)."""
        return "".join(split_tokens(text)[:tokens]) if count_text_tokens(text) > tokens else text

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        return len(prompt_pieces(messages))

    def cached_prefix(self, pieces: list[str]) -> int:
        """Tokens of the prompt ``pieces`` a prefix cache reuses: the longest prefix shared with
        a kept sequence, less the last token (its logits must be computed to answer)."""
        shared = max((_shared(pieces, kept) for kept in self.kept), default=0)
        return max(0, min(shared, len(pieces) - 1))

    def answer_for(self, request: EngineRequest) -> str:
        """The full answer to ``request`` before ``stop`` and ``max_tokens`` apply."""
        if self.answer is not None:
            return self.answer
        last_user = next((m.get("content") for m in reversed(request.messages) if m.get("role") == "user"), None)
        return f"Fake answer {_digest(last_user)} to your question."

    async def stream(self, request: EngineRequest) -> AsyncIterator[EngineEvent]:
        self.calls += 1
        self.requests.append(request)
        if self.closed:
            raise EngineError("the fake engine is closed", status=503, code="engine_closed")
        if self.fail_status is not None:
            raise EngineError(f"the fake engine was told to fail with {self.fail_status}",
                              status=self.fail_status, code="fake_failure")
        seen = prompt_pieces(request.messages)
        prompt = len(seen)
        if self.context_length is not None and prompt >= self.context_length:
            raise EngineError(f"the prompt has {prompt} tokens; this model's context is {self.context_length}",
                              status=400, code="context_length_exceeded")
        cached = self.cached_prefix(seen)
        if self.tool_calls:
            async for event in self._tool_call(request, prompt, cached):
                yield event
            return
        text, finish = self.answer_for(request), self.finish
        cut = min((i for i in (text.find(s) for s in request.params.stop if s) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut]
        pieces = split_tokens(text)
        if len(pieces) > request.params.max_tokens:
            pieces, finish = pieces[:request.params.max_tokens], "length"
        emitted = 0
        try:
            for i, piece in enumerate(pieces):
                if i == self.error_after:
                    raise EngineError(f"the fake engine failed after {i} tokens", code="fake_midstream")
                if i == self.end_after:
                    return
                if self.delay_s:
                    await asyncio.sleep(self.delay_s)
                yield TextDelta(piece)
                emitted += 1
            yield Finished(finish, Usage(prompt, len(pieces), cached))
        finally:
            # What was generated is kept even when the stream broke or was abandoned, as the
            # bundled engine keeps its KV: the prompt, then the answer's tokens so far.
            self.kept.append((*seen, *GENERATION_PROMPT, *pieces[:emitted]))

    async def _tool_call(self, request: EngineRequest, prompt: int, cached: int) -> AsyncIterator[EngineEvent]:
        """One call of a ``lookup`` function, in the chunks an OpenAI server streams."""
        cid = f"chatcmpl-fake{_digest(request.messages)}"
        arguments = json.dumps({"query": self.answer_for(request)})
        call = {"index": 0, "id": f"call_{_digest(arguments)}", "type": "function",
                "function": {"name": "lookup", "arguments": arguments}}
        base = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": request.model}
        delta = {"role": "assistant", "tool_calls": [call]}
        yield TextDelta("", raw={**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        done = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
        yield TextDelta("", raw=done)
        yield Finished("tool_calls", Usage(prompt, count_text_tokens(arguments), cached), tool_calls=True, raw=done)

    async def complete(self, request: EngineRequest) -> tuple[str, Finished]:
        """The whole answer and its ``Finished``: what a non-streaming caller assembles."""
        parts, final = [], None
        async for event in self.stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            else:
                final = event
        if final is None:
            raise EngineError("the fake engine ended without finishing", code="fake_incomplete")
        return "".join(parts), final

    async def aclose(self) -> None:
        self.closed = True
