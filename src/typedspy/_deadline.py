"""Deadlines: a total bound on a module call, and on one streamed request (ADR-030).

A `Bound` is a wall-clock limit with a record of how far the bounded work got. `bounded` runs
an async iterator of events under one: each step (``__anext__``) runs with a timer that cancels
the running task when the limit passes, and the cancellation comes out as a
`DeadlineExceededError`. Between steps (while the consumer handles an event) nothing is
cancelled: the consumer's own code is never interrupted, the next step fails at once instead.

The bound of a module call is kept in the call scope (`typedspy._scope`) while its steps run,
so nested module calls, ReAct steps, tools (``asyncio.to_thread`` copies the context) and
modules those tools call run under the same bound; a nested ``ts.context(deadline=...)`` can
only tighten it. The request pipeline and the attempt loop report progress to it (`note_request`,
`note_streamed`, ...), so the error says how far the call got.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from typedspy._scope import DEADLINE, STREAM_DEADLINE, Field, current
from typedspy.errors import DeadlineExceededError
from typedspy.streaming import closing

__all__ = [
    "Bound",
    "bounded",
    "call_bound",
    "check_wait",
    "note_attempt",
    "note_request",
    "note_streamed",
    "note_tool",
    "stream_bounded",
    "tightest",
]

T = TypeVar("T")


class Bound:
    """A wall-clock limit on some work, and how far that work got."""

    def __init__(self, limit: str, seconds: float, owner: str) -> None:
        self.limit = limit  # "deadline" or "stream_deadline"
        self.seconds = seconds
        self.owner = owner
        self.started = time.monotonic()
        self.expiry = self.started + seconds
        self.requests = 0
        self.attempts = 0
        self.tool_calls = 0
        self.streamed = 0
        self.stage = "starting"
        self._task: asyncio.Task[object] | None = None  # the task running a step, if any
        self._timer: asyncio.TimerHandle | None = None
        self._fired = False
        self.parent: Bound | None = None

    def child(self) -> Bound:
        """A bound with the same expiry for work in another task; progress goes to both."""
        child = Bound(self.limit, self.seconds, self.owner)
        child.started, child.expiry, child.parent = self.started, self.expiry, self
        return child

    def remaining(self) -> float:
        """Seconds left (negative once it ran out)."""
        return self.expiry - time.monotonic()

    def error(self, *, ahead: bool = False) -> DeadlineExceededError:
        """The error that says this bound ran out, and how far the work got.

        ``ahead``: it has not run out yet, but what comes next would outlast it.
        """
        elapsed = time.monotonic() - self.started
        ended = f"ran out after {elapsed:.2f} s"
        if ahead:
            ended = f"would run out first (stopped after {elapsed:.2f} s)"
        done = [f"{self.requests} request(s) sent"]
        if self.attempts:
            done.append(f"{self.attempts} attempt(s) started")
        if self.streamed:
            done.append(f"{self.streamed:,} characters streamed")
        if self.tool_calls:
            done.append(f"{self.tool_calls} tool call(s) started")
        setting = "ts.context/ts.configure(" + self.limit + "=...)"
        return DeadlineExceededError(
            f"{self.owner}: the {self.limit} of {self.seconds:g} s ({setting}) {ended}, "
            f"while {self.stage}; {', '.join(done)}",
            limit=self.limit,
            seconds=self.seconds,
            elapsed=elapsed,
            requests=self.requests,
            attempts=self.attempts,
            tool_calls=self.tool_calls,
            streamed=self.streamed,
            stage=self.stage,
        )

    async def step(self, iterator: AsyncIterator[T]) -> T:
        """The iterator's next item, cancelled (as `DeadlineExceededError`) if time runs out."""
        if self._fired or self.remaining() <= 0:
            raise self.error()
        task = asyncio.current_task()
        if task is None:  # pragma: no cover - always inside a task under asyncio
            return await iterator.__anext__()
        if self._timer is None:  # one timer per bound, however many steps
            self._timer = asyncio.get_running_loop().call_later(self.remaining(), self._fire)
        self._task = task
        try:
            return await iterator.__anext__()
        except asyncio.CancelledError:
            # uncancel() takes back the bound's own cancel; one still pending is another's.
            if not self._fired or task.uncancel() > 0:
                raise  # a cancellation from elsewhere, not this bound's
            raise self.error() from None
        finally:
            self._task = None

    def close(self) -> None:
        """Stop the timer (the bounded work ended)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        self._fired = True
        if self._task is not None:
            self._task.cancel()


def call_bound(seconds: float | None, owner: str) -> Bound | None:
    """The bound a module call runs under: its own, or the enclosing call's if that is tighter.

    ``None`` when there is nothing to add: no deadline at all, or a call nested in the task
    that runs the enclosing call's step (whose timer covers it) and no tighter deadline.
    """
    outer = current().deadline
    task = asyncio.current_task()
    own = None if seconds is None else Bound("deadline", seconds, owner)
    if outer is None or (own is not None and own.expiry < outer.expiry):
        return own
    if outer._task is task:
        return None
    return outer.child()  # another task (a sync tool's thread, a batch): same expiry, own timer


def bounded(events: AsyncIterator[T], seconds: float | None, owner: str) -> AsyncIterator[T]:
    """Yield ``events``, each step under the call's deadline (see the module docstring)."""
    return _under(events, lambda: call_bound(seconds, owner), DEADLINE)


def stream_bounded(chunks: AsyncIterator[T], seconds: float | None, owner: str) -> AsyncIterator[T]:
    """Yield ``chunks`` of one streamed request, which must end within ``seconds``."""
    return _under(chunks, lambda: _stream_bound(seconds, owner), STREAM_DEADLINE)


def _stream_bound(seconds: float | None, owner: str) -> Bound | None:
    if seconds is None:
        return None
    bound = Bound("stream_deadline", seconds, owner)
    bound.requests, bound.stage = 1, "streaming the reply"  # it bounds one request, sent
    return bound


async def _under(
    items: AsyncIterator[T], make: Callable[[], Bound | None], field: Field[Bound | None]
) -> AsyncIterator[T]:
    """Yield ``items``, each step under the bound ``make`` returns (kept in ``field``)."""
    bound = make()  # on the first step, in the consumer's task and scope
    async with closing(items):
        if bound is None:
            async for item in items:
                yield item
            return
        saved = None
        try:
            while True:
                saved = field.set(bound, last=saved)
                try:
                    item = await bound.step(items)
                except StopAsyncIteration:
                    return
                finally:
                    field.restore(saved)
                yield item
        finally:
            bound.close()


def tightest() -> Bound | None:
    """The bound that runs out first among the call's and the streamed request's, if any.

    No bound's timer can cut a blocking request: `LM` sends one only where this is ``None``
    (ADR-064).
    """
    scope = current()
    bounds = [bound for bound in (scope.deadline, scope.stream_deadline) if bound is not None]
    return min(bounds, key=lambda bound: bound.expiry, default=None)


def check_wait(until: float, stage: str) -> None:
    """Refuse to wait until ``until`` (a ``time.monotonic`` instant) past the tightest bound.

    A wait known in advance (a rate limit's) that would end after the bound runs out fails at
    once, rather than sleeping until the bound's timer cuts it.

    Raises:
        DeadlineExceededError: The bound's error, saying what it refused (``stage``).
    """
    bound = tightest()
    if bound is not None and until > bound.expiry:
        bound.stage = stage
        raise bound.error(ahead=True)


def _chain() -> list[Bound]:
    bound, chain = current().deadline, []
    while bound is not None:
        chain.append(bound)
        bound = bound.parent
    return chain


def note_request(stage: str = "waiting for a response") -> None:
    """A request is being sent under the current bound."""
    for bound in _chain():
        bound.requests += 1
        bound.stage = stage


def note_streamed(characters: int) -> None:
    """Characters of streamed output arrived (counted by the streamed request's bound too)."""
    stream = current().stream_deadline
    for bound in [*_chain(), *([stream] if stream is not None else [])]:
        bound.streamed += characters
        bound.stage = "streaming the reply"


def note_attempt() -> None:
    """An attempt starts."""
    for bound in _chain():
        bound.attempts += 1


def note_tool(name: str) -> None:
    """A tool call starts."""
    for bound in _chain():
        bound.tool_calls += 1
        bound.stage = f"running tool {name!r}"
