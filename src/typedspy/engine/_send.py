"""Send or stream one completion: the one place a module call reaches the pipeline (ADR-009).

Without streaming, one request and its `LMResponse`. With streaming, the chunks are added up
into the same `LMResponse` by a `StreamAccumulator`, and the output text they carry is parsed as
it arrives into `OutputDelta` / `PartialPrediction` events. Which text is the output differs by
caller (the content, a forced tool call's arguments, ReAct's ``finish`` arguments): the caller
passes a `Pick`, and the reasoning tags the final parse splits off that text, if any.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from typedspy import pipeline
from typedspy.lm import BaseLM, LMChunk, LMRequest, LMResponse, RequestBound, StreamAccumulator
from typedspy.parse import PartialParser, ReasoningSplitter
from typedspy.signature import Signature
from typedspy.streaming import OutputDelta, PartialPrediction, StreamEvent, closing

__all__ = ["Pick", "content", "first_call_arguments", "parsed_events", "send"]

Pick = Callable[[LMChunk, StreamAccumulator], str]
"""The output text in one chunk ("" for none), given the accumulator that has seen it."""


def content(chunk: LMChunk, accumulator: StreamAccumulator) -> str:
    """The chunk's content: the output text of every mode but ``tools``."""
    del accumulator
    return chunk.text


def first_call_arguments(chunk: LMChunk, accumulator: StreamAccumulator) -> str:
    """The chunk's part of the first tool call's arguments: the output of ``tools`` mode."""
    del accumulator  # calls come numbered as they started (`StreamAccumulator.add`): 0 is first
    return "".join(c.arguments for c in chunk.tool_calls if c.index == 0)


async def send(
    lm: BaseLM,
    request: LMRequest,
    signature: type[Signature],
    *,
    stream: bool,
    pick: Pick = content,
    reasoning_tags: tuple[str, str] | None = None,
    requests: RequestBound | None = None,
    attempt: int = 0,
) -> AsyncIterator[StreamEvent | LMResponse]:
    """The response to ``request``, last; when streaming, the partial-output events before it.

    A parser is started at the first output text `pick` finds, so a streamed reply without any
    (a tool call in ReAct) yields the response alone. A leading block between
    ``reasoning_tags`` is split off that text first, as the final parse splits it (ADR-027):
    its text comes as `OutputDelta` of no field and never reaches the parser. ``requests``
    bounds the HTTP requests sent, transport retries included (ADR-029); ``attempt`` is the
    call's attempt this request is (the history shows it). The request goes through the
    pipeline's stages (`typedspy.pipeline`).
    """
    if not stream:
        yield await pipeline.complete(lm, request, requests=requests, attempt=attempt)
        return
    accumulator = StreamAccumulator(lm.model)
    output = _Output(signature, lm.max_json_depth, reasoning_tags)
    chunks_sent = pipeline.stream(lm, request, accumulator, requests=requests, attempt=attempt)
    async with closing(chunks_sent) as chunks:
        async for chunk in chunks:
            piece = pick(chunk, accumulator)
            if piece:
                for event in output.events(piece):
                    yield event
    for event in output.events(None):
        yield event
    yield accumulator.response()


class _Output:
    """A stream's output text as events: a leading reasoning block set aside, the rest parsed."""

    def __init__(
        self, signature: type[Signature], max_json_depth: int, tags: tuple[str, str] | None
    ) -> None:
        self._signature = signature
        self._depth = max_json_depth
        self._splitter = ReasoningSplitter(tags)
        self._parser: PartialParser | None = None

    def events(self, piece: str | None) -> list[StreamEvent]:
        """The events a piece of output text makes (``None``: the stream ended)."""
        aside, answer = self._splitter.feed(piece) if piece is not None else self._splitter.flush()
        events: list[StreamEvent] = [OutputDelta(None, aside)] if aside else []
        if answer:
            if self._parser is None:
                self._parser = PartialParser(self._signature, max_json_depth=self._depth)
            events += parsed_events(self._parser, answer)
        if piece is None and self._parser is not None:
            events += parsed_events(self._parser, None)
        return events


def parsed_events(parser: PartialParser, piece: str | None) -> list[StreamEvent]:
    """The events one piece of output text makes (``None``: the text held back at the end).

    An `OutputDelta` per field the piece touches, then a `PartialPrediction` when the values
    changed (a field completing, and so now validated, counts as a change).
    """
    segments = parser.feed(piece) if piece is not None else parser.flush()
    events: list[StreamEvent] = [OutputDelta(name, text) for name, text in segments]
    values = parser.news()
    if values is not None:
        events.append(PartialPrediction(values, parser.current, parser.signature))
    return events
