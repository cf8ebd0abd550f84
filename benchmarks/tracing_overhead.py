"""Tracing overhead on Predict, on the stand-in server in its own process (not a test).

Three ways to run the same sequential Predict calls, interleaved over rounds so drift hits each
alike (the best round of each is compared):
- off: no tracing callback (the default, and what an install without ``typedspy[otel]`` runs);
- no tracer: the `OpenTelemetry` callback added, but no tracer provider configured (no-op spans);
- on: the callback with the OpenTelemetry SDK recording every span to memory.
Run: ``python benchmarks/tracing_overhead.py`` (needs ``typedspy[otel]`` and the SDK: the dev
extra has both).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from _agent import standin_process
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from predict_overhead import TEXT, Triage

import typedspy as ts
from typedspy._types import Attempt, Usage
from typedspy.lm import LMRequest, LMResponse
from typedspy.tracing import OpenTelemetry

CALLS = 300
ROUNDS = 5
EVENTS = 5000


def _callback_cost(callback: OpenTelemetry, lm: ts.LM) -> float:
    """Seconds the callback adds to one Predict call (its events for one attempt), in process.

    Steadier than end-to-end timings on a busy machine: no HTTP, only what tracing adds.
    """
    predict = ts.Predict(Triage, lm=lm)
    request = LMRequest(messages=({"role": "user", "content": TEXT},))
    response = LMResponse.build(text="{}", model=lm.model, usage=Usage(10, 5, 15))
    start = time.perf_counter()
    for _ in range(EVENTS):
        module, attempt, call = uuid.uuid4().hex, uuid.uuid4().hex, uuid.uuid4().hex
        callback.on_module_start(module, predict, {"text": TEXT})
        callback.on_attempt_start(attempt, lm, 1)
        callback.on_lm_start(call, lm, request)
        callback.on_lm_end(call, response, None)
        callback.on_attempt_end(attempt, Attempt(1, "{}"), None)
        callback.on_module_end(module, None, None)
    return (time.perf_counter() - start) / EVENTS


async def _sequential(predict: ts.Predict[Any], callbacks: list[Any]) -> float:
    with ts.context(callbacks=callbacks):
        start = time.perf_counter()
        for _ in range(CALLS):
            await predict.acall(text=TEXT)
        return (time.perf_counter() - start) / CALLS


async def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    setups: dict[str, list[Any]] = {
        "off": [],
        "no tracer": [OpenTelemetry()],
        "on": [OpenTelemetry(tracer_provider=provider)],
    }
    with standin_process() as base_url:
        predict = ts.Predict(Triage, lm=ts.LM("standin-1", base_url=base_url, api_key="offline"))
        await predict.acall(text=TEXT)
        timings: dict[str, list[float]] = {name: [] for name in setups}
        for _ in range(ROUNDS):
            for name, callbacks in setups.items():
                timings[name].append(await _sequential(predict, callbacks))
                exporter.clear()
        costs = {
            "no tracer": _callback_cost(setups["no tracer"][0], predict.lm),  # type: ignore[arg-type]
            "on": _callback_cost(setups["on"][0], predict.lm),  # type: ignore[arg-type]
        }
    best = {name: min(values) for name, values in timings.items()}
    base = best["off"]
    print("end to end (best of rounds; the spread on a shared machine is several percent):")
    for name, value in best.items():
        print(f"  {name:>9}: {value * 1e3:.3f} ms per call, {value / base - 1:+.2%} against off")
    print("what tracing adds per call, measured in process (against the off latency):")
    print("        off: 0 us, +0.00% (an install without the extra runs no tracing code at all)")
    for name, cost in costs.items():
        print(f"  {name:>9}: {cost * 1e6:.0f} us, {cost / base:+.2%}")


if __name__ == "__main__":
    asyncio.run(main())
