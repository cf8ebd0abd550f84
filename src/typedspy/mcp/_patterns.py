"""Regular expressions from remote schemas, on RE2: linear in the text, whatever the pattern.

A remote tool's ``pattern`` and ``patternProperties`` are chosen by the MCP server. Python's
``re`` backtracks, so ``^(a+)+$`` takes about 2^n steps on ``"a" * n + "!"`` and blocks the
event loop; RE2 (``google-re2``, in the ``mcp`` extra) has no backtracking and answers in time
linear in the text. What it gives up (backreferences, lookaround) is refused: a pattern it cannot
compile is a `PatternError`, never a fallback to ``re`` (ADR-053).
"""

from __future__ import annotations

import functools
from typing import Protocol

import re2  # type: ignore[import-untyped]

__all__ = ["PatternError", "Regex", "compiled"]

_MAX_MEMORY = 8 << 20  # bytes one compiled pattern may use (RE2's default): bounds compiling too


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why (RE2's own words)."""


class Regex(Protocol):
    """A compiled RE2 pattern (the part typedspy uses)."""

    def search(self, text: str) -> object | None:
        """The first match anywhere in ``text``, or None."""


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Regex:
    """``pattern`` compiled by RE2 (cached).

    Raises:
        PatternError: RE2 cannot compile it: a backreference, lookaround, a repetition past
            1,000, a syntax error, or more than 8 MiB of automaton.
    """
    options = re2.Options()
    options.log_errors = False  # the error is raised, not printed to stderr
    options.max_mem = _MAX_MEMORY
    try:
        regex: Regex = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(text) from None
    return regex
