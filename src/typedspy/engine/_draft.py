"""The first request of a ``think_then_format`` call: the free answer (ADR-086).

The model answers in plain words (`draft_request`: no schema, no ``response_format``); the
call's second request writes that answer as the outputs under the profile's structured mode
(`plan_call` with the `Draft`). The first request is one attempt of the attempt loop with no
retry: only the second request's output is validated and fed back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typedspy._types import Attempt, FailureKind, FieldError
from typedspy.adapter import draft_request
from typedspy.engine._attempts import Attempts, Done, Driver, Reply, run_attempts
from typedspy.engine._output import reply_output, request_bound
from typedspy.engine._send import Pick, content
from typedspy.errors import OutputDecodeError
from typedspy.limits import Spent
from typedspy.lm import BaseLM, ChatMessage, LMRequest, LMResponse, RequestBound
from typedspy.retry import RetryPolicy
from typedspy.signature import Signature
from typedspy.streaming import closing

__all__ = ["Draft", "DraftPlan", "plan_draft", "run_draft"]


@dataclass(frozen=True)
class Draft:
    """A free answer, and the call's attempts and bounds, which the second request shares.

    Attributes:
        text: The answer (the reply's content with its reasoning split off; the reasoning
            when the content is empty).
        made: The call's attempts so far: the first request's.
        requests: The call's bound on HTTP requests.
        spent: The tokens the call's token budget counts so far.
    """

    text: str
    made: tuple[Attempt, ...]
    requests: RequestBound | None
    spent: Spent


@dataclass
class DraftPlan(Driver[Draft]):
    """The first request of a ``think_then_format`` call: the attempt loop's driver."""

    signature: type[Signature]
    base: LMRequest
    attempts: Attempts
    what: str = "the draft answer"

    def request(self) -> LMRequest:
        return self.base

    def pick(self) -> Pick:
        return content

    def reasoning_tags(self) -> tuple[str, str] | None:
        return self.attempts.lm.profile.reasoning_tags

    def output(self, response: LMResponse) -> tuple[str | None, str | None]:
        return reply_output(response.text, response.reasoning, self.reasoning_tags())

    def usable_when_cut(self, text: str, kind: FailureKind) -> bool:
        return kind == "whitespace_loop" and bool(text.strip())

    def read(self, attempts: Attempts, reply: Reply) -> Done[Draft]:
        answer = (reply.text or "").strip() or (reply.reasoning or "").strip()
        if answer:
            attempts.made.append(reply.attempt())
            return Done(Draft(answer, tuple(attempts.made), attempts.requests, attempts.spent))
        failure = FieldError((), "the model returned no answer to write as the outputs")
        attempts.made.append(reply.attempt((failure,), "decode_failed"))
        raise OutputDecodeError(
            f"{self.signature.__name__}: {self.what} was empty (think_then_format)",
            attempts=tuple(attempts.made),
            usage=attempts.usage,
            raw=reply.text or "",
            errors=(failure,),
        )


def plan_draft(
    signature: type[Signature],
    lm: BaseLM,
    inputs: Mapping[str, Any],
    history: Sequence[ChatMessage],
    *,
    demos: Sequence[Mapping[str, Any]],
    params: Mapping[str, Any],
) -> DraftPlan:
    """The first request of a ``think_then_format`` call: one attempt, no retry (ADR-086)."""
    request = draft_request(
        signature,
        inputs,
        profile=lm.profile,
        demos=demos,
        history=history,
        params=params,
        defaults=lm.defaults,
    )
    attempts = Attempts(lm, RetryPolicy(max_retries=0), requests=request_bound(signature))
    return DraftPlan(signature, request, attempts)


async def run_draft(plan: DraftPlan) -> Draft:
    """Send the first request (never streamed, never retried for its content); its `Draft`.

    Raises:
        OutputDecodeError: The reply held no answer.
        RefusalError, TruncatedOutputError, ContentFilterError: As for any attempt.
        LMError: The endpoint could not be used.
    """
    async with closing(run_attempts(plan, plan.attempts, stream=False)) as events:
        async for event in events:
            if isinstance(event, Done):
                return event.value
    raise AssertionError("the attempt loop ended without a result")  # pragma: no cover
