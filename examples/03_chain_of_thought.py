"""ChainOfThought with a union output, a callback that logs LM calls, and saved state; offline.

Run: ``python examples/03_chain_of_thought.py``

The model is typedspy's stand-in server (real HTTP on 127.0.0.1) with scripted replies, so the
run is the same every time: the module reasons before it answers with one of three typed
cases, a callback logs each request, and the module's tuned instructions and demo are saved to
a JSON file and loaded into a fresh module, which sends them in its next request.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

import typedspy as ts
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.testing import StandIn


class Exact(BaseModel):
    km: float


class Range(BaseModel):
    low_km: float
    high_km: float


class Unknown(BaseModel):
    why: str


class Distance(ts.Signature):
    """Estimate the road distance between two places."""

    origin: str = ts.InputField()
    destination: str = ts.InputField()
    distance: Exact | Range | Unknown = ts.OutputField()


class LogLMCalls(ts.BaseCallback):
    """Print a line per request, per answer, and per finished module call."""

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        print(f"  [lm {call_id[:6]}] -> {instance.model}, {len(request.messages)} messages")

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        if response is None:
            print(f"  [lm {call_id[:6]}] <- failed: {exception}")
        else:
            print(f"  [lm {call_id[:6]}] <- {response.usage.total_tokens} tokens")

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        print(f"  [module {call_id[:6]}] done" + (f" ({exception})" if exception else ""))


def describe(distance: Exact | Range | Unknown) -> str:
    match distance:
        case Exact(km=km):
            return f"exactly {km:g} km"
        case Range(low_km=low, high_km=high):
            return f"between {low:g} and {high:g} km"
        case Unknown(why=why):
            return f"unknown ({why})"
    raise AssertionError(distance)


def reply(reasoning: str, distance: Mapping[str, Any]) -> str:
    return json.dumps({"reasoning": reasoning, "distance": distance})


def main() -> None:
    with StandIn() as server:
        server.enqueue(
            reply(
                "Versailles is a suburb west of Paris; the route depends on the start point.",
                {"_type": "Range", "low_km": 17, "high_km": 24},
            ),
            reply("Both are in Lyon.", {"_type": "Exact", "km": 0}),
        )
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        cot = ts.ChainOfThought(
            Distance, lm=lm, reasoning_description="Which case applies, and why."
        )

        print("ChainOfThought(Distance), with a logging callback:")
        with ts.context(callbacks=[LogLMCalls()]):
            pred = cot(origin="Paris", destination="Versailles")
        print(f"reasoning: {pred.reasoning}")
        print(f"answer:    {type(pred.distance).__name__} -> {describe(pred.distance)}")
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
        print(f"schema properties, in order: {list(schema['properties'])}")

        cot.instructions = "Estimate the road distance; give a range when unsure."
        cot.demos = [
            {
                "origin": "Nice",
                "destination": "Monaco",
                "reasoning": "A short coastal road.",
                "distance": Range(low_km=18, high_km=22),
            }
        ]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "distance.json"
            cot.save(path)
            print(f"\nsaved state ({path.name}):")
            print(path.read_text(encoding="utf-8"))

            fresh = ts.ChainOfThought(Distance, lm=lm)
            fresh.load(path)
        print(f"loaded demo answer is typed again: {fresh.demos[0]['distance']!r}")

        with ts.context(callbacks=[LogLMCalls()]):
            again = fresh(origin="Lyon", destination="Lyon")
        sent = server.requests[-1]["messages"]
        print(f"answer: {describe(again.distance)} ({again.reasoning})")
        print(f"system message starts: {sent[0]['content'].splitlines()[0]!r}")
        print(f"demo sent as: {sent[2]['content']}")
        lm.close()


if __name__ == "__main__":
    main()
