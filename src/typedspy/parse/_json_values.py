"""The values and errors the lenient decoder produces (shared by its strict fast path)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ErrorKind", "LenientDecodeError", "NonFinite", "depth_message"]

ErrorKind = Literal["syntax", "truncated", "depth", "digits"]


@dataclass(frozen=True, repr=False, slots=True)
class NonFinite:
    """A ``NaN``, ``Infinity`` or ``-Infinity`` token, or a number too large for a float.

    Not a float, so numeric Pydantic fields reject it rather than accept a value the model most
    likely did not mean.

    Attributes:
        token: ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``.
    """

    token: str

    def __post_init__(self) -> None:
        if self.token not in ("NaN", "Infinity", "-Infinity"):
            raise ValueError(f"not a non-finite token: {self.token!r}")

    def __repr__(self) -> str:
        return self.token


class LenientDecodeError(Exception):
    """The text is not a JSON value, even leniently.

    Attributes:
        message: What went wrong, and at which offset.
        offset: Where the decoder gave up.
        kind: ``"truncated"`` (the text ended mid-value), ``"depth"`` (nesting deeper than
            the active ``max_json_depth``), ``"digits"`` (a number with more digits than
            Python converts: ``max_number_digits``) or ``"syntax"``.
        path: The keys and indices leading to the value at fault, when known (a number with
            more digits than Python converts names its field).
    """

    def __init__(self, message: str, offset: int, kind: ErrorKind = "syntax") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.kind: ErrorKind = kind
        self.path: tuple[str | int, ...] = ()


def depth_message(max_depth: int, pos: int) -> str:
    """The report for nesting past the limit, naming it (the same words wherever it is found)."""
    return f"nesting deeper than {max_depth} levels (max_json_depth) at offset {pos}"
