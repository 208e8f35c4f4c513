"""The bundled engine: its prompt is the model's own template, prefix reuse is exact, streaming is clean."""

from __future__ import annotations

import asyncio
import gc
import threading

import pytest
import torch

from smartcache.engine import EngineError, EngineRequest, Finished, GenerationParams, TextDelta

CONVERSATIONS = [
    [{"role": "user", "content": "What is the capital of France?"}],
    [{"role": "system", "content": "You are a travel planner."},
     {"role": "user", "content": "周末去杭州玩三天，预算五千以内，帮我排个行程"},
     {"role": "assistant", "content": "第1天：西湖……\n第2天：灵隐寺"},
     {"role": "user", "content": "预算提高到一万"}],
    [{"role": "user", "content": [{"type": "text", "text": "Explain "}, {"type": "text", "text": "git rebase"}]}],
]


def reference_ids(engine, messages):
    flat = [{**m, "content": m["content"] if isinstance(m["content"], str)
             else "".join(p["text"] for p in m["content"])} for m in messages]
    ids = engine.tokenizer.apply_chat_template(flat, add_generation_prompt=True)
    return list(ids["input_ids"] if not isinstance(ids, list) else ids)


@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_prompt_is_the_models_own_chat_template(local_engine, messages):
    assert local_engine.encode_messages(messages) == reference_ids(local_engine, messages)


def test_each_turns_prompt_starts_with_the_previous_turn_token_for_token(local_engine):
    turn1 = CONVERSATIONS[1][:2]
    turn2 = CONVERSATIONS[1]
    a = local_engine.encode_messages(turn1, generation_prompt=False)
    b = local_engine.encode_messages(turn2)
    assert b[:len(a)] == a


def test_logits_with_reuse_equal_logits_without(local_engine):
    local_engine.kv.clear()
    history = CONVERSATIONS[1]
    first = local_engine.encode_messages(history[:2])
    local_engine.prompt_logits(first, reuse=True)              # fills the tree with turn 1
    ids = local_engine.encode_messages(history)
    fresh, start_fresh = local_engine.prompt_logits(ids, reuse=False)
    reused, start = local_engine.prompt_logits(ids, reuse=True)
    assert start_fresh == 0 and start > len(first) // 2
    tail = fresh[start:]
    # Same tokens, same positions, same weights: the only freedom left is float32
    # summation order inside attention over a different number of key columns.
    assert torch.equal(tail.argmax(-1), reused.argmax(-1))
    assert (tail - reused).abs().max().item() < 1e-3
    assert torch.allclose(torch.softmax(tail, -1), torch.softmax(reused, -1), atol=1e-5)


def test_greedy_answer_is_the_same_with_a_cold_and_a_warm_tree(local_engine):
    messages = CONVERSATIONS[1]
    params = GenerationParams(max_tokens=24)
    local_engine.kv.clear()
    cold, cold_final = local_engine.complete_sync(messages, params)
    warm, warm_final = local_engine.complete_sync(messages, params)
    assert cold_final.usage.cached_tokens == 0
    assert warm_final.usage.cached_tokens == warm_final.usage.prompt_tokens - 1
    assert warm == cold


def test_a_follow_up_reuses_the_answer_it_was_given(local_engine):
    local_engine.kv.clear()
    turn1 = [{"role": "user", "content": "Name three fruits."}]
    answer, final1 = local_engine.complete_sync(turn1, GenerationParams(max_tokens=40))
    turn2 = turn1 + [{"role": "assistant", "content": answer}, {"role": "user", "content": "And three vegetables?"}]
    _, final2 = local_engine.complete_sync(turn2, GenerationParams(max_tokens=8))
    # Everything up to the end of the generated answer was already computed.
    assert final2.usage.cached_tokens >= final1.usage.prompt_tokens + final1.usage.completion_tokens - 2
    new_turn = local_engine.encode_messages([turn2[-1]], generation_prompt=True)
    new_turn_tokens = len(new_turn) - len(local_engine.encode_messages([], generation_prompt=False))
    # Only the answer's closing marks and the new user turn were prefilled.
    assert final2.usage.prompt_tokens - final2.usage.cached_tokens <= new_turn_tokens + 2


def test_stop_strings_length_and_context_limits(local_engine):
    text, final = local_engine.complete_sync(CONVERSATIONS[0], GenerationParams(max_tokens=3))
    assert final.finish_reason == "length" and final.usage.completion_tokens == 3
    text, final = local_engine.complete_sync(CONVERSATIONS[0], GenerationParams(max_tokens=40, stop=("Paris",)))
    assert "Paris" not in text and final.finish_reason == "stop"
    plain, _ = local_engine.complete_sync(CONVERSATIONS[0], GenerationParams(max_tokens=40))
    held, _ = local_engine.complete_sync(CONVERSATIONS[0], GenerationParams(max_tokens=40, stop=("Lyon, France",)))
    assert held == plain            # text held back for a stop string that never came is flushed at the end
    huge = [{"role": "user", "content": "word " * 9000}]
    with pytest.raises(EngineError) as err:
        local_engine.complete_sync(huge, GenerationParams(max_tokens=4))
    assert err.value.status == 400 and err.value.code == "context_length_exceeded"


def test_stream_of_chinese_text_never_splits_a_character(local_engine):
    async def collect():
        req = EngineRequest("smollm2-135m-instruct", [{"role": "user", "content": "用中文介绍一下杭州"}],
                            GenerationParams(max_tokens=40))
        return [e async for e in local_engine.stream(req)]

    events = asyncio.run(collect())
    assert isinstance(events[-1], Finished)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas and all("\ufffd" not in d for d in deltas)


def test_sampling_is_reproducible_with_a_seed(local_engine):
    params = GenerationParams(max_tokens=16, temperature=0.9, top_p=0.9, seed=7)
    a, _ = local_engine.complete_sync(CONVERSATIONS[0], params)
    b, _ = local_engine.complete_sync(CONVERSATIONS[0], params)
    assert a == b


def test_a_generation_the_garbage_collector_closes_inside_the_tree_lock_is_kept_without_deadlock(
        local_engine, monkeypatch):
    """An abandoned stream whose generator sits in a reference cycle is closed by the cyclic
    collector, on whichever thread allocates next: on the engine thread that can be inside
    RadixKVCache.match, holding the tree's lock. Its KV must be queued, not inserted there."""
    from smartcache.engine.radix import RadixKVCache

    tree = RadixKVCache(64 * 1024 * 1024)       # a throwaway tree: a regression locks only this one
    monkeypatch.setattr(local_engine, "kv", tree)
    ids = local_engine.encode_messages([{"role": "user", "content": "Name a colour."}])

    def abandon_then_collect() -> None:
        gen = local_engine._generate(ids, GenerationParams(max_tokens=8))
        next(gen)
        cycle = [gen]
        cycle.append(cycle)                      # only the cyclic collector can free it now
        del gen, cycle
        with tree._lock:
            gc.collect()                         # as an allocation inside match() would
        local_engine._save_unsaved()

    worker = threading.Thread(target=abandon_then_collect, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "the collected generation deadlocked on the radix tree's lock"
    assert tree.match(ids).length == len(ids)    # and what it computed was kept
