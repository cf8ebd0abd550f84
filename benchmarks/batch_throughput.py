"""`Predict.abatch` against a hand-written ``asyncio.gather`` + semaphore over the raw SDK.

On the stand-in server (its own process), 2,000 items each run:
1. throughput with no rate limit, at equal concurrency (target >= 0.95x of the raw SDK), in
   interleaved rounds so that drift in machine load hits both sides alike,
2. a requests-per-minute limit and 3. a tokens-per-minute limit, each set to a third of the
   slowest unlimited round's rate so the limit (not the machine) binds, printing the achieved
   rate against the limit (target within 5%),
and the peak RSS of this process. Run: ``python benchmarks/batch_throughput.py``
(``--limits-at N`` runs only 2. and 3., with the limits at a third of N items per second).

The achieved rate is what the endpoint sees: requests counted when they leave the client (an
httpx request hook), over the span from the first send to the last, i.e. ``(n - 1)`` gaps;
tokens over the same span (each request's reported usage, the last one's excluded). The
whole-run rate (start of the batch to its last reply) is printed too: it also counts the
first reply's latency and the last one's, so it reads a little low on short runs.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from typing import Any, Literal

import httpx
from _agent import standin_process
from openai import AsyncOpenAI

import typedspy as ts
from typedspy.adapter import build_request

ITEMS = 2_000
CONCURRENCY = 32
ROUNDS = 3
# ``--limits-at N``: skip the unlimited rounds and set the limits at a third of N items/s.
LIMITS_AT = float(sys.argv[2]) if sys.argv[1:2] == ["--limits-at"] else None


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

        warm = await predict.abatch(INPUTS[:50], concurrency=CONCURRENCY)
        tokens_per_item = warm.usage.total_tokens / 50
        raw_times: list[float] = []
        our_times: list[float] = []
        for _ in range(ROUNDS if LIMITS_AT is None else 0):
            seconds, raw = await timed(raw_batch(client, bodies))
            raw_times.append(seconds)
            seconds, ours = await timed(predict.abatch(INPUTS, concurrency=CONCURRENCY))
            our_times.append(seconds)
            assert not any(isinstance(r, Exception) for r in raw), "raw SDK items failed"
            assert not ours.errors, ours.failures
        if LIMITS_AT is None:
            raw_rate, our_rate = ITEMS / min(raw_times), ITEMS / min(our_times)
            rounds = ", ".join(f"{r / o:.2f}x" for r, o in zip(raw_times, our_times, strict=True))
            print(f"{ITEMS} items at concurrency {CONCURRENCY}, no rate limit, best of {ROUNDS}:")
            print(f"  raw SDK gather+semaphore {raw_rate:.0f} items/s, abatch {our_rate:.0f}/s")
            print(f"  ratio {our_rate / raw_rate:.3f}x (target >= 0.95x); per round: {rounds}")
        slowest = ITEMS / max(our_times) if LIMITS_AT is None else LIMITS_AT

        sends: list[float] = []

        async def sent(request: httpx.Request) -> None:
            sends.append(time.perf_counter())

        hooked = AsyncOpenAI(
            base_url=base_url,
            api_key="offline",
            http_client=httpx.AsyncClient(event_hooks={"request": [sent]}),
        )
        limited = ts.Predict(Label, lm=ts.LM("standin-1", client=hooked))

        rpm = round(slowest * 60 / 3)
        sends.clear()
        limit = ts.limits.RateLimit(requests_per_minute=rpm)
        seconds, ours = await timed(
            limited.abatch(INPUTS, concurrency=CONCURRENCY, rate_limit=limit)
        )
        span = sends[-1] - sends[0]
        achieved = (len(sends) - 1) / span * 60
        print(f"requests_per_minute={rpm} ({ours.requests} requests, {len(ours.errors)} errors):")
        print(
            f"  achieved {achieved:.0f}/min between first and last send ({span:.1f} s): "
            f"{achieved / rpm:.3f}x the limit (target within 5%)"
        )
        whole = ours.requests / seconds * 60
        print(f"  whole run {whole:.0f}/min in {seconds:.1f} s: {whole / rpm:.3f}x")

        tpm = round(slowest * tokens_per_item * 60 / 3)
        sends.clear()
        limit = ts.limits.RateLimit(tokens_per_minute=tpm)
        seconds, ours = await timed(
            limited.abatch(INPUTS, concurrency=CONCURRENCY, rate_limit=limit)
        )
        span = sends[-1] - sends[0]
        per_item = ours.usage.total_tokens / ITEMS
        achieved = ours.usage.total_tokens * (len(sends) - 1) / len(sends) / span * 60
        print(f"tokens_per_minute={tpm} ({per_item:.0f} tokens/item, {len(ours.errors)} errors):")
        print(
            f"  achieved {achieved:.0f}/min between first and last send ({span:.1f} s): "
            f"{achieved / tpm:.3f}x the limit (target within 5%)"
        )
        whole = ours.usage.total_tokens / seconds * 60
        print(f"  whole run {whole:.0f}/min in {seconds:.1f} s: {whole / tpm:.3f}x")
        await hooked.close()
        await client.close()
        await lm.aclose()

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
