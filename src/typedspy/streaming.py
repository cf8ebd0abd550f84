"""Stream events: what `Module.astream` / `Module.stream` yield while a call runs.

Every stream ends with the final `typedspy.Prediction`, equal to what the non-streaming call
returns for the same completion.

Example:
    ```python
    async for event in ts.Predict(Decide).astream(task="Ship it"):
        match event:
            case OutputDelta(field=name, text=text): print(name, text, end="")
            case PartialPrediction(values=values): render(values)
            case ts.Prediction(): final = event
    ```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy._types import FieldError

__all__ = [
    "OutputDelta",
    "PartialPrediction",
    "RetryStarted",
    "StreamEvent",
    "ToolCallFinished",
    "ToolCallStarted",
]


@dataclass(frozen=True)
class OutputDelta:
    """Raw text as it arrives, attributed to the output field it belongs to.

    ``field`` is ``None`` for text outside any field (whitespace, a fence, prose).
    """

    field: str | None
    text: str


@dataclass(frozen=True)
class PartialPrediction:
    """The outputs parsed so far, emitted whenever a field's parsed value changes.

    Attributes:
        values: Completed fields as validated typed values, and the field in progress as a
            partial value: for a union or model field, an instance of the member class (named
            by ``_type``) built, unvalidated, from the keys seen so far.
        in_progress: The name of the field still being written, if any.
    """

    values: Mapping[str, Any]
    in_progress: str | None = None


@dataclass(frozen=True)
class ToolCallStarted:
    """An orchestrator is about to run a tool."""

    call_id: str
    name: str
    arguments: Mapping[str, Any] | str


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call ended; ``observation`` is what the model will see."""

    call_id: str
    name: str
    observation: str
    error: bool = False


@dataclass(frozen=True)
class RetryStarted:
    """An attempt failed validation at its end; the next attempt starts streaming now."""

    attempt: int
    errors: tuple[FieldError, ...] = field(default_factory=tuple)


StreamEvent = OutputDelta | PartialPrediction | ToolCallStarted | ToolCallFinished | RetryStarted
"""Every event type except the final `Prediction`."""
