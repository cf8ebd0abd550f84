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
from typedspy._types import Attempt, FailureKind, FieldError, Usage
from typedspy.adapter import Mode, output_schema
from typedspy.engine._failures import (
    TRUNCATION_KINDS,
    enforcement_kind,
    log_failure,
    remedy_turn,
    runaway_remedy,
    truncation_kind,
)
from typedspy.engine._finish import ends_call, raise_for_finish, truncation_error
from typedspy.engine._send import content, first_call_arguments, send
from typedspy.errors import (
    OutputDecodeError,
    OutputError,
    OutputValidationError,
    TokenBudgetExceededError,
    TruncatedOutputError,
)
from typedspy.lm import BaseLM, ChatMessage, LMRequest, LMResponse, RequestBound, ToolCall
from typedspy.parse import ParseFailure, ParseResult, parse_outputs, split_reasoning
from typedspy.prediction import Prediction
from typedspy.retry import RetryableFailure, RetryPolicy, feedback_messages
from typedspy.signature import Signature
from typedspy.streaming import RetryStarted, StreamEvent, closing

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
    params: dict[str, Any] = field(default_factory=dict)  # a remedy's, over the request's
    remedied: set[str] = field(default_factory=set)  # runaway kinds already re-asked once
    undecoded: set[int] = field(default_factory=set)  # attempts with no decodable JSON
    requests: RequestBound | None = None  # max_requests over the call (ADR-029)

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
        last = plan.attempts[-1]
        if last.kind in TRUNCATION_KINDS:  # the remedy was the last retry allowed
            raise _truncated(plan, last.raw, last.kind) from None
        all_decode = all(a.number in plan.undecoded for a in plan.attempts)
        raise _output_error(
            OutputDecodeError if all_decode else OutputValidationError, plan, result.errors
        ) from None


def _recorded(plan: CallPlan, before: int) -> Attempt | None:
    return plan.attempts[-1] if len(plan.attempts) > before else None


async def _attempt(plan: CallPlan, number: int, stream: bool) -> AsyncIterator[Event]:
    request = replace(
        plan.request,
        messages=plan.request.messages + tuple(plan.feedback),
        params={**plan.request.params, **plan.params},
    )
    response: LMResponse | None = None
    tools = plan.mode == "tools"
    sent = send(
        plan.lm,
        request,
        plan.signature,
        stream=stream,
        pick=first_call_arguments if tools else content,
        # The final parse splits reasoning off the content only, never off a tool call's.
        reasoning_tags=None if tools else plan.lm.profile.reasoning_tags,
        requests=plan.requests,
    )
    async with closing(sent) as items:
        async for item in items:
            if isinstance(item, LMResponse):
                response = item
            else:
                yield item
    assert response is not None
    text, tool_call = _reply_text(response, plan.mode)
    reasoning = response.reasoning
    if text is not None and tool_call is None:
        text, inline = split_reasoning(text, plan.lm.profile.reasoning_tags)
        reasoning = reasoning if inline is None else inline
    _raise_for_finish(plan, number, response, text, reasoning)
    result = _parse(plan.signature, text, response, plan.lm.max_json_depth)
    if response.finish_reason == "length":  # a whitespace loop after a complete output
        log_failure(plan.lm, plan.signature.__name__, number, "whitespace_loop", "used the JSON")
        plan.lm.profile.observe("whitespace_loop")
    schema = output_schema(plan.signature, plan.mode, plan.lm.profile).schema
    kind = _classify(plan, number, text, result, schema)
    attempt = Attempt(number, text or "", result.errors, response.usage, kind, reasoning)
    plan.attempts.append(attempt)
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
    assert result.kind is not None  # the feedback says what the parser saw
    # The schema goes in the feedback only where the prompt shows it too: response_format or
    # the tool already carries it, and restating it doubled a large union's retry request.
    hint = schema if plan.lm.profile.hint_schema(plan.mode) else None
    plan.feedback = feedback_messages(text or "", tool_call, result.kind, result.errors, hint)
    raise RetryableFailure(result)


def _classify(
    plan: CallPlan, number: int, text: str | None, result: ParseResult, schema: dict[str, Any]
) -> FailureKind | None:
    """The failure kind of a parsed attempt (``None`` when it succeeded)."""
    if result.kind is None:
        return None
    if result.kind == "decode_failed":
        plan.undecoded.add(number)
    profile = plan.lm.profile
    kind = enforcement_kind(profile, plan.mode, text, schema, result.kind)
    if kind == "not_enforced":
        first = "not_enforced" not in profile.observed
        profile.observe("not_enforced")
        if first:
            what = "the reply violates the schema the server accepted"
            log_failure(plan.lm, plan.signature.__name__, number, kind, what)
    return kind


def _raise_for_finish(
    plan: CallPlan, number: int, response: LMResponse, text: str | None, reasoning: str | None
) -> None:
    """Refusal, truncation and filtering end the call: asking again the same way fixes none.

    A truncation is classified first. A whitespace loop whose text holds a complete output
    returns, to be parsed. A runaway completion gets the profile's one re-ask (raised as a
    `RetryableFailure`, so the retry bound holds); anything else raises.
    """
    if not ends_call(response):
        return
    name = plan.signature.__name__
    if response.refusal is None and response.finish_reason == "length":
        kind = truncation_kind(text)
        if (
            kind == "whitespace_loop"
            and text
            and parse_outputs(plan.signature, text, max_json_depth=plan.lm.max_json_depth).ok
        ):
            return
        failure = FieldError((), f"cut off at the token limit: {kind}")
        cut = Attempt(number, text or "", (failure,), response.usage, kind, reasoning)
        plan.attempts.append(cut)
        remedy = runaway_remedy(plan.lm, name, number, kind, plan.remedied)
        if remedy is not None:
            plan.feedback = [remedy_turn(remedy)]
            plan.params.update(remedy.params)
            raise RetryableFailure(ParseResult(error=ParseFailure("decode_failed", (failure,))))
        raise _truncated(plan, text or "", kind)
    plan.attempts.append(Attempt(number, text or "", (), response.usage, None, reasoning))
    attempts, usage = tuple(plan.attempts), plan.usage
    raise_for_finish(
        name, response, what="the completion", usage=usage, attempts=attempts, raw=text or ""
    )


def _truncated(plan: CallPlan, raw: str, kind: FailureKind | None) -> TruncatedOutputError:
    tokens = plan.attempts[-1].usage.completion_tokens if plan.attempts else 0
    return truncation_error(
        plan.signature.__name__,
        "the completion",
        tokens,
        kind or "truncated",
        attempts=tuple(plan.attempts),
        usage=plan.usage,
        raw=raw,
    )


def _reply_text(response: LMResponse, mode: Mode) -> tuple[str | None, ToolCall | None]:
    if mode == "tools" and response.tool_calls:
        call = response.tool_calls[0]
        return call.arguments, call
    return response.text, None


def _parse(
    sig: type[Signature], text: str | None, response: LMResponse, max_json_depth: int
) -> ParseResult:
    if text is not None:
        return parse_outputs(sig, text, max_json_depth=max_json_depth)
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
