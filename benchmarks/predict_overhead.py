"""Predict's overhead against the raw openai SDK, on the local stand-in server (not a test).

Prints per-call latency (sequential) and throughput at 64 concurrent calls as ratios to
``AsyncOpenAI.chat.completions.create`` sending the very same request body (plus ``json.loads``
of the reply, which any caller of the raw SDK needs), and the size in o200k_base tokens of the
whole request body for the reference task. Predict runs with the history stage on (its default,
``history_size=20``) and off (``history_size=0``), so its cost shows (ADR-061).
Run: ``python benchmarks/predict_overhead.py``
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from typing import Any, Literal

from _agent import standin_process
from bpe_openai import get_encoding
from openai import AsyncOpenAI
from pydantic import BaseModel

import typedspy as ts
from typedspy.adapter import build_request


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    task_id: str
    result: str


class Continue(BaseModel):
    reason: str


class Triage(ts.Signature):
    """Classify the message and decide the agent's next action."""

    text: str = ts.InputField()
    sentiment: Literal["positive", "negative", "neutral"] = ts.OutputField()
    confidence: float = ts.OutputField()
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()


TEXT = "The deploy failed again and the customer is waiting. Can someone look at it today?"
SEQUENTIAL = 300
CONCURRENCY = 64
CONCURRENT_CALLS = 640


async def _raw(client: AsyncOpenAI, body: dict[str, Any]) -> object:
    completion = await client.chat.completions.create(**body)
    return json.loads(completion.choices[0].message.content or "{}")


def _request_body() -> dict[str, Any]:
    """The body Predict sends for the reference task (built by the same adapter)."""
    sent = build_request(Triage, {"text": TEXT}, mode="json_schema")
    return {
        "model": "standin-1",
        "messages": list(sent.messages),
        "response_format": dict(sent.response_format or {}),
    }


async def _sequential(fn: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - start) / n


async def _concurrent(fn: Any, n: int, width: int) -> float:
    gate = asyncio.Semaphore(width)

    async def one() -> None:
        async with gate:
            await fn()

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return n / (time.perf_counter() - start)


async def main() -> None:
    with standin_process() as base_url:
        lm = ts.LM("standin-1", base_url=base_url, api_key="offline")
        predict = ts.Predict(Triage, lm=lm)
        await predict.acall(text=TEXT)
        body = _request_body()
        client = AsyncOpenAI(base_url=base_url, api_key="offline")
        await _raw(client, body)

        def ours() -> Any:
            return predict.acall(text=TEXT)

        def raw() -> Any:
            return _raw(client, body)

        seq_ours, seq_raw, thr_ours, thr_raw, seq_off, thr_off = [], [], [], [], [], []
        for _ in range(3):  # interleaved rounds, so drift hits both sides alike
            seq_raw.append(await _sequential(raw, SEQUENTIAL))
            seq_ours.append(await _sequential(ours, SEQUENTIAL))
            with ts.context(history_size=0):
                seq_off.append(await _sequential(ours, SEQUENTIAL))
                thr_off.append(await _concurrent(ours, CONCURRENT_CALLS, CONCURRENCY))
            thr_raw.append(await _concurrent(raw, CONCURRENT_CALLS, CONCURRENCY))
            thr_ours.append(await _concurrent(ours, CONCURRENT_CALLS, CONCURRENCY))

    tokens = len(get_encoding("o200k_base").encode(json.dumps(body, separators=(",", ":"))))
    raw_lat, our_lat = min(seq_raw), min(seq_ours)
    raw_thr, our_thr = max(thr_raw), max(thr_ours)
    print(f"sequential latency: raw SDK {raw_lat * 1e3:.2f} ms, Predict {our_lat * 1e3:.2f} ms")
    print(f"  ratio {our_lat / raw_lat:.3f}x (target <= 1.10x)")
    print(
        f"throughput at {CONCURRENCY} concurrent: raw SDK {raw_thr:.0f}/s, Predict {our_thr:.0f}/s"
    )
    print(f"  ratio {our_thr / raw_thr:.3f}x (target >= 0.90x)")
    off_lat, off_thr = min(seq_off), max(thr_off)
    print(
        f"history stage off (history_size=0): {off_lat / raw_lat:.3f}x sequential, "
        f"{off_thr / raw_thr:.3f}x throughput; on costs {(our_lat - off_lat) * 1e6:+.0f} us a call"
    )
    print(
        f"  (median sequential ratio over rounds: "
        f"{statistics.median(o / r for o, r in zip(seq_ours, seq_raw, strict=True)):.3f}x)"
    )
    print(
        f"request body: {tokens} o200k_base tokens, {tokens / 380:.3f}x the leanest peer's 380 "
        f"(target <= 0.90x)"
    )
    print("request body sent:")
    print(json.dumps(body, indent=1)[:3000])


if __name__ == "__main__":
    asyncio.run(main())
