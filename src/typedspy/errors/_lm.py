"""Errors of the language-model endpoint: transport, HTTP status, unusable replies."""

from __future__ import annotations

from dataclasses import dataclass

from typedspy.errors._base import TypedspyError

__all__ = [
    "LMConnectionError",
    "LMContextLengthError",
    "LMError",
    "LMRateLimitError",
    "LMResponseError",
    "LMResponseLimitError",
    "LMStatusError",
    "LMTimeoutError",
    "LMUnsupportedFeatureError",
]


class LMError(TypedspyError):
    """The language model endpoint could not be used; the SDK exception is ``__cause__``."""


class LMConnectionError(LMError):
    """The endpoint could not be reached (after the SDK's own retries)."""


class LMTimeoutError(LMConnectionError):
    """The request timed out (after the SDK's own retries)."""


@dataclass(eq=False, repr=False, kw_only=True)
class LMRateLimitError(LMError):
    """The endpoint answered 429 (after the SDK's own retries, which honour Retry-After).

    Attributes:
        retry_after: Seconds the endpoint asked to wait (``Retry-After`` / ``retry-after-ms``),
            when it said so as a finite number of seconds >= 0 (``None`` for ``"1e400"``,
            ``"NaN"``, ``"-5"`` or a date); a batch's `RateLimit` pauses every item for that
            long.
    """

    retry_after: float | None = None


@dataclass(eq=False, repr=False, kw_only=True)
class LMStatusError(LMError):
    """The endpoint answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status.
        code: The provider's error code, when it sent one (e.g. ``"model_not_found"``).
        param: The request parameter the provider blamed, when it named one.
    """

    status_code: int
    code: str | None = None
    param: str | None = None


@dataclass(eq=False, repr=False, kw_only=True)
class LMUnsupportedFeatureError(LMStatusError):
    """The endpoint rejected a request feature it does not support.

    Attributes:
        feature: What it rejected: ``"response_format"``, ``"json_schema"``, ``"tools"``, ...
    """

    feature: str
    status_code: int = 400


@dataclass(eq=False, repr=False, kw_only=True)
class LMContextLengthError(LMStatusError):
    """The request does not fit the model's context window (its prompt plus ``max_tokens``).

    Sending it again unchanged fails again: shorten the input, lower ``max_tokens``, or move to
    a model with a longer window (``LM.fallback(..., on={"context_length"})``).

    Attributes:
        context_window: The window's size in tokens, when the endpoint said it.
    """

    context_window: int | None = None
    status_code: int = 400


class LMResponseError(LMError):
    """The endpoint replied with something that is not a usable completion (no choices, ...)."""


@dataclass(eq=False, repr=False, kw_only=True)
class LMResponseLimitError(LMResponseError):
    """A reply past one of the reading limits: the read or the decoding was stopped there.

    Attributes:
        limit: The limit: ``"max_response_bytes"`` (decoded body size, checked while reading),
            ``"max_json_depth"`` (nesting of objects and arrays) or ``"max_number_digits"``
            (digits of one JSON number).
        allowed: The limit's value.
    """

    limit: str
    allowed: int
