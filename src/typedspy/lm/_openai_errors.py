"""SDK exceptions mapped onto the `LMError` tree, and the rate headers a limiter reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import openai

from typedspy.errors import (
    LMConnectionError,
    LMError,
    LMRateLimitError,
    LMResponseError,
    LMResponseLimitError,
    LMStatusError,
    LMTimeoutError,
    LMUnsupportedFeatureError,
)
from typedspy.lm._openai_transport import DeadlineReached, ResponseBodyError
from typedspy.lm._wordings import unsupported_feature

__all__ = ["rate_headers", "retry_after", "sent_error", "translate"]


def sent_error(exc: openai.OpenAIError) -> BaseException:
    """What the transport raised, where the SDK wrapped it in ``APIConnectionError``.

    openai < 2.31 wraps (and retries) every exception its HTTP client raises; later releases let
    an ``OpenAIError`` through and wrap only the HTTP library's own (ADR-044).
    """
    cause = exc.__cause__
    if not isinstance(cause, ResponseBodyError | DeadlineReached | RuntimeError):
        return exc
    return cause if type(exc) is openai.APIConnectionError else exc


def translate(exc: openai.OpenAIError, *, where: str, redact: Callable[[str], str]) -> LMError:
    """The `LMError` for an SDK exception; ``where`` names model and endpoint, ``redact`` scrubs."""
    sent = sent_error(exc)
    exc = sent if isinstance(sent, ResponseBodyError) else exc
    if isinstance(exc, ResponseBodyError):
        if exc.limit is None:
            return LMResponseError(f"{where}: {redact(str(exc))}")
        return LMResponseLimitError(f"{where}: {exc}", limit=exc.limit, allowed=exc.allowed)
    if isinstance(exc, openai.APITimeoutError):
        return LMTimeoutError(f"{where}: the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LMConnectionError(f"{where}: could not connect ({redact(exc.message)})")
    if not isinstance(exc, openai.APIStatusError):
        return LMError(f"{where}: {redact(str(exc))}")
    detail = exc.message
    if isinstance(exc.body, dict) and isinstance(exc.body.get("message"), str):
        detail = exc.body["message"]
    detail = redact(detail)[:500]
    status, code, param = exc.status_code, exc.code, exc.param
    label = f" ({code})" if code else ""
    if isinstance(exc, openai.RateLimitError):
        return LMRateLimitError(
            f"{where}: rate limited (HTTP 429{label}): {detail}",
            retry_after=retry_after(exc.response.headers),
        )
    feature = unsupported_feature(status, detail, code=code, param=param)
    message = f"{where}: HTTP {status}{label}: {detail}"
    if feature is not None:
        return LMUnsupportedFeatureError(
            f"{where} does not support {feature}: HTTP {status}{label}: {detail}",
            feature=feature,
            status_code=status,
            code=code,
            param=param,
        )
    return LMStatusError(message, status_code=status, code=code, param=param)


def rate_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers a rate limiter adapts to (reference/scale.md: the SDK honours Retry-After)."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower().startswith("x-ratelimit-") or k.lower() in ("retry-after", "retry-after-ms")
    }


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or a numeric ``retry-after``; ``None`` otherwise."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: the SDK already waited for it between its retries
        if seconds >= 0:
            return seconds
    return None
