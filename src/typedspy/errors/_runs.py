"""Errors of runs around the model: budgets, batches, caches, Batch API files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from typedspy._types import Usage
from typedspy.errors._base import TypedspyError

__all__ = [
    "BatchFileError",
    "BatchStoppedError",
    "BudgetExceededError",
    "CacheError",
    "CacheMissError",
    "DeadlineExceededError",
    "ItemTimeoutError",
    "RequestLimitError",
    "ResumeConflictError",
    "VerificationError",
]


@dataclass(eq=False, repr=False, kw_only=True)
class BudgetExceededError(TypedspyError):
    """A `Budget` ran out: the request that would have gone past it was not sent.

    Attributes:
        limit: The limit that was reached: ``"requests"``, ``"input_tokens"``,
            ``"output_tokens"``, ``"total_tokens"`` or ``"cost"``.
        allowed: The budget's value for that limit (a ``Decimal`` of dollars for cost).
        requests: Requests the budget had counted when it refused.
        usage: Tokens the budget had counted when it refused.
    """

    limit: str
    allowed: int | Decimal
    requests: int
    usage: Usage


@dataclass(eq=False, repr=False, kw_only=True)
class ItemTimeoutError(TypedspyError, TimeoutError):
    """A batch item ran longer than the batch's per-item ``timeout`` and was cancelled.

    Attributes:
        timeout: The per-item limit, in seconds.
    """

    timeout: float


@dataclass(eq=False, repr=False, kw_only=True)
class DeadlineExceededError(TypedspyError, TimeoutError):
    """A deadline ran out: the call (or the streamed request) was stopped.

    Attributes:
        limit: Which bound: ``"deadline"`` (the whole module call: attempts, requests,
            streams, retry waits, tool steps) or ``"stream_deadline"`` (one streamed request,
            from sending it to its last chunk).
        seconds: The bound, in seconds.
        elapsed: Seconds from the start of what was bounded to the moment it was stopped.
        requests: Requests sent under the bound so far.
        attempts: Attempts started under the bound so far.
        tool_calls: Tool calls started under the bound so far.
        streamed: Characters of streamed output received under the bound so far.
        stage: What was running when time ran out (``"waiting for a response"``, ...).
    """

    limit: str
    seconds: float
    elapsed: float
    requests: int = 0
    attempts: int = 0
    tool_calls: int = 0
    streamed: int = 0
    stage: str = ""


@dataclass(eq=False, repr=False, kw_only=True)
class BatchStoppedError(TypedspyError):
    """A batch item was never run: the batch had reached ``max_errors`` failures.

    Attributes:
        max_errors: The batch's limit.
    """

    max_errors: int


class CacheError(TypedspyError):
    """A response cache could not answer where an answer was required (nothing was sent).

    Raised in ``"replay"`` cache mode for an unreadable store or entry (a corrupt or locked
    file, an entry that is not one), and by a cache's own maintenance calls (``len``,
    ``clear``). Elsewhere a cache failure is a miss or a logged warning, never an error: a
    reply that was paid for is always returned (docs/scale.md).

    Attributes:
        key: The request's cache key (``None`` for a whole-cache operation).
    """

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class CacheMissError(CacheError):
    """In ``"replay"`` cache mode a request had no cached response (nothing was sent).

    Attributes:
        key: The request's cache key.
    """

    key: str

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message, key=key)


class BatchFileError(TypedspyError):
    """A Batch API output file has no usable result for an input.

    Attributes:
        custom_id: The input's ``custom_id``.
        lines: The numbers (from 1) of the file's lines holding it: none when it has no
            line, more than one when the file holds it twice (then none of them is used).
    """

    def __init__(self, message: str, *, custom_id: str, lines: Sequence[int] = ()) -> None:
        super().__init__(message)
        self.custom_id = custom_id
        self.lines = tuple(lines)


@dataclass(eq=False, repr=False, kw_only=True)
class RequestLimitError(TypedspyError):
    """A call reached ``max_requests``: the request that would go past it was not sent.

    Every HTTP request counts, the SDK's transport retries included.

    Attributes:
        limit: ``"max_requests"``.
        allowed: The bound.
        requests: Requests the call had sent.
    """

    allowed: int
    requests: int
    limit: str = field(default="max_requests", init=False)


@dataclass(eq=False, repr=False, kw_only=True)
class ResumeConflictError(TypedspyError):
    """A paused run cannot be resumed with this answer: its pause was claimed before.

    An answered pause applies once (ADR-036): resuming again with the same answer replays the
    recorded observation without running the tool; this error is raised instead when the earlier
    answer was a different one, or when the earlier resumption has not recorded its outcome (it
    is still running, or its process stopped while the tool ran).

    Attributes:
        pause_id: The pause's id (the `ResumeStore` key).
        action: The earlier answer's action.
    """

    pause_id: str
    action: str


@dataclass(eq=False, repr=False, kw_only=True)
class VerificationError(TypedspyError):
    """A saved program no longer reaches the score it was saved with (`ts.optimize.verify`).

    Attributes:
        reason: ``"score_dropped"`` (it scored lower than the record by more than the
            tolerance) or ``"devset_changed"`` (the dev set is not the one it was scored on:
            nothing was run).
        expected: The recorded score, or the recorded dev set digest.
        got: The score now, or the given dev set's digest.
        report: The `typedspy.optimize.VerifyReport` (None for ``"devset_changed"``).
    """

    reason: Literal["score_dropped", "devset_changed"]
    expected: float | str
    got: float | str
    report: object = None
