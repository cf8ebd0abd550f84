"""What streaming through Predict costs over the raw SDK's own streaming (not a test).

Against the stand-in server in its own process (SSE, 8 characters per delta, a usage chunk),
both sides send the very same request body (built by typedspy's adapter, ``stream=True`` with
``include_usage``):

* raw SDK: ``await client.chat.completions.create(..., stream=True)``, then every chunk consumed
  and the content joined (what any caller of the raw SDK does at the least);
* typedspy: ``predict.astream(...)`` consumed to its final `Prediction` (partial parsing,
  `OutputDelta`/`PartialPrediction` events and the final validation included).

Prints time to the first content chunk against time to the first `PartialPrediction`, total
time per call, and typedspy's own work per chunk (``Predict.astream`` minus ``LM.astream``, the
transport alone: partial parsing, events, final validation) as a share of the raw SDK's time
per chunk. Run: ``python benchmarks/streaming_overhead.py``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from openai import AsyncOpenAI

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _agent import Decide, Plan, standin_process

import typedspy as ts
from typedspy.adapter import build_request
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.lm._stream import LMChunk, StreamAccumulator
from typedspy.streaming import PartialPrediction

TASK = "The deploy failed again and the customer is waiting. Plan the next steps."
CALLS = 200
REPLAYS = 2000
ROUNDS = 3


def request_body(signature: type[ts.Signature]) -> dict[str, Any]:
    """The body Predict sends when it streams (built by the same adapter)."""
    sent = build_request(signature, {"task": TASK}, mode="json_schema")
    return {
        "model": "standin-1",
        "messages": list(sent.messages),
        "response_format": dict(sent.response_format or {}),
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def raw_call(client: AsyncOpenAI, body: dict[str, Any]) -> tuple[float, float, int]:
    """(seconds to the first content chunk, seconds in all, chunks)."""
    start = time.perf_counter()
    first = 0.0
    parts: list[str] = []
    chunks = 0
    stream = await client.chat.completions.create(**body)
    async for chunk in stream:
        chunks += 1
        if chunk.choices and chunk.choices[0].delta.content:
            if not first:
                first = time.perf_counter() - start
            parts.append(chunk.choices[0].delta.content)
    assert "".join(parts)
    return first, time.perf_counter() - start, chunks


async def our_call(predict: ts.Predict[Any]) -> tuple[float, float, int]:
    """(seconds to the first PartialPrediction, seconds in all, events)."""
    start = time.perf_counter()
    first = 0.0
    events = 0
    final: Any = None
    async for event in predict.astream(task=TASK):
        events += 1
        if not first and isinstance(event, PartialPrediction):
            first = time.perf_counter() - start
        final = event
    assert isinstance(final, ts.Prediction)
    return first, time.perf_counter() - start, events


async def lm_call(lm: ts.LM, request: LMRequest) -> tuple[float, float, int]:
    """typedspy's transport alone: `LM.astream` consumed (no parsing, no events)."""
    start = time.perf_counter()
    first = 0.0
    chunks = 0
    async for chunk in lm.astream(request):
        chunks += 1
        if chunk.text and not first:
            first = time.perf_counter() - start
    return first, time.perf_counter() - start, chunks


async def measure(fn: Any) -> tuple[float, float, int]:
    results = [await fn() for _ in range(CALLS)]
    return (
        statistics.median(r[0] for r in results),
        statistics.median(r[1] for r in results),
        results[-1][2],
    )


class Replay(BaseLM):
    """Streams chunks captured from the stand-in again, with no I/O at all."""

    def __init__(self, chunks: list[LMChunk]) -> None:
        super().__init__("replay")
        self.chunks = chunks

    async def acomplete(self, request: LMRequest) -> LMResponse:
        accumulator = StreamAccumulator(self.model)
        for chunk in self.chunks:
            accumulator.add(chunk)
        return accumulator.response()

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        for chunk in self.chunks:
            yield chunk


async def own_work_per_chunk(signature: type[ts.Signature], chunks: list[LMChunk]) -> float:
    """Seconds typedspy spends per chunk: ``Predict.astream`` over replayed chunks, minus
    iterating the same chunks bare (partial parsing, events, the final validation, all layers).
    """
    replay = Replay(chunks)
    predict = ts.Predict(signature, lm=replay, mode="json_schema")
    request = build_request(signature, {"task": TASK}, mode="json_schema")

    async def bare() -> None:
        async for _ in replay.astream(request):
            pass

    async def ours() -> None:
        async for _ in predict.astream(task=TASK):
            pass

    async def timed(fn: Any) -> float:
        start = time.perf_counter()
        for _ in range(REPLAYS):
            await fn()
        return (time.perf_counter() - start) / REPLAYS

    await ours()
    spent = min([await timed(ours) - await timed(bare) for _ in range(ROUNDS)])
    return spent / len(chunks)


async def compare(base_url: str, signature: type[ts.Signature]) -> None:
    lm = ts.LM("standin-1", base_url=base_url, api_key="offline")
    predict = ts.Predict(signature, lm=lm, mode="json_schema")
    client = AsyncOpenAI(base_url=base_url, api_key="offline")
    body = request_body(signature)
    request = build_request(signature, {"task": TASK}, mode="json_schema")
    await raw_call(client, body)
    await our_call(predict)
    captured = [chunk async for chunk in lm.astream(request)]

    raw_runs, our_runs = [], []
    for _ in range(ROUNDS):  # interleaved, so drift hits both sides alike
        raw_runs.append(await measure(lambda: raw_call(client, body)))
        our_runs.append(await measure(lambda: our_call(predict)))
    raw_first, raw_total, chunks = min(raw_runs, key=lambda r: r[1])
    our_first, our_total, events = min(our_runs, key=lambda r: r[1])
    raw_per_chunk = raw_total / chunks
    own = await own_work_per_chunk(signature, captured)
    print(f"{signature.__name__}: {chunks} chunks per stream, {events} typedspy events")
    print(
        f"  first content chunk (raw SDK) {raw_first * 1e3:.3f} ms, first PartialPrediction "
        f"{our_first * 1e3:.3f} ms: ratio {our_first / raw_first:.3f}x"
    )
    print(
        f"  whole stream: raw SDK {raw_total * 1e3:.3f} ms, Predict.astream {our_total * 1e3:.3f}"
        f" ms: ratio {our_total / raw_total:.3f}x (target < 1.10x)"
    )
    print(
        f"  per chunk: raw SDK iteration {raw_per_chunk * 1e6:.1f} us (network included); "
        f"typedspy's own work {own * 1e6:.1f} us = {own / raw_per_chunk:.1%} of it"
    )
    await client.close()
    await lm.aclose()


async def main() -> None:
    with standin_process() as base_url:
        for signature in (Decide, Plan):
            await compare(base_url, signature)


if __name__ == "__main__":
    asyncio.run(main())
