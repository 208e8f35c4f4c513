"""Benchmark: a 10-turn conversation on the bundled engine, through the gateway.

For every turn it measures three ways of answering the same request:

    miss      the engine's prefix tree emptied and the cache skipped: a full re-prefill
    half-hit  the real next turn: a condition change, forwarded with the history's KV reused
    hit       the same request again, served from the cache

and prints time to first token, total time and prefill tokens, with the ratios
the gateway issue sets as targets (hit >= 50x faster than miss at turn 10;
half-hit prefill <= 10 % of a full re-prefill from turn 5 on). A benchmark, not
a test: figures depend on the machine, ratios less so.

    .venv/bin/python scripts/bench_gateway.py [--max-tokens 128] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time

import httpx
import uvicorn

from smartcache import SmartCache, load_config
from smartcache.engine.local import MODEL_ID, LocalEngine
from smartcache.gateway import GatewaySettings, create_app

SYSTEM = "You are a travel planner. Answer in one or two sentences."
TURNS = [
    "Plan a 3-day trip to Hangzhou for two people with a budget of 5000 yuan.",
    "Raise the budget to 8000 yuan.",
    "Make it 4 days instead of 3.",
    "Add a tea plantation visit on the second day.",
    "Change the hotel to one near West Lake.",
    "Make it 3 people instead of 2.",
    "Remove the boat tour.",
    "Move the museum visit to the last day.",
    "Raise the budget to 10000 yuan.",
    "Make it 5 days instead of 4.",
]


async def request(client: httpx.AsyncClient, messages, headers, max_tokens: int) -> dict:
    body = {"model": MODEL_ID, "messages": messages, "max_tokens": max_tokens, "stop": ["\n"], "stream": True,
            "stream_options": {"include_usage": True}}
    start = time.perf_counter()
    first = None
    text, usage = [], None
    async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as r:
        status = r.headers.get("x-smartcache-status")
        async for line in r.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for c in chunk.get("choices") or []:
                piece = c["delta"].get("content") or ""
                if piece and first is None:
                    first = time.perf_counter()
                text.append(piece)
            usage = chunk.get("usage") or usage
    total = time.perf_counter() - start
    prompt = usage["prompt_tokens"]
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return {"status": status, "ttft": (first or time.perf_counter()) - start, "total": total,
            "prompt_tokens": prompt, "prefill_tokens": 0 if status == "hit" else prompt - cached,
            "text": "".join(text)}


def start_server(app) -> tuple[uvicorn.Server, str]:
    """The app on a real socket (127.0.0.1, a free port): in-process transports buffer streams."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


async def run(max_tokens: int) -> list[dict]:
    engine = LocalEngine()
    cache = SmartCache(load_config(lifecycle={"promotion_window_s": 0.0}))
    # regenerate_window 0: the repeated request below is a plain hit, not a regenerate.
    app = create_app(cache, engine, GatewaySettings(regenerate_window_s=0.0), close_engine=False)
    server, base = start_server(app)
    session = {"x-session-id": "bench"}
    rows = []
    async with httpx.AsyncClient(base_url=base, timeout=600) as client:
        await request(client, [{"role": "user", "content": "warm up"}], {"cache-control": "no-store"}, 4)
        history = [{"role": "system", "content": SYSTEM}]
        for n, turn in enumerate(TURNS, 1):
            messages = history + [{"role": "user", "content": turn}]
            live = await request(client, messages, session, max_tokens)          # the real turn
            engine.kv.clear()
            miss = await request(client, messages, {**session, "cache-control": "no-cache, no-store"}, max_tokens)
            hit = await request(client, messages, session, max_tokens)
            rows.append({"turn": n, "live": live, "miss": miss, "hit": hit})
            history = messages + [{"role": "assistant", "content": live["text"]}]
            # Put the history's KV back as a live server would have it after this turn.
            await request(client, history + [{"role": "user", "content": "ok"}], {"cache-control": "no-store"}, 1)
    rows[-1]["exactness"] = exactness(engine, history + [{"role": "user", "content": "Thanks!"}])
    server.should_exit = True
    await engine.aclose()
    return rows


def exactness(engine: LocalEngine, messages) -> dict:
    """Logits of the final prompt computed with the history's KV reused versus a full prefill."""
    import torch
    ids = engine.encode_messages(messages)
    fresh, _ = engine.prompt_logits(ids, reuse=False)
    reused, start = engine.prompt_logits(ids, reuse=True)
    tail = fresh[start:]
    return {"prompt_tokens": len(ids), "reused_tokens": start,
            "max_abs_logit_diff": float((tail - reused).abs().max()),
            "argmax_equal": bool(torch.equal(tail.argmax(-1), reused.argmax(-1)))}


def print_table(rows: list[dict]) -> None:
    print("| turn | prompt tok | status (real turn) | miss TTFT / total (s) | forwarded TTFT / total (s) "
          "| hit TTFT / total (ms) | prefill tok miss / forwarded | forwarded prefill % of miss "
          "| miss/hit total | miss/hit TTFT |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m, l, h = r["miss"], r["live"], r["hit"]
        print(f"| {r['turn']} | {m['prompt_tokens']} | {l['status']} | {m['ttft']:.2f} / {m['total']:.2f} "
              f"| {l['ttft']:.2f} / {l['total']:.2f} | {1000 * h['ttft']:.1f} / {1000 * h['total']:.1f} "
              f"| {m['prefill_tokens']} / {l['prefill_tokens']} "
              f"| {100 * l['prefill_tokens'] / m['prefill_tokens']:.1f} % "
              f"| {m['total'] / h['total']:.0f}x | {m['ttft'] / h['ttft']:.0f}x |")
    last = rows[-1]
    late = [r for r in rows if r["turn"] >= 5 and r["live"]["status"] == "half-hit"]
    print()
    print(f"hit vs miss at turn {last['turn']}: {last['miss']['total'] / last['hit']['total']:.0f}x faster "
          f"(target >= 50x); hit status: {last['hit']['status']}")
    ex = last.get("exactness")
    if ex:
        print(f"exactness on a {ex['prompt_tokens']}-token prompt with {ex['reused_tokens']} tokens reused: "
              f"max |logit difference| {ex['max_abs_logit_diff']:.2e}, same argmax at every position: "
              f"{ex['argmax_equal']}")
    if late:
        worst = max(100 * r["live"]["prefill_tokens"] / r["miss"]["prefill_tokens"] for r in late)
        print(f"half-hit prefill from turn 5 on: at most {worst:.1f} % of a full re-prefill (target <= 10 %), "
              f"{len(late)} of {sum(1 for r in rows if r['turn'] >= 5)} turns decided half-hit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    rows = asyncio.run(run(args.max_tokens))
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()
