"""The strict fast path of the lenient decoder: JSON through the C decoder, when it suffices."""

from __future__ import annotations

import json
import math
import re

from typedspy._json import active_depth, nesting_exceeds
from typedspy.parse._json_values import LenientDecodeError, NonFinite

__all__ = ["finite_or_not", "scan_strict", "strict_truncated"]

_TRUNCATION_MESSAGES = {
    "Expecting value": "expected a value",
    "Expecting ',' delimiter": "expected ',' or a closing bracket",
    "Expecting ':' delimiter": "expected ':' after a property name",
    "Expecting property name enclosed in double quotes": "expected a property name",
}


class _NotStrictError(Exception):
    """A NaN / Infinity token: accepted by json, but a repair here."""


def _reject_constant(token: str) -> object:
    raise _NotStrictError(token)


def finite_or_not(token: str) -> object:
    value = float(token)
    return value if math.isfinite(value) else NonFinite("Infinity" if value > 0 else "-Infinity")


_STRICT = json.JSONDecoder(parse_float=finite_or_not, parse_constant=_reject_constant)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def scan_strict(
    text: str, start: int, stop: int | None = None, *, sliced: bool = False
) -> tuple[object, int] | None:
    """Decode strict JSON at ``text[start]`` with the C decoder, exactly as `scan_value` would.

    Args:
        text: The text to read.
        start: Where the value starts (no whitespace is skipped).
        stop: The value must end at or before this offset (default: the end of ``text``).
        sliced: Decode a copy of ``text[start:stop]``. json's error path counts the newlines
            before the failure, so without a copy a failure costs O(``start``).

    Returns:
        ``(value, end)``, or None when the lenient parser is needed (invalid or non-strict JSON,
        a lone surrogate escape, nesting deeper than the active ``max_json_depth``).
    """
    stop = len(text) if stop is None else stop
    if nesting_exceeds(text, active_depth(), start, stop):
        return None  # the lenient parser reports it, with the offset; json would recurse
    try:
        if sliced:
            value, end = _STRICT.raw_decode(text[start:stop])
            end += start
        else:
            value, end = _STRICT.raw_decode(text, start)
    except (ValueError, RecursionError, _NotStrictError):
        return None
    if end > stop:
        return None
    if text.find("\\u", start, end) >= 0 and _SURROGATE_ESCAPE.search(text, start, end):
        return None  # json keeps lone surrogates; they become U+FFFD here
    return value, end


def strict_truncated(text: str, start: int) -> tuple[object, int] | None:
    """Settle a truncated strict-JSON root object at C speed; None when it is another case.

    Raises:
        LenientDecodeError: The text is strict JSON cut off where no brace can be supplied.
    """
    if nesting_exceeds(text, active_depth(), start):
        return None  # the lenient parser reports it; json would recurse that deep
    body = text[start:]
    try:
        _STRICT.raw_decode(body)
        return None
    except json.JSONDecodeError as exc:
        unterminated = exc.msg.startswith("Unterminated string")
        if not unterminated and exc.pos < len(body):
            return None  # not strict JSON (or not cut off): the lenient parser decides
        where, what = start + exc.pos, _TRUNCATION_MESSAGES.get(exc.msg, exc.msg)
    except (ValueError, RecursionError, _NotStrictError):
        return None
    if unterminated:
        message = f"truncated JSON: unterminated string at offset {where}"
        raise LenientDecodeError(message, where, "truncated")
    trimmed = body.rstrip()
    trimmed = trimmed[:-1] if trimmed.endswith(",") else trimmed
    # A number running into the end of the text may have lost digits, so it is not complete.
    if not body[-1].isdigit():
        try:
            value, end = _STRICT.raw_decode(trimmed + "}")
        except (ValueError, RecursionError, _NotStrictError):
            value, end = None, -1
        if end == len(trimmed) + 1 and isinstance(value, dict) and value:
            return (value, len(text)) if scan_strict(trimmed + "}", 0) else None
    raise LenientDecodeError(f"truncated JSON: {what} at offset {where}", where, "truncated")
