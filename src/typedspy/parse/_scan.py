"""Where the members of a streamed JSON object start and end, read incrementally.

Only the structure is scanned (strings and their escapes, brackets, and ``:`` and ``,`` at depth
one); values are left to jiter. The scan is resumable: each call reads only the text added since
the last one, so a stream is scanned once in all, however it is chunked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["JsonScan"]

_STRING_BODY = re.compile(r'[^"\\]*')
_PLAIN = re.compile(r'[^"{}\[\],:]*')


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
        self._key_start = -1  # where the content of the key being read starts
        self._expect_key = False
        self._key: str | None = None  # the latest depth-1 key

    def scan(self, text: str, fields: Mapping[str, Any]) -> list[tuple[int, str | None]]:
        """Scan the new text; return ``(index, field)`` wherever attribution changes."""
        changes: list[tuple[int, str | None]] = []
        i, n = self.pos, len(text)
        while i < n and self.end < 0:
            if self._in_string:
                i = self._string(text, i)
            else:
                i = self._structure(text, i, fields, changes)
        self.pos = min(i, n)
        return changes

    def _string(self, text: str, i: int) -> int:
        """Skip string content from ``i``; the index after what was consumed."""
        if self._escaped:
            self._escaped = False
            return i + 1
        i = _STRING_BODY.match(text, i).end()  # type: ignore[union-attr]
        if i >= len(text):
            return i
        if text[i] == "\\":
            self._escaped = True
            return i + 1
        self._in_string = False
        if self._key_start >= 0:
            if len(self._stack) == 1:
                self._key = _decode_key(text[self._key_start : i])
            self._key_start = -1
        return i + 1

    def _structure(
        self,
        text: str,
        i: int,
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
                self._key_start = i + 1
        elif char in "{[":
            stack.append(char)
            self._expect_key = char == "{"
        elif char in "}]":
            if stack:
                stack.pop()
            self._expect_key = False
            if not stack:
                self.end, self.member = i + 1, None
                changes.append((i, None))
        elif char == ":":
            self._expect_key = False
            if len(stack) == 1:
                self.member = self._key
                changes.append((i + 1, self._key if self._key in fields else None))
        elif char == ",":
            self._expect_key = bool(stack) and stack[-1] == "{"
            if len(stack) == 1:
                self.member = None
                changes.append((i, None))
        return i + 1


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        key = json.loads(f'"{raw}"')
    except ValueError:
        return raw
    return key if isinstance(key, str) else raw
