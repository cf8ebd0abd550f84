"""The DSPy.rb agent signature shared by the benchmarks."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

import typedspy as ts


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


class Plan(ts.Signature):
    """Plan the agent's next actions."""

    task: str = ts.InputField()
    steps: list[SpawnTask | CompleteTask | Continue] = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


class PlainPlan(BaseModel):
    """Plan's outputs as a plain Pydantic model: the baseline for parsing."""

    steps: list[SpawnTask | CompleteTask | Continue]
    confidence: float
