"""Regular expressions constrained-decoding engines can enforce, for values Pydantic accepts.

Engines turn ``pattern`` into a grammar, so a pattern must use only plain regular syntax: no
look-arounds, back-references or digit escapes (llama.cpp's converter and llguidance both take
character classes, groups, alternation and bounded repetition). Each pattern here matches only
strings Pydantic parses into the declared type, so an engine that enforces it cannot emit a
value that fails validation (reference/local-servers.md; tests/conformance/test_llguidance.py).
"""

from __future__ import annotations

__all__ = ["DATE", "DATE_TIME", "DECIMAL", "INTEGER"]

_D = "[0-9]"
# Years 0001-9999 (Python's date range).
_YEAR = f"({_D}{{3}}[1-9]|{_D}{{2}}[1-9]0|{_D}[1-9]00|[1-9]000)"
# Leap years: divisible by 4 and not by 100, or by 400.
_LEAP_YEAR = f"({_D}{{2}}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
_MONTH_DAY = (
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
    "|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    "|02-(0[1-9]|1[0-9]|2[0-8]))"
)
_DATE = f"({_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
# Seconds 00-59 (Pydantic refuses the leap second 60), fractions to microseconds.
_TIME = f"([01]{_D}|2[0-3]):[0-5]{_D}:[0-5]{_D}(\\.{_D}{{1,6}})?"
_OFFSET = f"(Z|[+-]([01]{_D}|2[0-3]):[0-5]{_D})"

DATE = f"^{_DATE}$"
"""A calendar date, ``YYYY-MM-DD`` (February 29th only in leap years)."""

DATE_TIME = f"^{_DATE}T{_TIME}{_OFFSET}?$"
"""An RFC 3339 date-time Pydantic accepts: upper-case ``T``, seconds below 60, an optional
offset (so both aware and naive ``datetime`` fields can be filled)."""

DECIMAL = f"^[+-]?({_D}+(\\.{_D}*)?|\\.{_D}+)$"
"""A decimal number written as a string (Pydantic's own ``Decimal`` pattern uses a look-ahead
that no engine supports)."""

INTEGER = f"^-?{_D}+$"
"""An integer written as a string: a JSON object key of a ``dict[int, V]``."""
