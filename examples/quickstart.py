"""Quickstart: predict the DSPy.rb agent signature and print typed results.

Run with ``python examples/quickstart.py``. With OPENAI_API_KEY (or OPENAI_BASE_URL) set it calls
that endpoint (model from TYPEDSPY_MODEL, default gpt-4o-mini); otherwise it starts typedspy's
offline stand-in server and says so.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Literal

from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class SpawnTask(BaseModel):
    """Start a new sub-task."""

    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    """Mark a task as done."""

    task_id: str
    result: str


class Continue(BaseModel):
    """Keep working on the current task."""

    reason: str


class Decide(ts.Signature):
    """Decide the agent's next action."""

    task: str = ts.InputField(description="what the user asked for")
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


def main() -> None:
    with ExitStack() as stack:
        if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
            lm = ts.LM(os.environ.get("TYPEDSPY_MODEL", "gpt-4o-mini"))
            print(f"online: calling {lm!r}")
        else:
            server = stack.enter_context(StandIn())
            lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
            print(
                "offline: OPENAI_API_KEY and OPENAI_BASE_URL are not set, so this runs against "
                f"typedspy's bundled stand-in server at {server.base_url} (answers are "
                "schema-valid placeholders, not a real model)"
            )
        ts.configure(lm=lm)
        decide = ts.Predict(Decide)
        for task in ("Ship the release", "Fix the flaky test", "Write the changelog"):
            pred = decide(task=task)
            match pred.action:
                case SpawnTask(priority=priority):
                    kind = f"spawn a {priority}-priority task"
                case CompleteTask(task_id=task_id):
                    kind = f"complete task {task_id}"
                case Continue():
                    kind = "continue"
            print(f"{task!r}: {kind} (confidence {pred.confidence:.2f})")
            print(f"  {type(pred.action).__name__}: {pred.to_dict()['action']}")
            print(f"  tokens: {pred.usage.total_tokens} in {len(pred.attempts)} attempt(s)")


if __name__ == "__main__":
    main()
