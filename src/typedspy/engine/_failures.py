"""Typed failure kinds for what servers do silently, and the profile's bounded remedies (ADR-027).

A failed attempt is classified once, here: a schema the server accepted but did not enforce
(``not_enforced``), a truncation that is a whitespace loop, a repetition loop, or a genuinely
long answer. Each kind is logged under its name; the remedies are the profile's, at most one
per kind and call, and only while the retry bound allows.
"""

from __future__ import annotations

import logging
from typing import Any

from typedspy._json import loads as bounded_loads
from typedspy._types import FailureKind
from typedspy.lm import BaseLM
from typedspy.parse import runaway_kind
from typedspy.profiles import LoopRemedy, Mode, Profile
from typedspy.schema import validate_instance

__all__ = [
    "TRUNCATION_KINDS",
    "enforcement_kind",
    "log_failure",
    "remedy_for",
    "remedy_turn",
    "runaway_remedy",
    "truncation_kind",
]

logger = logging.getLogger("typedspy")

TRUNCATION_KINDS: frozenset[FailureKind] = frozenset(
    {"truncated", "whitespace_loop", "repetition_loop"}
)
_LABEL = "[Automated feedback from typedspy's output validation, not a message from the user.]"


def truncation_kind(text: str | None) -> FailureKind:
    """``whitespace_loop``, ``repetition_loop``, or ``truncated`` for a genuinely long answer."""
    return runaway_kind(text or "") or "truncated"


def enforcement_kind(
    profile: Profile, mode: Mode, text: str | None, schema: dict[str, Any], parsed: FailureKind
) -> FailureKind:
    """``not_enforced`` when a schema went on the wire and the reply violates it, else ``parsed``.

    A reply that conforms to the sent schema but fails typedspy's own validation (constraints
    the target moved into descriptions) is an ordinary ``validation_failed``.
    """
    if text is None or not profile.sends_schema(mode):
        return parsed
    try:
        value = bounded_loads(text)  # nesting and number length bounded (ADR-028)
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
    return {"role": "user", "content": f"{_LABEL}\n{remedy.note}"}


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
