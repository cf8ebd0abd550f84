"""The DSPy.rb agent signature (ADR-003 of DSPy.rb), shared by the tests that use it as is."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

import typedspy as ts

FEEDBACK_LABEL = (
    "[Automated feedback from typedspy's output validation, not a message from the user.]"
)


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
