"""A call of a signature: its plan, the output driver of the attempt loop, its typed failures.

`plan_call` builds the request (the prompt) from the signature, inputs, demos and history.
Each attempt's reply is parsed and validated; a decode or validation failure is classified
(ADR-027) and fed back to the model, within the retry bound; the bound reached, the call raises
an `OutputError` that carries every attempt. `Predict` (and so `ChainOfThought`, LLM-backed
tools, ReAct's union steps and extraction) and Batch API files run their calls here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from typedspy._types import FailureKind, FieldError
from typedspy.adapter import Mode, build_request, output_schema, written_as_outputs
from typedspy.engine._attempts import Attempts, Done, Driver, Event, Reply, run_attempts
from typedspy.engine._failures import enforcement_kind, log_failure, remedy_turn
from typedspy.engine._send import Pick, content, first_call_arguments
from typedspy.errors import (
    OutputDecodeError,
    OutputError,
    OutputValidationError,
    TokenBudgetExceededError,
)
from typedspy.lm import BaseLM, ChatMessage, LMRequest, LMResponse, RequestBound
from typedspy.parse import ParseFailure, ParseResult, parse_outputs, split_reasoning
from typedspy.prediction import Prediction
from typedspy.profiles import LoopRemedy
from typedspy.retry import RetryableFailure, RetryPolicy, feedback_messages
from typedspy.settings import get_settings
from typedspy.signature import Signature
from typedspy.streaming import closing

if TYPE_CHECKING:
    from typedspy.engine._draft import Draft

__all__ = ["CallPlan", "plan_call", "reply_output", "request_bound", "run_call"]


@dataclass
class CallPlan(Driver[Prediction[Any]]):
    """One call of a signature: its request, mode and token budget, and its attempts."""

    signature: type[Signature]
    mode: Mode
    base: LMRequest
    attempts: Attempts
    budget: int | None = None
    what: str = "the completion"
    prediction: type[Prediction[Any]] = Prediction

    # -- the attempt loop's driver --

    def request(self) -> LMRequest:
        return self.base

    def pick(self) -> Pick:
        return first_call_arguments if self.mode == "tools" else content

    def reasoning_tags(self) -> tuple[str, str] | None:
        # The final parse splits reasoning off the content only, never off a tool call's.
        return None if self.mode == "tools" else self.attempts.lm.profile.reasoning_tags

    def output(self, response: LMResponse) -> tuple[str | None, str | None]:
        if self.mode == "tools" and response.tool_calls:
            return response.tool_calls[0].arguments, response.reasoning
        tags = self.attempts.lm.profile.reasoning_tags
        return reply_output(response.text, response.reasoning, tags)

    def usable_when_cut(self, text: str, kind: FailureKind) -> bool:
        depth = self.attempts.lm.max_json_depth
        return (
            kind == "whitespace_loop"
            and parse_outputs(self.signature, text, max_json_depth=depth).ok
        )

    def read(self, attempts: Attempts, reply: Reply) -> Done[Prediction[Any]]:
        lm = attempts.lm
        number, response, text = reply.number, reply.response, reply.text
        result = _parse(self.signature, text, response, lm.max_json_depth)
        schema = output_schema(self.signature, self.mode, lm.profile).schema
        kind = self._classify(number, text, result, schema)
        repeated = not result.ok and _repeats(attempts, text or "")
        vary = self._vary(attempts, number) if repeated else None
        if repeated and vary is None:
            kind = "repeated_reply"
        attempts.made.append(reply.attempt(result.errors, kind))
        if kind == "repeated_reply":  # asking again the same way would pay for the same answer
            undecoded = all(a.number in attempts.undecoded for a in attempts.made)
            error = OutputDecodeError if undecoded else OutputValidationError
            raise _output_error(error, self, result.errors)
        if result.ok:
            assert result.value is not None
            return Done(
                self.prediction(
                    self.signature,
                    result.value,
                    attempts=tuple(attempts.made),
                    raw=text or "",
                    completion=response,
                )
            )
        if self.budget is not None and attempts.spent.tokens >= self.budget:
            raise _output_error(TokenBudgetExceededError, self, result.errors, budget=self.budget)
        assert result.kind is not None  # the feedback says what the parser saw
        # The schema goes in the feedback only where the prompt shows it too: response_format
        # or the tool already carries it, and restating it doubled a large union's retry.
        hint = schema if lm.profile.hint_schema(self.mode) else None
        tool_call = response.tool_calls[0] if self.mode == "tools" and response.tool_calls else None
        attempts.feedback = feedback_messages(
            text or "", tool_call, result.kind, result.errors, hint
        )
        if vary is not None and vary.note:
            attempts.feedback.append(remedy_turn(vary))
        raise RetryableFailure(result)

    def _vary(self, attempts: Attempts, number: int) -> LoopRemedy | None:
        """The profile's change for a repeated reply, once per call (None: end the call)."""
        lm = attempts.lm
        remedy = lm.profile.on_repeated_reply
        name = self.signature.__name__
        if remedy is None or "repeated_reply" in attempts.remedied:
            log_failure(lm, name, number, "repeated_reply", "the same reply again: call ended")
            return None
        attempts.remedied.add("repeated_reply")
        attempts.params.update(remedy.params)
        log_failure(lm, name, number, "repeated_reply", f"asking again with {dict(remedy.params)}")
        return remedy

    def _classify(
        self, number: int, text: str | None, result: ParseResult, schema: dict[str, Any]
    ) -> FailureKind | None:
        """The failure kind of a parsed attempt (``None`` when it succeeded)."""
        if result.kind is None:
            return None
        if result.kind == "decode_failed":
            self.attempts.undecoded.add(number)
        lm = self.attempts.lm
        kind = enforcement_kind(
            lm.profile, self.mode, text, schema, result.kind, max_depth=lm.max_json_depth
        )
        if kind == "not_enforced":
            first = "not_enforced" not in lm.profile.observed
            lm.profile.observe("not_enforced")
            if first:
                what = "the reply violates the schema the server accepted"
                log_failure(lm, self.signature.__name__, number, kind, what)
        return kind


def plan_call(
    signature: type[Signature],
    lm: BaseLM,
    mode: Mode,
    inputs: Mapping[str, Any],
    history: Sequence[ChatMessage],
    *,
    demos: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
    max_retries: int | None,
    token_budget: int | None,
    prediction: type[Prediction[Any]] = Prediction,
    draft: Draft | None = None,
) -> CallPlan:
    """The `CallPlan` for one call on ``lm`` in ``mode``; unset limits come from the settings.

    With a ``draft`` (a ``think_then_format`` call's free answer, ADR-086), the request ends
    with it and the turn asking to write it as the outputs, and the call's attempts and request
    bound go on from the draft's.
    """
    settings = get_settings()
    request = build_request(
        signature,
        inputs,
        mode=mode,
        profile=lm.profile,
        demos=demos,
        history=history,
        params=params,
        defaults=lm.defaults,
    )
    retries = max_retries if max_retries is not None else settings.max_retries
    budget = token_budget if token_budget is not None else settings.token_budget
    policy = RetryPolicy(max_retries=retries, wait=settings.retry_wait)
    if draft is None:
        attempts = Attempts(lm, policy, requests=request_bound(signature))
    else:
        request = replace(request, messages=request.messages + written_as_outputs(draft.text))
        made = list(draft.made)
        attempts = Attempts(lm, policy, requests=draft.requests, made=made, spent=draft.spent)
    return CallPlan(
        signature=signature,
        mode=mode,
        base=request,
        attempts=attempts,
        budget=budget,
        prediction=prediction,
    )


async def run_call(plan: CallPlan, *, stream: bool) -> AsyncIterator[Event]:
    """Run attempts until one validates; yield events, then the `Prediction`.

    Raises:
        OutputDecodeError, OutputValidationError: Every attempt failed (after retries).
        RefusalError, TruncatedOutputError, ContentFilterError: Not retried.
        TokenBudgetExceededError: The budget ran out first.
        LMError: The endpoint could not be used.
    """
    try:
        async with closing(run_attempts(plan, plan.attempts, stream=stream)) as events:
            async for event in events:
                yield event.value if isinstance(event, Done) else event
    except RetryableFailure as exc:
        result: ParseResult = exc.failure
        all_decode = all(a.number in plan.attempts.undecoded for a in plan.attempts.made)
        raise _output_error(
            OutputDecodeError if all_decode else OutputValidationError, plan, result.errors
        ) from None


def request_bound(signature: type[Signature]) -> RequestBound | None:
    """The ``max_requests`` bound of one call (ADR-029), or None."""
    limit = get_settings().max_requests
    return None if limit is None else RequestBound(limit, signature.__name__)


def reply_output(
    text: str | None, reasoning: str | None, tags: tuple[str, str] | None
) -> tuple[str | None, str | None]:
    """A reply's content and reasoning, a leading block between ``tags`` split off the content."""
    if text is None:
        return None, reasoning
    text, inline = split_reasoning(text, tags)
    return text, reasoning if inline is None else inline


def _repeats(attempts: Attempts, text: str) -> bool:
    """Whether an earlier failed attempt of the call got this very reply, byte for byte."""
    return any(a.raw == text and a.kind in _REPLY_KINDS for a in attempts.made)


_REPLY_KINDS = frozenset({"decode_failed", "validation_failed", "not_enforced", "repeated_reply"})


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
    attempts = tuple(plan.attempts.made)
    lines = "; ".join(str(e) for e in errors[:5])
    if error_type is TokenBudgetExceededError:
        spent = plan.attempts.spent
        head = f"token budget of {budget} spent after {len(attempts)} attempt(s) ({spent})"
    else:
        head = f"no valid output after {len(attempts)} attempt(s)"
    return error_type(
        f"{plan.signature.__name__}: {head}: {lines}",
        attempts=attempts,
        usage=plan.attempts.usage,
        raw=attempts[-1].raw if attempts else "",
        errors=errors,
    )
