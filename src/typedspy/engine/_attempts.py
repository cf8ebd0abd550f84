"""The one attempt loop: every model request a module makes is an attempt here (ADR-060).

A `Predict` attempt and a ReAct native step differ in three things only, which a `Driver`
supplies: the request, which text of a streamed reply is the output, and how a reply is read
(outputs parsed and validated; tool calls or ``finish``). Everything else exists once, in
`run_attempts`: the retry bound, the callbacks' attempt events, the feedback turn and the
parameters of the next attempt, the finish-reason policy, the runaway re-ask (once per kind,
ADR-027) and the attempts' record and usage. Streaming and plain calls share the loop (ADR-009).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from typedspy import callbacks
from typedspy._types import Attempt, FailureKind, FieldError, Usage
from typedspy.engine._failures import (
    TRUNCATION_KINDS,
    log_failure,
    raise_for_finish,
    remedy_turn,
    runaway_remedy,
    truncation_error,
    truncation_kind,
)
from typedspy.engine._send import Pick, send
from typedspy.errors import TruncatedOutputError
from typedspy.limits import Spent
from typedspy.lm import BaseLM, ChatMessage, LMRequest, LMResponse, RequestBound
from typedspy.parse import ParseFailure, ParseResult
from typedspy.pipeline import HISTORY
from typedspy.prediction import Prediction
from typedspy.retry import RetryableFailure, RetryPolicy
from typedspy.signature import Signature
from typedspy.streaming import RetryStarted, StreamEvent, closing

__all__ = ["Attempts", "Done", "Driver", "Event", "Reply", "run_attempts"]

Event = StreamEvent | Prediction[Any]
T = TypeVar("T")


@dataclass(frozen=True)
class Done(Generic[T]):
    """What an attempt that needs no retry came to: the driver's result, last in the events."""

    value: T


@dataclass(slots=True)
class Reply:
    """One attempt's reply as the loop and its driver read it.

    Attributes:
        number: The attempt's number (1 for the first request).
        response: The reply.
        text: Its output text (the driver's `Driver.output`: where a runaway shows), if any.
        reasoning: Its reasoning, if any.
    """

    number: int
    response: LMResponse
    text: str | None
    reasoning: str | None

    def attempt(
        self, errors: tuple[FieldError, ...] = (), kind: FailureKind | None = None
    ) -> Attempt:
        """The reply as one of the call's attempts (failed with ``errors`` as ``kind``)."""
        return Attempt(
            self.number, self.text or "", errors, self.response.usage, kind, self.reasoning
        )


@dataclass
class Attempts:
    """The attempts of one call (or of one ReAct run), and what the next one sends besides.

    Attributes:
        lm: The endpoint.
        policy: The retry bound for one `run_attempts`.
        requests: The bound on the HTTP requests sent, transport retries included (ADR-029).
        made: The attempts so far, runaway ones included.
        feedback: Turns the next request ends with (a feedback or remedy turn; this request only).
        params: A remedy's parameters, sent over the request's from then on.
        remedied: The runaway kinds already re-asked once.
        undecoded: Attempts whose reply held no decodable JSON.
        spent: The tokens the token budget counts: `usage` and, for a reply that reported
            none, its estimate (ADR-091).
    """

    lm: BaseLM
    policy: RetryPolicy
    requests: RequestBound | None = None
    made: list[Attempt] = field(default_factory=list)
    feedback: list[ChatMessage] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    remedied: set[str] = field(default_factory=set)
    undecoded: set[int] = field(default_factory=set)
    spent: Spent = field(default_factory=Spent)

    @property
    def usage(self) -> Usage:
        """Tokens spent by the attempts so far."""
        return sum((a.usage for a in self.made), Usage())


class Driver(Protocol[T]):
    """What one kind of request supplies to the attempt loop.

    `received` and `spent` have defaults for a driver of one call (a subclass takes them).

    Attributes:
        signature: The signature whose outputs a streamed reply carries (partial events).
        what: What a cut-off or filtered reply was, for messages (``"the completion"``).
    """

    signature: type[Signature]
    what: str

    def request(self) -> LMRequest:
        """The request of the next attempt, before the loop adds feedback and parameters."""
        ...

    def pick(self) -> Pick:
        """Which text of a streamed chunk is the output (a new picker for each attempt)."""
        ...

    def reasoning_tags(self) -> tuple[str, str] | None:
        """The tags of a leading reasoning block in the output text, split off while streaming."""
        ...

    def output(self, response: LMResponse) -> tuple[str | None, str | None]:
        """The reply's output text (where a runaway shows) and its reasoning, if any."""
        ...

    def usable_when_cut(self, text: str, kind: FailureKind) -> bool:
        """Whether a reply cut off as ``kind`` is still read (a whitespace loop after a value)."""
        ...

    def received(self, response: LMResponse) -> None:
        """A reply arrived (before it is read: a run counts its usage here).

        By default nothing: every reply becomes one of the call's attempts.
        """
        del response

    def spent(self, attempts: Attempts) -> Usage:
        """The usage an error reports: the call's (a run's includes its earlier steps)."""
        return attempts.usage

    def read(self, attempts: Attempts, reply: Reply) -> Done[T]:
        """Read a reply that was not refused, filtered or cut off past use.

        Raises:
            RetryableFailure: Asking again may fix it; ``attempts.feedback`` says how.
        """
        ...


async def run_attempts(
    driver: Driver[T], attempts: Attempts, *, stream: bool
) -> AsyncIterator[StreamEvent | Done[T]]:
    """Run attempts until one is read without a retryable failure; its `Done` comes last.

    Raises:
        RetryableFailure: The bound was reached; its failure is the last attempt's.
        TruncatedOutputError: A runaway the profile has no re-ask for, or the last one allowed.
        RefusalError, TruncatedOutputError, ContentFilterError: Not retried.
        LMError: The endpoint could not be used.
    """
    attempts.feedback = []  # a run's earlier step may have left a remedy turn
    try:
        async with closing(attempts.policy.attempts()) as slots:
            async for slot in slots:
                if slot.number > 1:
                    yield RetryStarted(slot.number, attempts.made[-1].errors)
                seen = len(attempts.made)
                attempt_id = callbacks.attempt_start(attempts.lm, slot.number)
                try:
                    async with closing(_attempt(driver, attempts, slot.number, stream)) as events:
                        async for event in events:
                            yield event
                except RetryableFailure as exc:
                    callbacks.attempt_end(attempt_id, _recorded(attempts, seen), None)
                    slot.fail(exc)
                    continue
                except BaseException as exc:
                    callbacks.attempt_end(attempt_id, _recorded(attempts, seen), exc)
                    raise
                callbacks.attempt_end(attempt_id, _recorded(attempts, seen), None)
                return
    except RetryableFailure:
        last = attempts.made[-1]
        if last.kind in TRUNCATION_KINDS:  # the remedy was the last retry allowed
            raise _truncated(driver, attempts, last.raw, last.kind) from None
        raise


def _recorded(attempts: Attempts, before: int) -> Attempt | None:
    return attempts.made[-1] if len(attempts.made) > before else None


async def _attempt(
    driver: Driver[T], attempts: Attempts, number: int, stream: bool
) -> AsyncIterator[StreamEvent | Done[T]]:
    base = driver.request()
    request = replace(
        base,
        messages=base.messages + tuple(attempts.feedback),
        params={**base.params, **attempts.params},
    )
    response: LMResponse | None = None
    sent = send(
        attempts.lm,
        request,
        driver.signature,
        stream=stream,
        pick=driver.pick(),
        reasoning_tags=driver.reasoning_tags(),
        requests=attempts.requests,
        attempt=number,
    )
    async with closing(sent) as items:
        async for item in items:
            if isinstance(item, LMResponse):
                response = item
            else:
                yield item
    assert response is not None
    attempts.spent.add(response, request)
    seen = len(attempts.made)
    try:
        done = _read(driver, attempts, number, response)
    finally:  # the history shows what the attempt came to
        kind = attempts.made[-1].kind if len(attempts.made) > seen else None
        HISTORY.note_kind(response, kind)
    yield done


def _read(driver: Driver[T], attempts: Attempts, number: int, response: LMResponse) -> Done[T]:
    driver.received(response)
    reply = Reply(number, response, *driver.output(response))
    _runaway(driver, attempts, reply)
    if response.refusal is not None or response.finish_reason == "content_filter":
        attempts.made.append(reply.attempt())
        raise_for_finish(
            driver.signature.__name__,
            response,
            what=driver.what,
            usage=driver.spent(attempts),
            attempts=tuple(attempts.made),
            raw=reply.text or "",
        )
    return driver.read(attempts, reply)


def _runaway(driver: Driver[Any], attempts: Attempts, reply: Reply) -> None:
    """A reply cut off at the token limit: used, re-asked once per kind, or the call's end.

    A whitespace loop after a complete value is read as it is (the driver says). A runaway
    reply gets the profile's re-ask (raised as a `RetryableFailure`, so the retry bound
    holds); the runaway reply itself is not sent back. Anything else raises.
    """
    response, text, number = reply.response, reply.text, reply.number
    if response.refusal is not None or response.finish_reason != "length":
        return
    kind = truncation_kind(text)
    name = driver.signature.__name__
    if text and driver.usable_when_cut(text, kind):
        log_failure(attempts.lm, name, number, kind, "used the JSON")
        attempts.lm.profile.observe(kind)
        return
    failure = FieldError((), f"cut off at the token limit: {kind}")
    attempts.made.append(reply.attempt((failure,), kind))
    remedy = runaway_remedy(attempts.lm, name, number, kind, attempts.remedied)
    if remedy is None:
        raise _truncated(driver, attempts, text or "", kind)
    attempts.feedback = [remedy_turn(remedy)]
    attempts.params.update(remedy.params)
    raise RetryableFailure(ParseResult(error=ParseFailure("decode_failed", (failure,))))


def _truncated(
    driver: Driver[Any], attempts: Attempts, raw: str, kind: FailureKind | None
) -> TruncatedOutputError:
    tokens = attempts.made[-1].usage.completion_tokens if attempts.made else 0
    return truncation_error(
        driver.signature.__name__,
        driver.what,
        tokens,
        kind or "truncated",
        attempts=tuple(attempts.made),
        usage=driver.spent(attempts),
        raw=raw,
    )
