"""Errors of runs around the model: budgets, batches, caches, Batch API files."""

from __future__ import annotations

from decimal import Decimal

from typedspy._types import Usage
from typedspy.errors._base import TypedspyError

__all__ = [
    "BatchFileError",
    "BatchStoppedError",
    "BudgetExceededError",
    "CacheMissError",
    "ItemTimeoutError",
]


class BudgetExceededError(TypedspyError):
    """A `Budget` ran out: the request that would have gone past it was not sent.

    Attributes:
        limit: The limit that was reached: ``"requests"``, ``"input_tokens"``,
            ``"output_tokens"``, ``"total_tokens"`` or ``"cost"``.
        allowed: The budget's value for that limit (a ``Decimal`` of dollars for cost).
        requests: Requests the budget had counted when it refused.
        usage: Tokens the budget had counted when it refused.
    """

    def __init__(
        self, message: str, *, limit: str, allowed: int | Decimal, requests: int, usage: Usage
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed
        self.requests = requests
        self.usage = usage


class ItemTimeoutError(TypedspyError, TimeoutError):
    """A batch item ran longer than the batch's per-item ``timeout`` and was cancelled.

    Attributes:
        timeout: The per-item limit, in seconds.
    """

    def __init__(self, message: str, *, timeout: float) -> None:
        super().__init__(message)
        self.timeout = timeout


class BatchStoppedError(TypedspyError):
    """A batch item was never run: the batch had reached ``max_errors`` failures.

    Attributes:
        max_errors: The batch's limit.
    """

    def __init__(self, message: str, *, max_errors: int) -> None:
        super().__init__(message)
        self.max_errors = max_errors


class CacheMissError(TypedspyError):
    """In ``"replay"`` cache mode a request had no cached response (nothing was sent).

    Attributes:
        key: The request's cache key.
    """

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


class BatchFileError(TypedspyError):
    """A Batch API output file has no usable result for an input.

    Attributes:
        custom_id: The input's ``custom_id``.
    """

    def __init__(self, message: str, *, custom_id: str) -> None:
        super().__init__(message)
        self.custom_id = custom_id
