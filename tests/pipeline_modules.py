"""A composite module (predictors in attributes, lists and dicts) shared by the module tests.

Defined at module level in an importable module, so instances pickle by reference.
"""

from __future__ import annotations

import datetime
from typing import Any

from pydantic import BaseModel

import typedspy as ts


class Exact(BaseModel):
    value: float


class Estimate(BaseModel):
    low: float
    high: float


class Owner(BaseModel):
    name: str


class Measure(ts.Signature):
    """Measure the quantity."""

    question: str = ts.InputField()
    day: datetime.date = ts.InputField()
    result: Exact | Estimate = ts.OutputField()
    owner: Owner = ts.OutputField()


class Summarize(ts.Signature):
    """Summarize the text."""

    text: str = ts.InputField()
    summary: str = ts.OutputField()


class Check(ts.Signature):
    """Check the claim."""

    claim: str = ts.InputField()
    ok: bool = ts.OutputField()


class Inner(ts.Module):
    def __init__(self) -> None:
        self.check = ts.Predict(Check)


class Pipeline(ts.Module):
    def __init__(self, lm: ts.lm.BaseLM | None = None) -> None:
        self.measure = ts.Predict(Measure, lm=lm, mode="json_schema")
        self.steps = [ts.ChainOfThought(Summarize, lm=lm, mode="json_schema"), Inner()]
        self.experts = {"checker": ts.Predict(Check, lm=lm, mode="json_schema")}
        self.label = "not a module"

    async def aforward(self, *, question: str) -> dict[str, Any]:
        measured = await self.measure.acall(question=question, day=datetime.date(2024, 5, 1))
        summary = await self.steps[0].acall(text=str(measured.result))
        return {"result": measured.result, "summary": summary.summary}
