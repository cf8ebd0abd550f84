"""Checks of the options a constructor takes: a wrong type or range is a `ConfigurationError`.

One place for what every public constructor refuses at once (``Predict(max_retries="2")``,
``LM(timeout="x")``, ``RateLimit(requests_per_minute="x")``), so a bad value never reaches an
``int()``, a comparison or the SDK later, mid-call, as an untyped error. The message names the
owner, the parameter, the value and what was expected: ``Predict(max_retries='2'): expected an
int >= 0 or None``.
"""

from __future__ import annotations

import math
import reprlib
import threading
from typing import NoReturn

from typedspy.errors._base import ConfigurationError

__all__ = ["MAX_SECONDS", "check_finite", "check_instance", "check_int", "check_number"]

MAX_SECONDS = threading.TIMEOUT_MAX
"""The longest wait a timer or a socket takes (about 292 years on 64-bit platforms)."""

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 60


def _refuse(owner: str, name: str, value: object, expected: str, optional: bool) -> NoReturn:
    alternative = " or None" if optional else ""
    raise ConfigurationError(
        f"{owner}({name}={_repr.repr(value)}): expected {expected}{alternative}"
    )


def check_int(
    owner: str, name: str, value: object, *, minimum: int = 1, optional: bool = True
) -> None:
    """Refuse ``value`` unless it is an int (not a bool) >= ``minimum``, or None if optional.

    Raises:
        ConfigurationError: Naming ``owner``, ``name`` and the value.
    """
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        _refuse(owner, name, value, f"an int >= {minimum}", optional)


def check_number(
    owner: str, name: str, value: object, *, unit: str = "", optional: bool = True
) -> None:
    """Refuse ``value`` unless it is a finite int or float > 0 (not a bool), or None.

    Infinity is refused too: None is how an option says "no bound", and an infinite timeout,
    rate or pause reached the SDK or a timer as an untyped OverflowError. So is a number of
    ``seconds`` past `MAX_SECONDS` (``timeout=1e10`` overflowed the socket's timer).

    Args:
        owner: Who takes the option, as the message names it (``"LM"``).
        name: The parameter.
        value: What was given.
        unit: What the number counts, for the message (``"seconds"``).
        optional: None is accepted.

    Raises:
        ConfigurationError: Naming ``owner``, ``name`` and the value.
    """
    if value is None and optional:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        _refuse(owner, name, value, f"a finite number{f' of {unit}' if unit else ''} > 0", optional)
    if unit == "seconds" and value > MAX_SECONDS:
        _refuse(owner, name, value, f"at most {MAX_SECONDS:.0f} seconds", optional)


def check_finite(owner: str, name: str, value: object) -> None:
    """Refuse ``value`` unless it is a finite int or float (not a bool): a score, a threshold.

    Raises:
        ConfigurationError: Naming ``owner``, ``name`` and the value.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _refuse(owner, name, value, "a finite number", False)


def check_instance(
    owner: str,
    name: str,
    value: object,
    expected: type | tuple[type, ...],
    what: str,
    *,
    optional: bool = True,
) -> None:
    """Refuse ``value`` unless it is an instance of ``expected`` (``what`` names it), or None.

    Raises:
        ConfigurationError: Naming ``owner``, ``name``, the value and ``what``.
    """
    if value is None and optional:
        return
    if not isinstance(value, expected):
        _refuse(owner, name, value, what, optional)
