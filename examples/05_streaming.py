"""Stream typed partial outputs, a union field included, as the model writes them; offline.

Run: ``python examples/05_streaming.py``

The model is typedspy's stand-in server (real HTTP on 127.0.0.1) streaming a scripted reply in
small server-sent-event chunks, a little slowly, so the partial values can be watched as they
arrive. The signature is the DSPy.rb agent's: the next action is one of three models, told
apart by ``_type``. The partial ``action`` is a ``SpawnTask`` as soon as its ``_type`` is
complete, long before the object is; each field is validated as soon as it is complete.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel

import typedspy as ts
from typedspy.streaming import OutputDelta, PartialPrediction, RetryStarted
from typedspy.testing import StandIn


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    task_id: str
    result: str


class Continue(BaseModel):
    reason: str


class Decide(ts.Signature):
    """Decide the agent's next action."""

    task: str = ts.InputField(description="what the user asked for")
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


REPLY = json.dumps(
    {
        "action": {
            "_type": "SpawnTask",
            "description": "Cut the release branch, run the smoke tests, then tag v2.0",
            "priority": "high",
        },
        "confidence": 0.86,
    }
)


def show(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in values.items())


def sync_stream(server: StandIn) -> ts.Prediction[Decide]:
    """A plain ``for`` loop over ``Predict.stream``: every partial as it arrives."""
    lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="offline")
    predict = ts.Predict(Decide, lm=lm)
    final = None
    try:
        for event in predict.stream(task="Ship the 2.0 release"):
            if isinstance(event, PartialPrediction):
                where = f" (writing {event.in_progress})" if event.in_progress else ""
                print(f"  partial{where}: {show(event.values)}")
            elif isinstance(event, RetryStarted):
                print(f"  attempt {event.attempt} starts: {[str(e) for e in event.errors]}")
            elif isinstance(event, ts.Prediction):
                final = event
    finally:
        lm.close()
    assert final is not None
    return final


async def async_stream(server: StandIn) -> None:
    """``astream`` in your own event loop: print one field's text as it is written."""
    lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="offline")
    try:
        async for event in ts.Predict(Decide, lm=lm).astream(task="Ship the 2.0 release"):
            if isinstance(event, OutputDelta) and event.field == "action":
                print(event.text, end="", flush=True)
            elif isinstance(event, ts.Prediction):
                print(f"\n  -> {type(event.action).__name__}, confidence {event.confidence}")
    finally:
        await lm.aclose()


def main() -> None:
    with StandIn(chunk_delay=0.03) as server:
        server.enqueue(REPLY, REPLY)
        print("Predict.stream: partial values as they arrive")
        final = sync_stream(server)
        print(f"final: {final!r}")
        print(f"  action is a {type(final.action).__name__}; usage {final.usage}")
        print("\nPredict.astream: the raw text of the `action` field as it arrives")
        asyncio.run(async_stream(server))


if __name__ == "__main__":
    main()
