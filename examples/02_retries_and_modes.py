"""Retries with feedback, typed failures, and the auto fallback, all offline.

Run: ``python examples/02_retries_and_modes.py``. The stand-in server is scripted: its first
answer breaks the contract, so you can see the feedback turn typedspy sends back, then a fixed
answer; a second server refuses ``json_schema`` to show ``mode="auto"`` stepping down once.
Last, a misspelt request parameter is refused and an endpoint's own one sent via ``extra_body``.
"""

from __future__ import annotations

import json
import logging
from typing import Literal

from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class Refund(BaseModel):
    amount: float
    currency: Literal["EUR", "USD"]


class Escalate(BaseModel):
    team: Literal["billing", "legal"]
    reason: str


class Triage(ts.Signature):
    """Decide what to do with the customer's message."""

    message: str = ts.InputField()
    decision: Refund | Escalate = ts.OutputField()
    urgency: int = ts.OutputField(ge=1, le=5)


MESSAGE = "I was charged twice for order 1182, please fix it today."


def retry_with_feedback() -> None:
    print("== a wrong answer, the feedback turn, then a fixed answer")
    bad = {"decision": {"_type": "Refund", "amount": "twelve", "currency": "GBP"}, "urgency": 9}
    good = {"decision": {"_type": "Refund", "amount": 12.5, "currency": "EUR"}, "urgency": 4}
    with StandIn() as server:
        server.enqueue(json.dumps(bad), json.dumps(good))
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        pred = ts.Predict(Triage, lm=lm)(message=MESSAGE)
        feedback = server.requests[1]["messages"][-1]["content"]
        lm.close()
    print("feedback sent on the retry:")
    print("  " + feedback.split("\nReply again")[0].replace("\n", "\n  "))
    print(f"result: {pred.decision!r}, urgency {pred.urgency}, after {len(pred.attempts)} attempts")


def typed_failure() -> None:
    print("\n== every attempt wrong: the typed failure, returned as a value by try_call")
    bad = json.dumps({"decision": {"_type": "Escalate", "team": "sales"}, "urgency": 3})
    with StandIn() as server:
        server.enqueue(bad, bad)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        outcome = ts.Predict(Triage, lm=lm, max_retries=1).try_call(message=MESSAGE)
        lm.close()
    assert isinstance(outcome, ts.errors.OutputValidationError)
    print(f"{type(outcome).__name__} after {len(outcome.attempts)} attempts:")
    for error in outcome.errors:
        print(f"  {error}")
    print(f"tokens spent across attempts: {outcome.usage.total_tokens}")


def auto_fallback() -> None:
    print("\n== an endpoint without json_schema: auto steps down once and remembers")
    with StandIn(supports_json_schema=False) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        predict = ts.Predict(Triage, lm=lm)
        for _ in range(2):
            predict(message=MESSAGE)
        formats = [(r.get("response_format") or {}).get("type") for r in server.requests]
        lm.close()
    print(f"response_format per request: {formats}; remembered mode: {lm.profile.auto_mode()}")


def request_parameters() -> None:
    print("\n== request parameters: checked by name; an endpoint's own ones through extra_body")
    try:
        ts.Predict(Triage, temprature=0)
    except ts.ConfigurationError as exc:
        print(f"refused: {str(exc).split(' A parameter')[0]}")
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        ts.Predict(Triage, lm=lm, temperature=0, extra_body={"top_k": 40})(message=MESSAGE)
        sent = server.requests[0]
        lm.close()
    print(f"sent: temperature={sent['temperature']}, top_k={sent['top_k']}")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="log: %(message)s")
    retry_with_feedback()
    typed_failure()
    auto_fallback()
    request_parameters()
