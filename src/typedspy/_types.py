"""Small value types shared by every stage: field errors, token usage, attempt records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = ["Attempt", "FailureKind", "FieldError", "Path", "Usage", "first_error"]

Path = tuple[str | int, ...]
"""Where a value sits in the output: field names and list indices (``("steps", 2, "priority")``)."""

FailureKind = Literal[
    "decode_failed",
    "validation_failed",
    "not_enforced",
    "truncated",
    "whitespace_loop",
    "repetition_loop",
    "repeated_reply",
]
"""Why an attempt failed (ADR-027).

``decode_failed``: no JSON value could be read. ``validation_failed``: decoded, but the values
failed validation. ``not_enforced``: the server accepted a schema it claims to enforce, but the
reply violates that very schema. ``truncated``: cut off at the token limit while genuinely long.
``whitespace_loop``: cut off, the tail only whitespace. ``repetition_loop``: cut off inside a
repeated phrase or symbol. ``repeated_reply``: the same failed reply, byte for byte, as an
earlier attempt of the call (the feedback did not move the model).
"""


@dataclass(frozen=True)
class FieldError:
    """One problem with one value of a model's output.

    Attributes:
        path: Field names and list indices leading to the value; empty for the whole output.
        message: A short, human-readable description, without documentation URLs.
    """

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message}"


def first_error(exc: ValidationError) -> FieldError:
    """The first problem Pydantic found: ``trajectory[0].calls[1].id: Field required``."""
    first = exc.errors()[0]
    return FieldError(tuple(first["loc"]), first["msg"])


def format_path(path: Path) -> str:
    """Render a path as ``action.steps[2].priority`` (``<root>`` for the empty path)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "<root>"


@dataclass(frozen=True)
class Usage:
    """Token counts reported by the endpoint; adds up across attempts with ``+``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True)
class Attempt:
    """One request to the model and what came of it.

    Attributes:
        number: 1 for the first request, 2 for the first retry, and so on.
        raw: The completion text the model returned (empty when it returned none).
        errors: What was wrong with it; empty for the attempt that succeeded.
        usage: Tokens spent on this request.
        kind: Why the attempt failed (a `FailureKind`); ``None`` for the attempt that
            succeeded, a refusal or a filtered completion.
        reasoning: The model's reasoning for this attempt, when the server sent any apart from
            the answer (never parsed as the answer).
    """

    number: int
    raw: str
    errors: tuple[FieldError, ...] = ()
    usage: Usage = field(default_factory=Usage)
    kind: FailureKind | None = None
    reasoning: str | None = None
