"""ReAct's stream events: tool calls as they run, and the partial outputs of a streamed ``finish``.

A native step streams its completion when the run streams. The tool calls of a step run once
the step's completion is complete (their arguments must be whole), each between a
`ToolCallStarted` and a `ToolCallFinished`. The arguments of a ``finish`` call are the task's
outputs, so while they arrive they are parsed like `Predict`'s output: `OutputDelta` and
`PartialPrediction` events. Should that ``finish`` fail validation, the run goes on and a later
``finish`` streams its partial outputs afresh.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

from typedspy import callbacks
from typedspy.lm._base import BaseLM, LMRequest, LMResponse
from typedspy.lm._stream import StreamAccumulator
from typedspy.modules._attempts import parsed_events
from typedspy.modules._react_steps import FINISH
from typedspy.modules._trajectory import TrajectoryCall
from typedspy.parse._partial import PartialParser
from typedspy.signature import Signature
from typedspy.streaming import StreamEvent, ToolCallFinished, ToolCallStarted, closing

__all__ = ["finished", "native_response", "started"]


def started(call: TrajectoryCall) -> ToolCallStarted:
    """The event before ``call`` runs; its arguments decoded when they are a JSON object."""
    arguments: Mapping[str, Any] | str = call.arguments
    try:
        decoded = json.loads(call.arguments)
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        arguments = decoded
    return ToolCallStarted(call.id, call.name, arguments)


def finished(call: TrajectoryCall, failed: bool) -> ToolCallFinished:
    """The event after ``call`` ran (or was refused): what the model will read."""
    return ToolCallFinished(call.id, call.name, call.observation or "", error=failed)


async def native_response(
    lm: BaseLM, request: LMRequest, signature: type[Signature], *, stream: bool
) -> AsyncIterator[StreamEvent | LMResponse]:
    """A native step's completion: its ``finish`` partials when streaming, then the response."""
    if not stream:
        yield await callbacks.complete(lm, request)
        return
    accumulator = StreamAccumulator(lm.model)
    parser: PartialParser | None = None
    finish: int | None = None
    async with closing(callbacks.stream(lm, request, accumulator)) as chunks:
        async for chunk in chunks:
            for piece in chunk.tool_calls:
                if finish is None and accumulator.call_name(piece.index) == FINISH:
                    finish, parser = piece.index, PartialParser(signature)
                if parser is not None and piece.index == finish and piece.arguments:
                    for event in parsed_events(parser, piece.arguments):
                        yield event
    if parser is not None:
        for event in parsed_events(parser, None):
            yield event
    yield accumulator.response()
