"""The finish-reason policy: a refusal, a truncation or a content filter ends the call.

Asking again the same way fixes none of them (ADR-004), so they raise instead of retrying; the
one exception, a runaway truncation the profile has a remedy for (ADR-027), is decided by the
caller before it gets here. Predict and ReAct raise the same errors from here.
"""

from __future__ import annotations

from typedspy._types import Attempt, FailureKind, Usage
from typedspy.engine._failures import truncation_kind
from typedspy.errors import ContentFilterError, RefusalError, TruncatedOutputError
from typedspy.lm import LMResponse

__all__ = ["ends_call", "raise_for_finish", "truncation_error"]

_WHY = {
    "whitespace_loop": "the model looped on whitespace (the grammar allows it)",
    "repetition_loop": "the model repeated itself",
}


def ends_call(response: LMResponse) -> bool:
    """Whether the completion was refused, truncated or filtered."""
    return response.refusal is not None or response.finish_reason in ("length", "content_filter")


def raise_for_finish(
    name: str,
    response: LMResponse,
    *,
    what: str,
    usage: Usage,
    attempts: tuple[Attempt, ...] = (),
    raw: str | None = None,
    kind: FailureKind | None = None,
) -> None:
    """Raise the error for a refused, truncated or filtered completion; return otherwise.

    Args:
        name: The signature's name, first in every message.
        response: The completion.
        what: What was cut off or filtered (``"the completion"``, ``"a ReAct step"``).
        usage: The call's usage so far.
        attempts: The call's attempts so far.
        raw: The output text (default: the response's content).
        kind: The truncation's kind (default: classified from ``raw``'s tail).
    """
    text = response.text or "" if raw is None else raw
    if response.refusal is not None:
        raise RefusalError(
            f"{name}: the model refused: {response.refusal}",
            refusal=response.refusal,
            attempts=attempts,
            usage=usage,
        )
    if response.finish_reason == "length":
        tokens = response.usage.completion_tokens
        kind = kind or truncation_kind(text)
        raise truncation_error(name, what, tokens, kind, attempts=attempts, usage=usage, raw=text)
    if response.finish_reason == "content_filter":
        raise ContentFilterError(
            f"{name}: the provider's content filter stopped {what}",
            attempts=attempts,
            usage=usage,
            raw=text,
        )


def truncation_error(
    name: str,
    what: str,
    tokens: int,
    kind: FailureKind,
    *,
    attempts: tuple[Attempt, ...],
    usage: Usage,
    raw: str,
) -> TruncatedOutputError:
    """The `TruncatedOutputError` for ``what`` cut off after ``tokens`` tokens."""
    why = _WHY.get(kind, "raise max_tokens or shorten the output (retrying would truncate again)")
    return TruncatedOutputError(
        f"{name}: {what} hit the token limit after {tokens} tokens ({kind}): {why}",
        attempts=attempts,
        usage=usage,
        raw=raw,
    )
