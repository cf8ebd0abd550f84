"""A bounded, lenient JSON decoder for what language models actually emit.

Strict JSON goes through the C decoder of :mod:`json` (`scan_strict`, also the candidate search's
fast path); anything else through an iterative parser (explicit stack, depth limit, no recursion)
that also accepts trailing commas, single and curly quotes, Python literals, comments, unquoted
keys, stray BOM / zero-width characters and NaN / Infinity tokens. Nothing but
`LenientDecodeError` escapes, whatever the ``str`` input.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from typedspy._json import active_depth, depth_limit, nesting_exceeds, number_too_long

__all__ = ["LenientDecodeError", "NonFinite", "decode_lenient", "scan_strict", "scan_value"]

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


# -- the strict fast path: JSON through the C decoder, when it suffices --


class _NotStrictError(Exception):
    """A NaN / Infinity token: accepted by json, but a repair here."""


def _reject_constant(token: str) -> object:
    raise _NotStrictError(token)


def _finite_or_not(token: str) -> object:
    value = float(token)
    return value if math.isfinite(value) else NonFinite("Infinity" if value > 0 else "-Infinity")


_STRICT = json.JSONDecoder(parse_float=_finite_or_not, parse_constant=_reject_constant)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def scan_strict(text: str, start: int, stop: int | None = None) -> tuple[object, int] | None:
    """Decode strict JSON at ``text[start]`` with the C decoder, exactly as `scan_value` would.

    Args:
        text: The text to read.
        start: Where the value starts (no whitespace is skipped).
        stop: Decode a copy of ``text[start:stop]``, so the value ends by then (default: the
            text itself, to its end). json's error path counts the newlines before the
            failure, so without a copy a failure costs O(``start``).

    Returns:
        ``(value, end)``, or None when the lenient parser is needed (invalid or non-strict JSON,
        a lone surrogate escape, nesting deeper than the active ``max_json_depth``).
    """
    if nesting_exceeds(text, active_depth(), start, stop):
        return None  # the lenient parser reports it, with the offset; json would recurse
    try:
        if stop is None:
            value, end = _STRICT.raw_decode(text, start)
        else:
            value, end = _STRICT.raw_decode(text[start:stop])
            end += start
    except (ValueError, RecursionError, _NotStrictError):
        return None
    if text.find("\\u", start, end) >= 0 and _SURROGATE_ESCAPE.search(text, start, end):
        return None  # json keeps lone surrogates; they become U+FFFD here
    return value, end


# -- the lenient parser --

_JSON_SPACE = re.compile(r"[ \t\n\r]*")
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"
GAP = re.compile(f"[\\s{_INVISIBLE}]*")
"""Whitespace and invisible characters, as skipped between tokens."""
# After JSON whitespace, these mean a repair: other spaces, invisible characters, comments.
_UNUSUAL = frozenset(c for c in map(chr, range(0x3001)) if c.isspace()) | set(_INVISIBLE + "/")
_CLOSING = {'"': '"', "'": "'", "“": "”", "”": "”", "‘": "’"}
STRING_REST = {
    opener: re.compile(f"[^{closer}\\\\]*(?:\\\\.[^{closer}\\\\]*)*{closer}", re.S)
    for opener, closer in _CLOSING.items()
}
"""For each string opener: the rest of the string, through its closing quote."""
_CONTROL = re.compile(r"[\x00-\x1f]")
_ESCAPE = re.compile(
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|u([0-9a-fA-F]{4})|(.))",
    re.S,
)
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# [0-9], not \d: int() would accept other scripts' digits.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NUMBER_PREFIX = re.compile(r"-?[0-9]*(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?")
_IDENT = re.compile(r"(?:[^\W\d]|\$)[\w$]*")
_LITERALS: dict[str, object] = {"true": True, "false": False, "null": None}
_LENIENT_LITERALS: dict[str, object] = {"True": True, "False": False, "None": None}
_LENIENT_LITERALS.update(NaN=NonFinite("NaN"), Infinity=NonFinite("Infinity"))


class _Frame:
    """One open object or array on the parser's explicit stack."""

    __slots__ = ("closer", "container", "key", "start")

    def __init__(self, start: int, is_object: bool) -> None:
        self.start = start
        self.key = ""
        self.closer = "}" if is_object else "]"
        self.container: dict[str, object] | list[object] = {} if is_object else []

    def here(self) -> str | int:
        """The key or index of the member being parsed."""
        return self.key if isinstance(self.container, dict) else len(self.container)

    def add(self, value: object) -> None:
        if isinstance(self.container, dict):
            self.container[self.key] = value
        else:
            self.container.append(value)


_MAX_PATH = 64  # path parts reported, as `typedspy._json.path_at` reports them
_OPENED = object()  # "a container was opened": its first member is parsed next, not attached


class _Parser:
    """Iterative lenient parser over ``text[:stop]``; records whether any lenient rule fired."""

    __slots__ = ("max_depth", "number_end", "repaired", "stop", "text")

    def __init__(self, text: str, stop: int) -> None:
        self.text = text
        self.stop = stop
        self.max_depth = active_depth()
        self.repaired = False
        self.number_end = -1

    def error(self, what: str, pos: int) -> LenientDecodeError:
        if pos < self.stop:
            return LenientDecodeError(what, pos)
        if self.stop >= len(self.text):
            return LenientDecodeError(f"truncated JSON: {what}", pos, "truncated")
        # The closing bracket of a region was eaten by a string or comment: malformed, not cut.
        return LenientDecodeError(f"{what} (region ends at offset {self.stop})", pos)

    def skip(self, pos: int) -> int:
        """Skip whitespace, comments and invisible characters outside strings."""
        text, stop = self.text, self.stop
        space = _JSON_SPACE.match(text, pos, stop)
        pos = pos if space is None else space.end()
        while pos < stop and text[pos] in _UNUSUAL:
            if text[pos] != "/":
                gap = GAP.match(text, pos, stop)
                pos = pos + 1 if gap is None else max(pos + 1, gap.end())
            elif text.startswith("//", pos, stop):
                newline = text.find("\n", pos + 2, stop)
                pos = stop if newline < 0 else newline + 1
            elif text.startswith("/*", pos, stop):
                close = text.find("*/", pos + 2, stop)
                if close < 0:
                    raise self.error(f"unterminated comment at offset {pos}", stop)
                pos = close + 2
            else:
                return pos
            self.repaired = True
        return pos

    def parse(self, pos: int, truncatable: bool) -> tuple[object, int]:
        """Parse one value at ``pos``; return it and the offset just after it."""
        frames: list[_Frame] = []
        pos = self.skip(pos)
        while True:
            try:
                value, pos = self.value(pos, frames)
            except LenientDecodeError as exc:
                if exc.kind == "digits":  # name the field by the keys read (quoted or not)
                    exc.path = tuple(frame.here() for frame in frames[:_MAX_PATH])
                raise
            if value is _OPENED:
                continue
            while frames:
                frame = frames[-1]
                frame.add(value)
                pos, closed = self.after_member(frame, pos, truncatable and len(frames) == 1)
                if not closed:
                    break
                frames.pop()
                value = frame.container
            else:
                return value, pos

    def after_member(self, frame: _Frame, pos: int, truncatable: bool) -> tuple[int, bool]:
        """Consume what follows a member; say whether it closed the container."""
        text, stop = self.text, self.stop
        pos = self.skip(pos)
        is_object = frame.closer == "}"
        # A number running into the end of the text may have lost digits, so it is not complete.
        if pos >= stop and truncatable and is_object and self.number_end != stop:
            self.repaired = True
            return pos, True
        if pos >= stop:
            kind = "object" if is_object else "array"
            raise self.error(f"unclosed {kind} at offset {frame.start}", pos)
        if text[pos] == frame.closer:
            return pos + 1, True
        if text[pos] != ",":
            got = text[pos]
            raise self.error(f"expected ',' or '{frame.closer}' at offset {pos}, got {got!r}", pos)
        pos = self.skip(pos + 1)
        if pos < stop and text[pos] == frame.closer:
            self.repaired = True
            return pos + 1, True
        if is_object:
            if pos >= stop and truncatable:
                self.repaired = True
                return pos, True
            frame.key, pos = self.key(pos)
        return pos, False

    def value(self, pos: int, frames: list[_Frame]) -> tuple[object, int]:
        text, stop = self.text, self.stop
        if pos >= stop:
            raise self.error(f"expected a value at offset {pos}", pos)
        ch = text[pos]
        if ch in _CLOSING:
            return self.string(pos)
        if ch != "{" and ch != "[":
            return self.scalar(pos)
        if len(frames) >= self.max_depth:
            limit = self.max_depth
            message = f"nesting deeper than {limit} levels (max_json_depth) at offset {pos}"
            raise LenientDecodeError(message, pos, "depth")
        frame = _Frame(pos, ch == "{")
        pos = self.skip(pos + 1)
        if pos < stop and text[pos] == frame.closer:
            return frame.container, pos + 1
        if ch == "{":
            frame.key, pos = self.key(pos)
        frames.append(frame)
        return _OPENED, pos

    def key(self, pos: int) -> tuple[str, int]:
        """Parse a property name and its colon; return the name and where its value starts."""
        text, stop = self.text, self.stop
        if pos < stop and text[pos] in _CLOSING:
            key, pos = self.string(pos)
        else:
            match = _IDENT.match(text, pos, stop) if pos < stop else None
            if match is None:
                raise self.error(f"expected a property name at offset {pos}", pos)
            key, pos = match.group(), match.end()
            self.repaired = True
        pos = self.skip(pos)
        if pos >= stop or text[pos] != ":":
            raise self.error(f"expected ':' after a property name at offset {pos}", pos)
        return key, self.skip(pos + 1)

    def string(self, pos: int) -> tuple[str, int]:
        text, opener = self.text, self.text[pos]
        if opener != '"':
            self.repaired = True
        rest = STRING_REST[opener].match(text, pos + 1, self.stop)
        if rest is None:
            raise self.error(f"unterminated string at offset {pos}", self.stop)
        raw = text[pos + 1 : rest.end() - 1]
        if not self.repaired and _CONTROL.search(raw):
            self.repaired = True  # raw newlines and tabs: invalid JSON, but unambiguous
        if "\\" in raw:
            raw = _ESCAPE.sub(self.unescape_with(_CLOSING[opener]), raw)
        return raw, rest.end()

    def unescape_with(self, closer: str) -> Callable[[re.Match[str]], str]:
        def unescape(match: re.Match[str]) -> str:
            high, low, code, char = match.groups()
            if high is not None:
                return chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00)
            if code is not None:
                if 0xD800 <= int(code, 16) <= 0xDFFF:
                    self.repaired = True  # a lone surrogate could not be encoded later on
                    return "\ufffd"
                return chr(int(code, 16))
            simple = _ESCAPES.get(char)
            if simple is not None:
                return simple
            self.repaired = True
            # Unknown escapes stay verbatim, so a Windows path like "C:\temp" keeps its backslash.
            return char if char in (closer, "'") else "\\" + char

        return unescape

    def scalar(self, pos: int) -> tuple[object, int]:
        """Parse a number or a bare literal (true, None, NaN, ...)."""
        text, stop = self.text, self.stop
        if text.startswith("-Infinity", pos, stop):
            self.repaired = True
            return NonFinite("-Infinity"), pos + 9
        if text[pos] == "-" or "0" <= text[pos] <= "9":
            return self.number(pos)
        match = _IDENT.match(text, pos, stop)
        if match is None:
            raise self.error(f"unexpected character {text[pos]!r} at offset {pos}", pos)
        word = match.group()
        if word in _LITERALS:
            return _LITERALS[word], match.end()
        if word in _LENIENT_LITERALS:
            self.repaired = True
            return _LENIENT_LITERALS[word], match.end()
        if match.end() >= stop and any(name.startswith(word) for name in _LITERALS):
            raise self.error(f"incomplete literal at offset {pos}", stop)
        raise self.error(f"unexpected token {word[:20]!r} at offset {pos}", pos)

    def number(self, pos: int) -> tuple[object, int]:
        text, stop = self.text, self.stop
        match = _NUMBER.match(text, pos, stop)
        if match is None or (match.end() < stop and text[match.end()] in "0123456789.eE+-"):
            prefix = _NUMBER_PREFIX.match(text, pos, stop)
            if prefix is not None and prefix.end() >= stop:
                raise self.error(f"incomplete number at offset {pos}", stop)
            raise self.error(f"invalid number at offset {pos}", pos)
        self.number_end = end = match.end()
        if match.group(1) is None and match.group(2) is None:
            try:
                return int(match.group()), end
            except ValueError:  # more digits than int() accepts from text
                limit = number_too_long(text, pos, pos)  # the path: see `parse`
                message = f"{limit.args[0].split(': ', 1)[1]} (offset {pos})"
                raise LenientDecodeError(message, pos, "digits") from None
        return _finite_or_not(match.group()), end


def scan_value(
    text: str,
    start: int,
    *,
    stop: int | None = None,
    allow_truncated_root: bool = False,
    strict_first: bool = True,
) -> tuple[object, int, bool]:
    """Decode one JSON value starting at ``text[start]`` (leading whitespace is skipped).

    Args:
        text: The text to read.
        start: Where the value starts.
        stop: Do not read at or beyond this offset (default: the end of ``text``).
        allow_truncated_root: When the text ends right after a complete member of the root
            object (optionally followed by a comma), supply the closing brace.
        strict_first: Try the C decoder first: faster for strict JSON, a wasted pass otherwise.

    Returns:
        ``(value, end, repaired)``: the value, the offset just after it, and whether a lenient
        rule (or a supplied closing brace) was needed.

    Raises:
        LenientDecodeError: No value starts there, or it is malformed, too deep or cut off.
    """
    limit = len(text) if stop is None else max(0, min(stop, len(text)))
    if not 0 <= start <= limit:
        raise LenientDecodeError(f"start offset {start} is outside the text", start)
    parser = _Parser(text, limit)
    pos = parser.skip(start)
    if strict_first and pos < limit:
        strict = scan_strict(text, pos, None if stop is None else limit)
        if strict is not None:
            return strict[0], strict[1], parser.repaired
    value, end = parser.parse(pos, allow_truncated_root)
    return value, end, parser.repaired


def decode_lenient(
    text: str, *, allow_truncated_root: bool = False, max_depth: int | None = None
) -> object:
    """Decode the one JSON value that makes up ``text`` (surrounding whitespace allowed).

    Args:
        text: The whole text of the value.
        allow_truncated_root: See `scan_value`.
        max_depth: Deepest nesting of objects and arrays (default: the active
            ``max_json_depth``, 256 unless a caller set it).

    Returns:
        The value: dict, list, str, int, float, bool, None or `NonFinite`.

    Raises:
        LenientDecodeError: ``text`` is not exactly one (leniently) valid JSON value.
    """
    parser = _Parser(text, len(text))
    start = parser.skip(0)
    if start >= len(text):
        raise LenientDecodeError("no JSON value found (empty input)", start)
    with depth_limit(max_depth):
        value, end, _ = scan_value(text, start, allow_truncated_root=allow_truncated_root)
    end = parser.skip(end)
    if end < len(text):
        raise LenientDecodeError(f"unexpected data after the JSON value at offset {end}", end)
    return value
