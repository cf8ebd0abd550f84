"""Bounded strict JSON decoding for what endpoints send: nesting depth and number length.

``json.loads`` recurses once per nesting level: a body nested about 1,000 levels deep raised an
untyped `RecursionError` (issue 10), and decoding that deep starves whatever GC runs meanwhile
(finalizers, ``gc.callbacks``) of stack. `loads` refuses text nested past ``max_depth`` before
decoding it, with `JSONLimitError`: a C-speed bracket count settles almost every text, and only
texts with more opening brackets than the limit are scanned (strings skipped whole).
A number with more digits than Python converts
(``sys.get_int_max_str_digits()``, 4,300 by default) is reported as such, not as "not JSON".

The depth limit is the one `LM(max_json_depth=)` sets (ADR-048). The model-output parser reads
it through `active_depth`, which `depth_limit` sets in the call scope (`typedspy._scope`) around
one synchronous piece of decoding (never across an ``await`` or a ``yield``), so the parser's
many internal decoders need no extra argument.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, cast

from typedspy._scope import JSON_DEPTH, Saved, current
from typedspy._text import encodable

__all__ = [
    "MAX_JSON_DEPTH",
    "DuplicateKeyError",
    "JSONLimitError",
    "active_depth",
    "depth_exceeded",
    "depth_limit",
    "first_not_json",
    "loads",
    "nesting_exceeds",
    "path_at",
    "too_deep",
]

MAX_JSON_DEPTH = 256
"""Deepest nesting of objects and arrays accepted by default (the model output parser's too)."""


def active_depth() -> int:
    """The nesting limit for the JSON decoded now: `depth_limit`'s, else `MAX_JSON_DEPTH`."""
    depth = current().json_depth
    return MAX_JSON_DEPTH if depth is None else depth


class depth_limit:
    """Make ``max_depth`` the limit `active_depth` returns in this block (None: unchanged).

    Only around synchronous decoding: a ``yield`` inside the block would leak the limit to
    whoever consumes the generator. A class, not ``@contextmanager``: it wraps every parse.
    """

    __slots__ = ("_max_depth", "_saved")

    def __init__(self, max_depth: int | None) -> None:
        self._max_depth = max_depth
        self._saved: Saved | None = None

    def __enter__(self) -> None:
        if self._max_depth is not None and self._max_depth != active_depth():  # else: as it is
            self._saved = JSON_DEPTH.set(self._max_depth)

    def __exit__(self, *exc_info: object) -> None:
        if self._saved is not None:
            JSON_DEPTH.restore(self._saved)
            self._saved = None


_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
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


class DuplicateKeyError(ValueError):
    """A JSON object naming a key twice, read with ``loads(..., unique_keys=True)``."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, or `DuplicateKeyError` (``json.loads`` keeps the last)."""
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"the key {key!r} appears twice in one object")
            seen.add(key)
    return found


def first_not_json(
    value: Any, *, most: int = 10_000, max_depth: int = MAX_JSON_DEPTH, utf8: bool = False
) -> tuple[tuple[str | int, ...], object, str] | None:
    """The path, value and reason of the first thing inside ``value`` JSON cannot carry.

    A NaN or infinite float, a value other than a string, number, boolean, None, mapping, list
    or tuple (a set, bytes, an ``object()``, a model), a mapping key other than a string or an
    integer, or nesting deeper than ``max_depth`` (a structure that contains itself). With
    ``utf8`` (values sent as they are, not through ``json.dumps``), text UTF-8 cannot encode
    (a lone surrogate) and integer keys too. Walked without recursion, ``most`` values at most.
    A key JSON cannot carry is reported with the mapping holding it as the value.
    """
    pending: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while pending and most > 0:
        most -= 1
        path, item = pending.pop()
        if len(path) > max_depth:
            why = " (max_json_depth), or contains itself" if max_depth == MAX_JSON_DEPTH else ""
            return path[:1], item, f"nested deeper than {max_depth} levels{why}"
        if isinstance(item, (str, int)) or item is None:  # bool is an int
            if utf8 and isinstance(item, str) and encodable(item) is not item:
                return path, item, "text with a lone surrogate, which UTF-8 cannot encode"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return path, item, "JSON has no such number"
        elif isinstance(item, Mapping):
            for key, sub in cast("Mapping[object, Any]", item).items():
                text = isinstance(key, str) and (not utf8 or encodable(key) is key)
                if not text and (utf8 or not isinstance(key, int) or isinstance(key, bool)):
                    return path, item, f"the key {key!r} is not JSON text"
                pending.append(((*path, str(key)), sub))
        elif isinstance(item, (list, tuple)):
            pending += [((*path, i), sub) for i, sub in enumerate(cast("Sequence[Any]", item))]
        else:
            return path, item, f"{type(item).__name__} is no JSON value"
    return None


def depth_exceeded(value: Any, max_depth: int) -> bool:
    """Whether decoded ``value`` nests objects and arrays deeper than ``max_depth`` (no recursion).

    Visits containers only, one level at a time, and stops at the first level too deep: a
    completion body or a stream chunk has a handful of containers.
    """
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            return True
        below: list[Any] = []
        for node in level:
            items = node.values() if type(node) is dict else node
            below += [v for v in items if type(v) is dict or type(v) is list]
        level = below
    return False


def path_at(text: str, offset: int, start: int = 0) -> tuple[str | int, ...]:
    """The keys and indices of the value at ``offset`` in the JSON text starting at ``start``.

    The text up to ``offset`` is valid JSON (`loads` read it), so every key decodes.
    """
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
            stack[-1][1] = json.loads(last)
        elif token == "," and stack:
            top = stack[-1]
            top[1] = top[1] + 1 if top[0] == "[" else None
    return tuple(part for _, part in stack[:_MAX_PATH] if part is not None)


def loads(text: str, *, max_depth: int | None = None, unique_keys: bool = False) -> Any:
    """``json.loads`` within the depth and number-length limits.

    Args:
        text: The JSON text.
        max_depth: Deepest nesting accepted (default: `active_depth`).
        unique_keys: Refuse an object naming a key twice (files a person edits: a dataset, a
            saved program), where ``json.loads`` keeps the last value unsaid.

    Raises:
        JSONLimitError: Nested deeper than ``max_depth``, or a number with more digits than
            Python converts.
        DuplicateKeyError: With ``unique_keys``, an object naming a key twice.
        ValueError: Not JSON.
    """
    max_depth = active_depth() if max_depth is None else max_depth
    if nesting_exceeds(text, max_depth):
        raise too_deep(max_depth)
    try:
        value = json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except RecursionError:  # a max_depth set past what this interpreter's stack allows
        raise too_deep(max_depth) from None
    except ValueError as exc:
        if isinstance(exc, (json.JSONDecodeError, DuplicateKeyError)) or "digits" not in str(exc):
            raise
        raise number_too_long(text, _number_offset(text)) from None
    return value


def nesting_exceeds(text: str, max_depth: int, start: int = 0, stop: int | None = None) -> bool:
    """Whether the JSON value at ``text[start]`` opens more than ``max_depth`` nested brackets.

    Only the value is read (up to ``stop`` at most): the text after it costs nothing.

    Read before decoding, without recursion: ``json.loads`` recurses once per level, and a
    decode that runs the stack to the interpreter's limit leaves no room for the finalizers
    and GC callbacks that run meanwhile (they fail as "Exception ignored"). A text with no more
    opening brackets than ``max_depth`` cannot exceed it, which a C-speed count settles; only
    texts with more are scanned, brackets inside strings skipped.
    """
    stop = len(text) if stop is None else stop
    if text.count("[", start, stop) + text.count("{", start, stop) <= max_depth:
        return False
    depth = 0
    for match in _BRACKETS.finditer(text, start, stop):
        bracket = match.group()
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                return True
        elif bracket in "]}":
            depth -= 1
            if depth <= 0:  # the value closed: what follows is no part of it
                return False
    return False


def number_too_long(text: str, offset: int, start: int = 0) -> JSONLimitError:
    """The error for a number at ``offset`` with more digits than Python converts."""
    allowed = sys.get_int_max_str_digits()
    digits = re.match(r"-?\d*", text[offset : offset + allowed + 50])
    count = len(digits.group().lstrip("-")) if digits else 0
    path = path_at(text, offset, start)
    where = "/".join(map(str, path)) or "<root>"
    return JSONLimitError(
        f"{where}: a number of {count if count <= allowed else f'more than {allowed}'} digits; "
        f"JSON numbers may have at most {allowed} (max_number_digits, "
        "sys.set_int_max_str_digits())",
        limit="max_number_digits",
        allowed=allowed,
        offset=offset,
        path=path,
    )


def too_deep(max_depth: int) -> JSONLimitError:
    """The error for JSON nested deeper than ``max_depth``, naming the limit."""
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
