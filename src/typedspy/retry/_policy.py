"""`RetryPolicy`: the bounded semantic retry loop, decided by tenacity (its one importer)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt, wait_fixed

__all__ = ["AttemptSlot", "RetryPolicy", "RetryableFailure"]


class RetryableFailure(Exception):
    """Raised by an attempt whose output can be fixed by asking again; carries the failure."""

    def __init__(self, failure: Any) -> None:
        super().__init__("retryable output failure")
        self.failure = failure


class AttemptSlot:
    """One attempt granted by `RetryPolicy.attempts`; report a retryable failure with `fail`.

    Attributes:
        number: 1 for the first attempt, 2 for the first retry, ...
        failure: The failure reported with `fail`, if any.
    """

    def __init__(self, number: int) -> None:
        self.number = number
        self.failure: RetryableFailure | None = None

    @property
    def failed(self) -> bool:
        """Whether `fail` was called."""
        return self.failure is not None

    def fail(self, exc: RetryableFailure) -> None:
        """Record that this attempt failed in a way asking again may fix."""
        self.failure = exc


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

        tenacity decides whether to stop, retry or wait, driven through its public iteration
        (``async for attempt in AsyncRetrying(...)``). The caller's work for an attempt runs
        between this generator's yields, outside tenacity's ``with attempt:`` block (which
        would swallow the generator's own exit); a failure reported with `AttemptSlot.fail`
        is raised inside that block afterwards, where tenacity records it.

        Raises:
            RetryableFailure: The last attempt's failure, when the bound is reached.
        """
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_fixed(self.wait),
            retry=retry_if_exception_type(RetryableFailure),
            reraise=True,
        )
        async for attempt in retrying:
            slot = AttemptSlot(attempt.retry_state.attempt_number)
            yield slot
            if slot.failure is None:
                return
            with attempt:
                raise slot.failure
