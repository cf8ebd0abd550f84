"""Root-level outputs: a list, a union, a model as the whole answer, typed, all offline.

Run: ``python examples/15_root_outputs.py``. The stand-in checks each schema against the OpenAI
strict rules; the value travels as the property ``output`` of the response object.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class LineItem(BaseModel):
    name: str
    quantity: int


class Refund(BaseModel):
    amount: float
    currency: Literal["EUR", "USD"]


class Escalate(BaseModel):
    team: Literal["billing", "legal"]


class Triage(ts.Returns[Refund | Escalate]):
    """Decide what to do with the customer's message."""

    message: str = ts.InputField()


def main() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        server.enqueue(json.dumps({"output": [{"name": "apple", "quantity": 2}]}))
        items: list[LineItem] = ts.Predict("text", output=list[LineItem], lm=lm)(
            text="two apples"
        ).outputs.output
        print(f"output=list[LineItem]: {items}")
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
        print(f"  sent as an object: properties {list(schema['properties'])}")

        decision = ts.Predict(Triage, lm=lm)(message="I was charged twice").outputs.output
        match decision:  # Refund | Escalate to mypy and pyright
            case Refund(amount=amount, currency=currency):
                print(f"Returns[Refund | Escalate]: refund {amount} {currency}")
            case Escalate(team=team):
                print(f"Returns[Refund | Escalate]: escalate to {team}")

        server.enqueue(json.dumps({"reasoning": "17 * 3 = 51", "output": 51}))
        cot = ts.ChainOfThought("question", output=int, lm=lm)(question="What is 17 * 3?")
        print(f"ChainOfThought(output=int): {cot.outputs.output} ({cot.reasoning})")
        lm.close()

    try:
        ts.Predict("message -> Refund | Escalate")
    except ts.SchemaError as exc:
        print(f"a type where a name goes: {exc}")


if __name__ == "__main__":
    main()
