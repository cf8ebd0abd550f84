"""Think, then format: the model answers in its own words, then a second request under the
strict schema writes that answer as the typed outputs (ADR-086).

Small open-weight models lose accuracy when the format is asked for together with the answer;
``mode="think_then_format"`` asks for the answer first (no schema, no ``response_format``) and
for the format second. Only the second request is validated and retried with feedback.

Offline: the bundled stand-in server answers (scripted here: a free answer, then an output
whose priority is out of range, then the fixed one).
Run: python examples/19_think_then_format.py
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class Fix(BaseModel):
    summary: str
    priority: Literal["low", "high"]


class Triage(ts.Signature):
    """Triage the bug report: what to fix, and how soon."""

    report: str = ts.InputField()
    fix: Fix = ts.OutputField()
    hours: int = ts.OutputField(ge=0, description="estimated hours of work")


REPORT = "Checkout fails for every customer paying by card since this morning's deploy."
DRAFT = (
    "The deploy broke card payments at checkout, so nobody can pay: revert it or patch the "
    "payment call. That is urgent, high priority; about 2 hours including a test."
)
FIX = {"summary": "revert or patch the card payment call at checkout", "priority": "high"}

with StandIn() as server:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline", temperature=0)
    triage = ts.Predict(Triage, lm=lm, mode="think_then_format")

    first = triage.render(report=REPORT)  # the first request: no response_format
    print("first request has response_format:", "response_format" in first)

    server.enqueue(
        DRAFT,
        json.dumps({"fix": {**FIX, "priority": "urgent"}, "hours": 2}),  # not a priority
        json.dumps({"fix": FIX, "hours": 2}),
    )
    pred = triage(report=REPORT)
    print("draft:", pred.free_answer)
    print("fix:", pred.outputs.fix, "hours:", pred.outputs.hours)
    print("requests:", [("schema" if "response_format" in r else "free") for r in server.requests])
    print("attempts:", [a.kind for a in pred.attempts], "tokens:", pred.usage.total_tokens)
    second = server.requests[1]["messages"]
    print(
        "the second request carries the draft:",
        second[-2] == {"role": "assistant", "content": DRAFT},
    )
    lm.close()
