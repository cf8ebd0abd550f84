"""Typed failure kinds, the profile's bounded remedies (ADR-027), the finish-reason policy.

A failed attempt is classified once, here: a schema the server accepted but did not enforce
(``not_enforced``), a truncation that is a whitespace loop, a repetition loop, or a genuinely
long answer. Each kind is logged under its name; the remedies are the profile's, at most one
per kind and call, and only while the retry bound allows.

A refusal, a content filter or a truncation without a remedy ends the call: asking again the
same way fixes none of them (ADR-004), so they raise instead of retrying. Predict and ReAct
raise the same errors from here.
"""

from __future__ import annotations

import logging
from typing import Any

from typedspy._json import JSONLimitError
from typedspy._json import loads as bounded_loads
from typedspy._types import Attempt, FailureKind, Usage
from typedspy.errors import ContentFilterError, RefusalError, TruncatedOutputError
from typedspy.lm import BaseLM, LMResponse
from typedspy.parse import runaway_kind
from typedspy.profiles import LoopRemedy, Mode, Profile
from typedspy.retry import FEEDBACK_LABEL
from typedspy.schema import validate_instance

__all__ = [
    "TRUNCATION_KINDS",
    "enforcement_kind",
    "log_failure",
    "raise_for_finish",
    "remedy_for",
    "remedy_turn",
    "runaway_remedy",
    "truncation_error",
    "truncation_kind",
]

logger = logging.getLogger("typedspy")

TRUNCATION_KINDS: frozenset[FailureKind] = frozenset(
    {"truncated", "whitespace_loop", "repetition_loop"}
)
_WHY = {
    "whitespace_loop": "the model looped on whitespace (the grammar allows it)",
    "repetition_loop": "the model repeated itself",
}


def truncation_kind(text: str | None) -> FailureKind:
    """``whitespace_loop``, ``repetition_loop``, or ``truncated`` for a genuinely long answer."""
    return runaway_kind(text or "") or "truncated"


def enforcement_kind(
    profile: Profile,
    mode: Mode,
    text: str | None,
    schema: dict[str, Any],
    parsed: FailureKind,
    *,
    max_depth: int,
) -> FailureKind:
    """``not_enforced`` when a schema went on the wire and the reply violates it, else ``parsed``.

    A reply that conforms to the sent schema but fails typedspy's own validation (constraints
    the target moved into descriptions) is an ordinary ``validation_failed``; one past the
    LM's own limits (``max_depth``, number length) is the parser's verdict: it tells nothing of
    what the server enforced.
    """
    if text is None or not profile.sends_schema(mode):
        return parsed
    try:
        value = bounded_loads(text, max_depth=max_depth)  # bounded (ADR-028)
    except JSONLimitError:
        return parsed
    except ValueError:
        return "not_enforced"  # an enforcing grammar emits nothing but the JSON value
    try:
        violations = validate_instance(value, schema)
    except RecursionError:  # too deep for the schema checker: leave it to the parser's verdict
        return parsed
    return "not_enforced" if violations else parsed


def remedy_for(profile: Profile, kind: FailureKind) -> LoopRemedy | None:
    """The profile's re-ask for a runaway completion of this kind, if it has one."""
    if kind == "whitespace_loop":
        return profile.on_whitespace_loop
    if kind == "repetition_loop":
        return profile.on_repetition_loop
    return None


def runaway_remedy(
    lm: BaseLM, signature: str, number: int, kind: FailureKind, remedied: set[str]
) -> LoopRemedy | None:
    """The profile's re-ask for a completion cut off as ``kind``, once per kind (``remedied``).

    `Predict`'s attempts and ReAct's native steps both decide here. The kind is recorded in
    the profile's memory and logged, with whether it is re-asked; ``None``: not retried.
    """
    lm.profile.observe(kind)
    remedy = remedy_for(lm.profile, kind)
    if remedy is not None and kind not in remedied:
        remedied.add(kind)
        log_failure(lm, signature, number, kind, "re-asking once, as the profile says")
        return remedy
    log_failure(lm, signature, number, kind, "not retried")
    return None


def remedy_turn(remedy: LoopRemedy) -> dict[str, Any]:
    """The labelled user turn sent instead of the runaway reply."""
    return {"role": "user", "content": f"{FEEDBACK_LABEL}\n{remedy.note}"}


def log_failure(lm: BaseLM, signature: str, number: int, kind: FailureKind, what: str) -> None:
    """Log one classified failure at WARNING, with the kind as ``record.typedspy_kind``."""
    logger.warning(
        "%s: attempt %d: %s (%s, profile %s): %s",
        signature,
        number,
        kind,
        lm.model,
        lm.profile.name,
        what,
        extra={"typedspy_kind": kind},
    )


def raise_for_finish(
    name: str,
    response: LMResponse,
    *,
    what: str,
    usage: Usage,
    attempts: tuple[Attempt, ...],
    raw: str,
) -> None:
    """Raise the error for a refused or filtered completion; return otherwise.

    A completion cut off at the token limit is decided before (`runaway_remedy`, then
    `truncation_error`).

    Args:
        name: The signature's name, first in every message.
        response: The completion.
        what: What was filtered (``"the completion"``, ``"a ReAct step"``).
        usage: The call's usage so far.
        attempts: The call's attempts so far.
        raw: The output text.
    """
    if response.refusal is not None:
        raise RefusalError(
            f"{name}: the model refused: {response.refusal}",
            refusal=response.refusal,
            attempts=attempts,
            usage=usage,
        )
    if response.finish_reason == "content_filter":
        raise ContentFilterError(
            f"{name}: the provider's content filter stopped {what}",
            attempts=attempts,
            usage=usage,
            raw=raw,
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
