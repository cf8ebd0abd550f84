"""One call of a signature against a model: attempts, streaming events, retry with feedback.

This is the single execution path for streaming and non-streaming calls (ADR-009): an async
generator of events whose last item is the `Prediction`. Without streaming it sends one plain
request per attempt and yields no partial events; with streaming it consumes chunks, yields
`OutputDelta`/`PartialPrediction` as they arrive, and validates the whole output at the end in
exactly the same way.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

from typedspy import callbacks
from typedspy._types import Attempt, FieldError, Usage
from typedspy.adapter import Mode, output_schema
from typedspy.errors import (
    ContentFilterError,
    OutputDecodeError,
    OutputError,
    OutputValidationError,
    RefusalError,
    TokenBudgetExceededError,
    TruncatedOutputError,
)
from typedspy.lm._base import BaseLM, ChatMessage, LMRequest, LMResponse, ToolCall
from typedspy.lm._stream import StreamAccumulator
from typedspy.parse import ParseFailure, ParseResult, parse_outputs
from typedspy.parse._partial import PartialParser
from typedspy.prediction import Prediction
from typedspy.retry import RetryableFailure, RetryPolicy, feedback_messages
from typedspy.signature import Signature
from typedspy.streaming import OutputDelta, PartialPrediction, RetryStarted, StreamEvent, closing

__all__ = ["CallPlan", "run_call"]

Event = StreamEvent | Prediction[Any]


@dataclass
class CallPlan:
    """Everything one call needs, and the attempts it made."""

    signature: type[Signature]
    lm: BaseLM
    mode: Mode
    request: LMRequest
    policy: RetryPolicy
    budget: int | None = None
    attempts: list[Attempt] = field(default_factory=list)
    feedback: list[ChatMessage] = field(default_factory=list)

    @property
    def usage(self) -> Usage:
        return sum((a.usage for a in self.attempts), Usage())


async def run_call(plan: CallPlan, *, stream: bool) -> AsyncIterator[Event]:
    """Run attempts until one validates; yield events, then the `Prediction`.

    Raises:
        OutputDecodeError, OutputValidationError: Every attempt failed (after retries).
        RefusalError, TruncatedOutputError, ContentFilterError: Not retried.
        TokenBudgetExceededError: The budget ran out first.
        LMError: The endpoint could not be used.
    """
    try:
        async with closing(plan.policy.attempts()) as slots:
            async for slot in slots:
                if slot.number > 1:
                    yield RetryStarted(slot.number, plan.attempts[-1].errors)
                seen = len(plan.attempts)
                attempt_id = callbacks.attempt_start(plan.lm, slot.number)
                try:
                    async with closing(_attempt(plan, slot.number, stream)) as events:
                        async for event in events:
                            yield event
                except RetryableFailure as exc:
                    callbacks.attempt_end(attempt_id, _recorded(plan, seen), None)
                    slot.fail(exc)
                    continue
                except BaseException as exc:
                    callbacks.attempt_end(attempt_id, _recorded(plan, seen), exc)
                    raise
                callbacks.attempt_end(attempt_id, _recorded(plan, seen), None)
                return
    except RetryableFailure as exc:
        result: ParseResult = exc.failure
        all_decode = all(a.kind == "decode_failed" for a in plan.attempts)
        raise _output_error(
            OutputDecodeError if all_decode else OutputValidationError, plan, result.errors
        ) from None


def _recorded(plan: CallPlan, before: int) -> Attempt | None:
    return plan.attempts[-1] if len(plan.attempts) > before else None


async def _attempt(plan: CallPlan, number: int, stream: bool) -> AsyncIterator[Event]:
    request = replace(plan.request, messages=plan.request.messages + tuple(plan.feedback))
    if stream:
        response: LMResponse | None = None
        async with closing(_streamed(plan, request)) as items:
            async for item in items:
                if isinstance(item, LMResponse):
                    response = item
                else:
                    yield item
        assert response is not None
    else:
        response = await callbacks.complete(plan.lm, request)
    text, tool_call = _reply_text(response, plan.mode)
    _raise_for_finish(plan, number, response, text)
    result = _parse(plan.signature, text, response)
    plan.attempts.append(Attempt(number, text or "", result.errors, response.usage, result.kind))
    if result.ok:
        assert result.value is not None
        yield Prediction(
            plan.signature,
            result.value,
            attempts=tuple(plan.attempts),
            raw=text or "",
            completion=response,
        )
        return
    if plan.budget is not None and plan.usage.total_tokens >= plan.budget:
        raise _output_error(TokenBudgetExceededError, plan, result.errors, budget=plan.budget)
    schema = output_schema(plan.signature, plan.mode, plan.lm.profile).schema
    assert result.kind is not None
    plan.feedback = feedback_messages(text or "", tool_call, result.kind, result.errors, schema)
    raise RetryableFailure(result)


async def _streamed(plan: CallPlan, request: LMRequest) -> AsyncIterator[StreamEvent | LMResponse]:
    """Stream one completion: its deltas and partial outputs, then the `LMResponse` it adds up to.

    The output text is the content, or in ``tools`` mode the arguments of the first tool call
    (the one `_reply_text` reads).
    """
    accumulator = StreamAccumulator(plan.lm.model)
    parser = PartialParser(plan.signature)
    async with closing(callbacks.stream(plan.lm, request, accumulator)) as chunks:
        async for chunk in chunks:
            if plan.mode == "tools":
                first = accumulator.first_call
                piece = "".join(c.arguments for c in chunk.tool_calls if c.index == first)
            else:
                piece = chunk.text
            if piece:
                for event in parsed_events(parser, piece):
                    yield event
    for event in parsed_events(parser, None):
        yield event
    yield accumulator.response()


def parsed_events(parser: PartialParser, piece: str | None) -> list[StreamEvent]:
    """The events one piece of output text makes (``None``: the text held back at the end).

    An `OutputDelta` per field the piece touches, then a `PartialPrediction` when the values
    changed (a field completing, and so now validated, counts as a change).
    """
    segments = parser.feed(piece) if piece is not None else parser.flush()
    events: list[StreamEvent] = [OutputDelta(name, text) for name, text in segments]
    values = parser.news()
    if values is not None:
        events.append(PartialPrediction(values, parser.current))
    return events


def _raise_for_finish(plan: CallPlan, number: int, response: LMResponse, text: str | None) -> None:
    """Refusal, truncation and filtering end the call: asking again does not fix them."""
    reason = response.finish_reason
    if response.refusal is None and reason not in ("length", "content_filter"):
        return
    plan.attempts.append(Attempt(number, text or "", (), response.usage, None))
    attempts, usage = tuple(plan.attempts), plan.usage
    name = plan.signature.__name__
    if response.refusal is not None:
        raise RefusalError(
            f"{name}: the model refused: {response.refusal}",
            refusal=response.refusal,
            attempts=attempts,
            usage=usage,
        )
    if reason == "length":
        raise TruncatedOutputError(
            f"{name}: the completion hit the token limit after "
            f"{response.usage.completion_tokens} tokens; raise max_tokens or shorten the "
            f"output (retrying would truncate again)",
            attempts=attempts,
            usage=usage,
            raw=text or "",
        )
    raise ContentFilterError(
        f"{name}: the provider's content filter stopped the completion",
        attempts=attempts,
        usage=usage,
        raw=text or "",
    )


def _reply_text(response: LMResponse, mode: Mode) -> tuple[str | None, ToolCall | None]:
    if mode == "tools" and response.tool_calls:
        call = response.tool_calls[0]
        return call.arguments, call
    return response.text, None


def _parse(sig: type[Signature], text: str | None, response: LMResponse) -> ParseResult:
    if text is not None:
        return parse_outputs(sig, text)
    if response.tool_calls:
        names = ", ".join(c.name for c in response.tool_calls)
        message = f"the model called {names} instead of answering with the output JSON"
    else:
        message = "the model returned no content"
    return ParseResult(error=ParseFailure("decode_failed", (FieldError((), message),)))


def _output_error(
    error_type: type[OutputError],
    plan: CallPlan,
    errors: tuple[FieldError, ...],
    budget: int | None = None,
) -> OutputError:
    attempts = tuple(plan.attempts)
    lines = "; ".join(str(e) for e in errors[:5])
    if error_type is TokenBudgetExceededError:
        head = f"token budget of {budget} spent after {len(attempts)} attempt(s)"
    else:
        head = f"no valid output after {len(attempts)} attempt(s)"
    return error_type(
        f"{plan.signature.__name__}: {head}: {lines}",
        attempts=attempts,
        usage=plan.usage,
        raw=attempts[-1].raw if attempts else "",
        errors=errors,
    )
