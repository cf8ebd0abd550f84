"""Where the members of a streamed JSON object start and end, read incrementally.

Only the structure is scanned (strings and their escapes, brackets, and ``:`` and ``,`` at depth
one); values are left to jiter. The scan is resumable: each call is given only the text added
since the last one (with its offset in the whole), so a stream is scanned once in all, however
it is chunked, and the scanner never needs the text before the piece it is given.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["JsonScan"]

_STRING_BODY = re.compile(r'[^"\\]*')
_PLAIN = re.compile(r'[^"{}\[\],:]*')
_KEY_LIMIT = 4096  # a longer key names no field: only its first characters are kept


class JsonScan:
    """Where the members of the top-level object start and end (values are left to jiter)."""

    def __init__(self, start: int) -> None:
        self.start = start  # index of the opening brace
        self.end = -1  # index after the closing brace, once seen
        self.pos = start  # how far the text was scanned
        self.member: str | None = None  # the depth-1 key whose value is being written
        self._stack: list[str] = []
        self._in_string = False
        self._escaped = False
        self._key: list[str] | None = None  # the pieces of the object key being read
        self._key_length = 0
        self._expect_key = False
        self._last_key: str | None = None  # the latest depth-1 key

    def scan(
        self, text: str, offset: int, fields: Mapping[str, Any]
    ) -> list[tuple[int, str | None]]:
        """Scan ``text`` (it starts at index ``offset`` of the whole) on from the last call.

        Returns ``(index, field)`` wherever attribution changes.
        """
        changes: list[tuple[int, str | None]] = []
        i, n = max(self.pos - offset, 0), len(text)
        while i < n and self.end < 0:
            if self._in_string:
                i = self._string(text, i)
            else:
                i = self._structure(text, i, offset, fields, changes)
        self.pos = offset + min(i, n)
        return changes

    def _string(self, text: str, i: int) -> int:
        """Skip string content from ``i``; the index after what was consumed."""
        if self._escaped:
            self._escaped = False
            self._keep(text, i, i + 1)
            return i + 1
        end = _STRING_BODY.match(text, i).end()  # type: ignore[union-attr]
        self._keep(text, i, end)
        if end >= len(text):
            return end
        if text[end] == "\\":
            self._escaped = True
            self._keep(text, end, end + 1)
            return end + 1
        self._in_string = False
        if self._key is not None:
            if len(self._stack) == 1:
                self._last_key = _decode_key("".join(self._key))
            self._key = None
        return end + 1

    def _keep(self, text: str, start: int, end: int) -> None:
        """Keep the key's characters in ``text[start:end]`` (when a key is being read)."""
        key = self._key
        if key is not None and end > start and self._key_length < _KEY_LIMIT:
            key.append(text[start : min(end, start + _KEY_LIMIT)])
            self._key_length += end - start

    def _structure(
        self,
        text: str,
        i: int,
        offset: int,
        fields: Mapping[str, Any],
        changes: list[tuple[int, str | None]],
    ) -> int:
        """Read the next structural character from ``i``; the index after it."""
        i = _PLAIN.match(text, i).end()  # type: ignore[union-attr]
        if i >= len(text):
            return i
        char, stack = text[i], self._stack
        if char == '"':
            self._in_string = True
            if self._expect_key and stack and stack[-1] == "{":
                self._key, self._key_length = [], 0
        elif char in "{[":
            stack.append(char)
            self._expect_key = char == "{"
        elif char in "}]":
            if stack:
                stack.pop()
            self._expect_key = False
            if not stack:
                self.end, self.member = offset + i + 1, None
                changes.append((offset + i, None))
        elif char == ":":
            self._expect_key = False
            if len(stack) == 1:
                self.member = self._last_key
                key = self._last_key
                changes.append((offset + i + 1, key if key in fields else None))
        elif char == ",":
            self._expect_key = bool(stack) and stack[-1] == "{"
            if len(stack) == 1:
                self.member = None
                changes.append((offset + i, None))
        return i + 1


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        key = json.loads(f'"{raw}"')
    except ValueError:
        return raw
    return key if isinstance(key, str) else raw
