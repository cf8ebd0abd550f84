"""`RetryPolicy`: the bounded semantic retry loop, decided by tenacity (its one importer)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from tenacity import (
    AsyncRetrying,
    DoAttempt,
    DoSleep,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_fixed,
)

__all__ = ["AttemptSlot", "RetryPolicy", "RetryableFailure"]


class RetryableFailure(Exception):
    """Raised by an attempt whose output can be fixed by asking again; carries the failure."""

    def __init__(self, failure: Any) -> None:
        super().__init__("retryable output failure")
        self.failure = failure


class AttemptSlot:
    """One attempt granted by `RetryPolicy.attempts`; report a retryable failure with `fail`."""

    def __init__(self, state: RetryCallState) -> None:
        self._state = state
        self.failed = False

    @property
    def number(self) -> int:
        """1 for the first attempt, 2 for the first retry, ..."""
        return self._state.attempt_number

    def fail(self, exc: RetryableFailure) -> None:
        """Record that this attempt failed in a way asking again may fix."""
        self.failed = True
        self._state.set_exception((type(exc), exc, exc.__traceback__))


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and how patiently, to ask again after a decode or validation failure.

    Transport failures are not retried here: the openai SDK's own ``max_retries`` handles them
    (ADR-004), so the two layers never multiply.

    Attributes:
        max_retries: Retries after the first attempt (so at most ``max_retries + 1`` requests).
        wait: Seconds between attempts; 0 by default (a semantic retry has nothing to wait for).
    """

    max_retries: int = 2
    wait: float = 0.0

    async def attempts(self) -> AsyncIterator[AttemptSlot]:
        """Yield attempt slots until one is not marked failed, or the bound is reached.

        The caller may yield its own events while an attempt runs (streaming), which tenacity's
        ``with attempt:`` blocks cannot allow, so tenacity is driven step by step here: it
        decides whether to stop, retry or wait.

        Raises:
            RetryableFailure: The last attempt's failure, when the bound is reached.
        """
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_fixed(self.wait),
            retry=retry_if_exception_type(RetryableFailure),
            reraise=True,
        )
        retrying.begin()
        state = RetryCallState(retrying, fn=None, args=(), kwargs={})
        while True:
            action = await retrying.iter(retry_state=state)
            if isinstance(action, DoAttempt):
                slot = AttemptSlot(state)
                yield slot
                if not slot.failed:
                    return
            elif isinstance(action, DoSleep):
                state.prepare_for_next_attempt()
                if action:
                    await asyncio.sleep(action)
            else:
                return
