"""Errors of the model's answer: undecodable, invalid, refused, truncated, filtered."""

from __future__ import annotations

from collections.abc import Sequence

from typedspy._types import Attempt, FailureKind, FieldError, Usage
from typedspy.errors._base import TypedspyError

__all__ = [
    "ContentFilterError",
    "OutputDecodeError",
    "OutputError",
    "OutputValidationError",
    "RefusalError",
    "TokenBudgetExceededError",
    "TruncatedOutputError",
]


class OutputError(TypedspyError):
    """The model answered, but its answer could not be turned into the signature's outputs.

    Attributes:
        attempts: Every request made for this call, in order, with raw text and errors.
        usage: Tokens summed over all attempts.
        raw: The text of the last completion ("" when there was none).
        errors: The field errors of the last attempt.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: Sequence[Attempt] = (),
        usage: Usage | None = None,
        raw: str = "",
        errors: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message)
        self.attempts = tuple(attempts)
        self.usage = usage if usage is not None else sum((a.usage for a in attempts), Usage())
        self.raw = raw
        self.errors = tuple(errors)

    @property
    def kind(self) -> FailureKind | None:
        """Why the last attempt failed: ``"not_enforced"``, ``"whitespace_loop"``, ..."""
        return self.attempts[-1].kind if self.attempts else None


class OutputDecodeError(OutputError):
    """No attempt produced a decodable JSON value."""


class OutputValidationError(OutputError):
    """The last attempt decoded but failed validation; ``errors`` names the field paths."""


class RefusalError(OutputError):
    """The model refused to answer; ``refusal`` holds its text. Not retried."""

    def __init__(
        self,
        message: str,
        *,
        refusal: str,
        attempts: Sequence[Attempt] = (),
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message, attempts=attempts, usage=usage, raw=refusal)
        self.refusal = refusal


class TruncatedOutputError(OutputError):
    """The completion hit the token limit (``finish_reason == "length"``); ``raw`` is partial.

    ``kind`` tells a genuinely long answer (``"truncated"``) from a runaway one
    (``"whitespace_loop"``, ``"repetition_loop"``); the profile's one remedy for a runaway
    completion was tried first where it had one and retries were left.
    """


class ContentFilterError(OutputError):
    """The provider's content filter stopped the completion. Not retried."""


class TokenBudgetExceededError(OutputError):
    """The token budget across attempts ran out before a valid output was produced."""
