"""ReAct's stream events: tool calls as they run, and the partial outputs of a streamed ``finish``.

A native step streams its completion when the run streams. The tool calls of a step run once
the step's completion is complete (their arguments must be whole), each between a
`ToolCallStarted` and a `ToolCallFinished`. The arguments of a ``finish`` call are the task's
outputs, so while they arrive they are parsed like `Predict`'s output: `OutputDelta` and
`PartialPrediction` events. Should that ``finish`` fail validation, the run goes on and a later
``finish`` streams its partial outputs afresh.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from typedspy._json import loads as bounded_loads
from typedspy.engine import Pick, send
from typedspy.lm import BaseLM, LMChunk, LMRequest, LMResponse, StreamAccumulator
from typedspy.react._steps import FINISH
from typedspy.react._trajectory import TrajectoryCall
from typedspy.signature import Signature
from typedspy.streaming import StreamEvent, ToolCallFinished, ToolCallStarted

__all__ = ["finished", "native_response", "started"]


def started(call: TrajectoryCall) -> ToolCallStarted:
    """The event before ``call`` runs; its arguments decoded when they are a JSON object."""
    arguments: Mapping[str, Any] | str = call.arguments
    try:
        decoded = bounded_loads(call.arguments)  # nesting bounded: the model wrote it
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        arguments = decoded
    return ToolCallStarted(call.id, call.name, arguments)


def finished(call: TrajectoryCall, failed: bool) -> ToolCallFinished:
    """The event after ``call`` ran (or was refused): what the model will read."""
    return ToolCallFinished(call.id, call.name, call.observation or "", error=failed)


def native_response(
    lm: BaseLM, request: LMRequest, signature: type[Signature], *, stream: bool
) -> AsyncIterator[StreamEvent | LMResponse]:
    """A native step's completion: its ``finish`` partials when streaming, then the response."""
    return send(lm, request, signature, stream=stream, pick=_finish_arguments())


def _finish_arguments() -> Pick:
    """Picks the arguments of the step's first ``finish`` call: the task's outputs."""
    finish: int | None = None

    def pick(chunk: LMChunk, accumulator: StreamAccumulator) -> str:
        nonlocal finish
        pieces: list[str] = []
        for piece in chunk.tool_calls:
            if finish is None and accumulator.call_name(piece.index) == FINISH:
                finish = piece.index
            if piece.index == finish:
                pieces.append(piece.arguments)
        return "".join(pieces)

    return pick
