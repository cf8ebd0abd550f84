"""Bounded strict JSON decoding for what endpoints send: nesting depth and number length.

``json.loads`` recurses once per nesting level: a body nested about 1,000 levels deep raised an
untyped `RecursionError` (issue 10). `loads` turns that into `JSONLimitError`, and checks the
decoded value against ``max_depth`` without recursion, visiting containers only (a completion
body has a handful: its content is one string), so the common case costs microseconds. A scan of
the text before decoding was measured at 2-3 times ``json.loads`` on an 8 KB body whose content
string holds JSON. A number with more digits than Python converts
(``sys.get_int_max_str_digits()``, 4,300 by default) is reported as such, not as "not JSON".
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "JSONLimitError", "depth_exceeded", "loads", "path_at"]

MAX_JSON_DEPTH = 256
"""Deepest nesting of objects and arrays accepted by default (the model output parser's too)."""

_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_MAX_PATH = 64  # path parts reported


class JSONLimitError(ValueError):
    """A JSON document past a limit.

    Attributes:
        limit: ``"max_json_depth"`` or ``"max_number_digits"``.
        allowed: The limit's value.
        offset: Where in the text the limit was passed.
        path: The keys and indices leading there.
    """

    def __init__(
        self, message: str, *, limit: str, allowed: int, offset: int, path: tuple[str | int, ...]
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed
        self.offset = offset
        self.path = path


def depth_exceeded(value: Any, max_depth: int) -> bool:
    """Whether decoded ``value`` nests objects and arrays deeper than ``max_depth`` (no recursion).

    Visits containers only, and stops at the first one too deep: a completion body has a handful.
    """
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        current, depth = pending.pop()
        if depth > max_depth:
            return True
        items = current.values() if isinstance(current, dict) else current
        pending.extend((v, depth + 1) for v in items if isinstance(v, (dict, list)))  # pyright: ignore[reportUnknownVariableType]
    return False


def path_at(text: str, offset: int, start: int = 0) -> tuple[str | int, ...]:
    """The keys and indices of the value at ``offset`` in the JSON text starting at ``start``."""
    stack: list[list[Any]] = []  # [bracket, key or index]
    last = ""
    for match in _TOKENS.finditer(text, start, offset):
        token = match.group()
        if token[0] == '"':
            last = token
        elif token in "[{":
            stack.append([token, 0 if token == "[" else None])
        elif token in "]}":
            if stack:
                stack.pop()
        elif token == ":" and stack and stack[-1][0] == "{":
            try:
                stack[-1][1] = json.loads(last)
            except ValueError:
                stack[-1][1] = last.strip('"')
        elif token == "," and stack:
            stack[-1][1] = stack[-1][1] + 1 if stack[-1][0] == "[" else None
    return tuple(part for _, part in stack[:_MAX_PATH] if part is not None)


def loads(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` within the depth and number-length limits.

    Raises:
        JSONLimitError: Nested deeper than ``max_depth``, or a number with more digits than
            Python converts.
        ValueError: Not JSON.
    """
    try:
        value = json.loads(text)
    except RecursionError:  # deeper than this interpreter's stack allows
        raise _too_deep(max_depth) from None
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError) or "digits" not in str(exc):
            raise
        raise number_too_long(text, _number_offset(text)) from None
    if isinstance(value, (dict, list)) and depth_exceeded(value, max_depth):
        raise _too_deep(max_depth)
    return value


def number_too_long(text: str, offset: int, start: int = 0) -> JSONLimitError:
    """The error for a number at ``offset`` with more digits than Python converts."""
    allowed = sys.get_int_max_str_digits()
    digits = re.match(r"-?\d*", text[offset : offset + allowed + 50])
    count = len(digits.group().lstrip("-")) if digits else 0
    path = path_at(text, offset, start)
    where = "/".join(map(str, path)) or "<root>"
    return JSONLimitError(
        f"{where}: a number of {count if count <= allowed else f'more than {allowed}'} digits; "
        f"JSON numbers may have at most {allowed} (sys.get_int_max_str_digits())",
        limit="max_number_digits",
        allowed=allowed,
        offset=offset,
        path=path,
    )


def _too_deep(max_depth: int) -> JSONLimitError:
    return JSONLimitError(
        f"JSON nested deeper than {max_depth} levels (max_json_depth)",
        limit="max_json_depth",
        allowed=max_depth,
        offset=-1,
        path=(),
    )


def _number_offset(text: str) -> int:
    allowed = sys.get_int_max_str_digits()
    match = re.search(r"-?\d{%d,}" % (allowed + 1), text)  # noqa: UP031
    return match.start() if match else 0
