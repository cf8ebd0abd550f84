"""`Predict.abatch` against a hand-written ``asyncio.gather`` + semaphore over the raw SDK.

On the stand-in server (its own process), 2,000 items each run:
1. throughput with no rate limit, at equal concurrency (target >= 0.95x of the raw SDK), in
   interleaved rounds so that drift in machine load hits both sides alike,
2. a requests-per-minute limit and 3. a tokens-per-minute limit, each set to a third of the
   measured unlimited rate so the limit (not the machine) binds, printing the achieved rate
   against the limit (target within 5%),
and the peak RSS of this process. Run: ``python benchmarks/batch_throughput.py``
"""

from __future__ import annotations

import asyncio
import json
import resource
import time
from typing import Any, Literal

from _agent import standin_process
from openai import AsyncOpenAI

import typedspy as ts
from typedspy.adapter import build_request

ITEMS = 2_000
CONCURRENCY = 32
ROUNDS = 3


class Label(ts.Signature):
    """Label the support ticket."""

    ticket: str = ts.InputField()
    topic: Literal["billing", "bug", "account", "other"] = ts.OutputField()
    urgent: bool = ts.OutputField()


INPUTS = [{"ticket": f"Ticket {n}: charged twice for order {10_000 + n}"} for n in range(ITEMS)]


async def raw_batch(client: AsyncOpenAI, bodies: list[dict[str, Any]]) -> list[Any]:
    """What users write today: gather + semaphore, errors caught per item."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(body: dict[str, Any]) -> Any:
        async with gate:
            try:
                completion = await client.chat.completions.create(**body)
                return json.loads(completion.choices[0].message.content or "{}")
            except Exception as exc:
                return exc

    return await asyncio.gather(*(one(b) for b in bodies))


async def timed(coro: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = await coro
    return time.perf_counter() - start, result


async def main() -> None:
    with standin_process() as base_url:
        lm = ts.LM("standin-1", base_url=base_url, api_key="offline")
        predict = ts.Predict(Label, lm=lm)
        bodies = [
            lm.request_body(build_request(Label, item, mode="json_schema")) for item in INPUTS
        ]
        client = AsyncOpenAI(base_url=base_url, api_key="offline")
        await raw_batch(client, bodies[:50])  # warm both clients' connection pools
        await predict.abatch(INPUTS[:50], concurrency=CONCURRENCY)

        raw_times, our_times = [], []
        for _ in range(ROUNDS):
            seconds, raw = await timed(raw_batch(client, bodies))
            raw_times.append(seconds)
            seconds, ours = await timed(predict.abatch(INPUTS, concurrency=CONCURRENCY))
            our_times.append(seconds)
            assert not any(isinstance(r, Exception) for r in raw), "raw SDK items failed"
            assert not ours.errors, ours.failures
        raw_rate, our_rate = ITEMS / min(raw_times), ITEMS / min(our_times)
        rounds = ", ".join(f"{r / o:.2f}x" for r, o in zip(raw_times, our_times, strict=True))
        print(f"{ITEMS} items at concurrency {CONCURRENCY}, no rate limit, best of {ROUNDS}:")
        print(f"  raw SDK gather+semaphore {raw_rate:.0f} items/s, Predict.abatch {our_rate:.0f}/s")
        print(f"  ratio {our_rate / raw_rate:.3f}x (target >= 0.95x); per round: {rounds}")
        tokens_per_item = ours.usage.total_tokens / ITEMS

        rpm = round(our_rate * 60 / 3)
        limit = ts.RateLimit(requests_per_minute=rpm)
        seconds, ours = await timed(
            predict.abatch(INPUTS, concurrency=CONCURRENCY, rate_limit=limit)
        )
        achieved = ours.requests / seconds * 60
        print(f"requests_per_minute={rpm}: achieved {achieved:.0f}/min in {seconds:.1f} s")
        print(f"  {achieved / rpm:.3f}x the limit (target within 5%), {len(ours.errors)} errors")

        tpm = round(our_rate * tokens_per_item * 60 / 3)
        limit = ts.RateLimit(tokens_per_minute=tpm)
        seconds, ours = await timed(
            predict.abatch(INPUTS, concurrency=CONCURRENCY, rate_limit=limit)
        )
        achieved = ours.usage.total_tokens / seconds * 60
        per_item = ours.usage.total_tokens / ITEMS
        print(f"tokens_per_minute={tpm}: achieved {achieved:.0f}/min in {seconds:.1f} s")
        print(f"  {achieved / tpm:.3f}x the limit (target within 5%), {per_item:.0f} tokens/item")
        await client.close()
        await lm.aclose()

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
