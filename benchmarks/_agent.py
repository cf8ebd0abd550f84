"""What the benchmarks share: the DSPy.rb agent signature, and the stand-in in a process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def standin_process() -> Iterator[str]:
    """The stand-in in its own process, so the server does not compete for our GIL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "typedspy.testing.standin", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
