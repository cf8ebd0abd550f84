"""Errors of the language-model endpoint: transport, HTTP status, unusable replies."""

from __future__ import annotations

from typedspy.errors._base import TypedspyError

__all__ = [
    "LMConnectionError",
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


class LMRateLimitError(LMError):
    """The endpoint answered 429 (after the SDK's own retries, which honour Retry-After).

    Attributes:
        retry_after: Seconds the endpoint asked to wait (``Retry-After`` / ``retry-after-ms``),
            when it said; a batch's `RateLimit` pauses every item for that long.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class LMStatusError(LMError):
    """The endpoint answered with an HTTP error status.

    Attributes:
        status_code: The HTTP status.
        code: The provider's error code, when it sent one (e.g. ``"model_not_found"``).
        param: The request parameter the provider blamed, when it named one.
    """

    def __init__(
        self, message: str, *, status_code: int, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code
        self.param = param


class LMUnsupportedFeatureError(LMStatusError):
    """The endpoint rejected a request feature it does not support.

    Attributes:
        feature: What it rejected: ``"response_format"``, ``"json_schema"``, ``"tools"``, ...
    """

    def __init__(
        self,
        message: str,
        *,
        feature: str,
        status_code: int = 400,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(message, status_code=status_code, code=code, param=param)
        self.feature = feature


class LMResponseError(LMError):
    """The endpoint replied with something that is not a usable completion (no choices, ...)."""


class LMResponseLimitError(LMResponseError):
    """A reply past one of the reading limits: the read or the decoding was stopped there.

    Attributes:
        limit: The limit: ``"max_response_bytes"`` (decoded body size, checked while reading),
            ``"max_json_depth"`` (nesting of objects and arrays) or ``"max_number_digits"``
            (digits of one JSON number).
        allowed: The limit's value.
    """

    def __init__(self, message: str, *, limit: str, allowed: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed
