"""A fallback chain over two offline servers: outages, rate limits, bad outputs, a full window.

Run: ``python examples/09_fallbacks.py``. Two stand-in servers play a primary and a secondary
endpoint. The primary fails in four ways (503s, a 429, an output that fails validation, a
request past its context window); each time the chain moves to the secondary, and the
prediction says who answered. Request counts are
read from the servers: each layer retries only its own kind of failure.
"""

from __future__ import annotations

import json

import typedspy as ts
from typedspy.testing import Reply, StandIn

FAST = {"retry-after-ms": "1"}
# What OpenAI (and llama-cpp-python) answer to a request past the model's context window.
TOO_LONG = Reply(
    status=400,
    error={
        "message": "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    },
)


class Add(ts.Signature):
    """Add the numbers."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


def main() -> None:
    with StandIn() as primary_server, StandIn() as secondary_server:
        primary = ts.LM("big", base_url=primary_server.base_url, api_key="k", max_retries=1)
        secondary = ts.LM("small", base_url=secondary_server.base_url, api_key="k")
        on: set[ts.lm.Trigger] = {"transport", "rate_limit", "validation", "context_length"}
        lm = ts.LM.fallback(primary, secondary, on=on)
        add = ts.Predict(Add, lm=lm, max_retries=1)

        primary_server.enqueue(Reply(status=503, headers=FAST), Reply(status=503, headers=FAST))
        primary_server.enqueue(Reply(status=429, headers=FAST), Reply(status=429, headers=FAST))
        primary_server.enqueue(json.dumps({"answer": "four"}), json.dumps({"answer": "four"}))
        primary_server.enqueue(TOO_LONG, json.dumps({"answer": 4}))
        secondary_server.enqueue(*[json.dumps({"answer": 4})] * 4)
        for case in ("503 twice", "429 twice", "invalid twice", "window full", "healthy"):
            pred = add(question="2 + 2?")
            trace = pred.extras["fallback"]
            why = ", ".join(f"{s.model}: {s.trigger}" for s in trace.skipped) or "-"
            print(f"{case:>13}: answer={pred.answer} by {trace.model} (skipped {why})")
        print(
            "requests: primary",
            len(primary_server.requests),
            "secondary",
            len(secondary_server.requests),
        )
        primary.close()
        secondary.close()


if __name__ == "__main__":
    main()
