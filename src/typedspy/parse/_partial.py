"""Incremental parsing of a streamed completion into partial typed outputs.

`PartialParser` is fed the completion piece by piece. It says which output field each piece of
text belongs to, and what the outputs look like so far:

* Values are read by jiter's partial mode (a maintained incremental parser that ships with the
  openai SDK), never by hand. A light scan of the top-level object's structure (strings,
  brackets, ``:`` and ``,`` at depth one; no values decoded; `JsonScan`) tells where each member
  starts and ends, so a member followed by ``,`` or the closing brace is known to be complete.
  Each member's value is read on its own (`ObjectValues`): the work per piece does not grow
  with the text before it (ADR-031).
* A complete field is validated exactly as the final validation does (the signature's output
  model, field by field), once; a field that fails is left out (the final validation reports it).
* The field in progress is shown as it stands: partial text, the items so far, and for a model
  or union field an instance of the member class named by ``_type`` (once that name is complete),
  built unvalidated from the keys seen so far (`FieldValues`).
* ``[[ ## field ## ]]`` marker output is read section by section; text before the JSON object
  (prose, a ```json fence) belongs to no field.

This module attributes the text (`JsonScan` for a JSON object: only the structure is scanned,
and resumably: each call is given only the text added since the last one, so a stream is scanned
once in all, however it is chunked); ``_partial_values.py`` turns each field's text into its
value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from typedspy._json import MAX_JSON_DEPTH, depth_limit
from typedspy.parse._partial_values import FieldValues, ObjectValues
from typedspy.parse._sections import MARKER
from typedspy.signature import Signature

__all__ = ["PartialParser", "Segment"]

Segment = tuple[str | None, str]
"""A piece of the completion and the output field it belongs to (``None``: no field)."""

# A proper prefix of a ``[[ ## name ## ]]`` marker, at the very end of the text.
_MARKER_PREFIX = re.compile(r"\[(?:\[ *(?:#(?:# *(?:\w+ *(?:#(?:# *\]?)?)?)?)?)?)?")
_MARKER_WINDOW = 100  # how far back a marker that is still arriving can start
# What `JsonScan` skips in one step: a string's body, and text with no structure in it.
_STRING_BODY = re.compile(r'[^"\\]*')
_PLAIN = re.compile(r'[^"{}\[\],:]*')
_KEY_LIMIT = 4096  # a longer key names no field: only its first characters are kept


class PartialParser:
    """Feed it a completion piece by piece; it attributes the text and shows the outputs so far.

    Example:
        ```python
        parser = PartialParser(Decide)
        for piece in pieces:
            for field, text in parser.feed(piece):
                ...  # text belongs to output field `field` (None: to no field)
            parser.values()  # {"action": SpawnTask(description="cut th"), ...}
        parser.flush()  # text held back at the end (a marker that never completed)
        ```

    Attributes:
        max_json_depth: Deepest nesting read (256 by default; `Predict` passes its LM's):
            a value nested deeper is not shown, and the final validation reports it.
    """

    def __init__(self, sig: type[Signature], *, max_json_depth: int | None = None) -> None:
        self.signature = sig
        self._fields = sig.output_fields
        self.max_json_depth = MAX_JSON_DEPTH if max_json_depth is None else max_json_depth
        self._reader = FieldValues(sig, self.max_json_depth)
        self._text = ""  # the text from `_base` on, not yet returned (before a JSON object)
        self._base = 0
        self._size = 0  # characters fed so far
        self._object = ObjectValues(self._reader.member, self._reader.open_member)
        self._sections = ObjectValues(self._reader.section, self._reader.open_section)
        self._final = False
        self._mode: Literal["json", "markers"] | None = None
        self._scan: JsonScan | None = None
        self._owner: str | None = None  # the field the text fed so far ends in
        self._emitted = 0  # text before this index was returned by feed
        self._section: str | None = None  # markers: the section being written
        self._shown: tuple[dict[str, Any], frozenset[str]] = ({}, frozenset())

    @property
    def current(self) -> str | None:
        """The output field being written, if any."""
        if self._scan is not None:
            name = self._scan.member if self._scan.end < 0 else None
        else:
            name = self._section
        return name if name in self._fields else None

    def feed(self, piece: str) -> list[Segment]:
        """Take the next piece of the completion; return it split by the field it belongs to.

        In marker mode, text that may be the start of a ``[[ ## ... ## ]]`` marker is held
        back until it is complete (see `flush`); the segments returned over a whole stream
        (flush included) add up to the whole text.
        """
        with depth_limit(self.max_json_depth):  # ADR-048 (so are `flush` and `values`)
            start = self._size
            self._size += len(piece)
            if self._scan is not None:  # a JSON object: only the new piece is looked at
                return self._object_segments(piece, start)
            self._text += piece
            if self._mode is None:
                self._detect()
            if self._scan is not None:
                held, self._text = self._text[self._emitted - self._base :], ""
                return self._object_segments(held, self._emitted)
            end = self._held_back()  # a marker may be arriving (before the mode is known, too)
            if self._mode == "markers":
                out = self._marker_segments(end)
            else:
                out = self._segments(end, [])
            self._text, self._base = self._text[self._emitted - self._base :], self._emitted
            return out

    def flush(self) -> list[Segment]:
        """The text still held back (the stream ended): attributed as it stands.

        The section being written ends with the stream: it is validated as complete, as the
        final parse reads it, whether or not text was held back.
        """
        self._final = True
        if self._emitted >= self._size and self._mode != "markers":
            return []
        with depth_limit(self.max_json_depth):
            return self._marker_segments(self._size, final=True)

    def values(self) -> dict[str, Any]:
        """The outputs as far as the text fed so far shows them (see the module docstring)."""
        if self._mode is None:
            return {}
        with depth_limit(self.max_json_depth):
            read = self._object if self._mode == "json" else self._sections
            return read.values(final=self._final)

    def news(self) -> dict[str, Any] | None:
        """`values`, when they changed since the last call (a field completing counts too)."""
        values = self.values()
        complete = frozenset(values) - {self.current}
        if (values, complete) == self._shown:
            return None
        self._shown = (values, complete)
        return values

    # -- where the output starts --

    def _detect(self) -> None:
        text, start = self._text, self._emitted - self._base
        brace = text.find("{", start)
        marker = MARKER.search(text, start)
        if marker is not None and (brace < 0 or marker.start() < brace):
            self._mode = "markers"
        elif brace >= 0:
            self._mode = "json"
            self._scan = JsonScan(self._base + brace)

    # -- attribution --

    def _segments(self, end: int, changes: list[tuple[int, str | None]]) -> list[Segment]:
        """Attribute the text from `_emitted` to ``end`` (absolute indexes, as ``changes``)."""
        out: list[Segment] = []
        owner, pos, base = self._owner, self._emitted, self._base
        for index, new in changes:
            if index > pos and new != owner:
                _append(out, owner, self._text[pos - base : index - base])
                pos = index
            owner = new
        if end > pos:
            _append(out, owner, self._text[pos - base : end - base])
        self._owner, self._emitted = owner, end
        return out

    def _object_segments(self, text: str, offset: int) -> list[Segment]:
        """Attribute ``text``, from index ``offset`` (the first not yet returned).

        Each field's value text goes to `ObjectValues` too.
        """
        scan = self._scan
        assert scan is not None
        out: list[Segment] = []
        pos = offset
        for index, new in scan.scan(text, offset, self._fields):
            if index > pos:
                self._take(out, text[pos - offset : index - offset])
                pos = index
            if new != self._owner:
                if self._owner is not None:
                    self._object.close()
                if new is not None:
                    self._object.open(new)
                self._owner = new
        if offset + len(text) > pos:
            self._take(out, text[pos - offset :])
        self._emitted = offset + len(text)
        return out

    def _take(self, out: list[Segment], text: str) -> None:
        _append(out, self._owner, text)
        if self._owner is not None:
            self._object.add(text)

    def _held_back(self) -> int:
        """Where a marker that may still be arriving starts (the text's length if none)."""
        text = self._text
        low = max(self._emitted - self._base, len(text) - _MARKER_WINDOW)
        at = text.find("[", low)
        while at >= 0:
            if _MARKER_PREFIX.fullmatch(text, at):
                return self._base + at
            at = text.find("[", at + 1)
        return self._base + len(text)

    def _marker_segments(self, end: int, *, final: bool = False) -> list[Segment]:
        """Attribute the text up to ``end``; each section's text goes to `_sections` too."""
        changes: list[tuple[int, str | None]] = []
        base, pos = self._base, self._emitted
        for marker in MARKER.finditer(self._text, pos - base, end - base):
            self._section_text(self._text[pos - base : marker.start()])
            name = marker.group(1)
            self._section = None if name == "completed" else name
            changes.append((base + marker.start(), None))
            changes.append((base + marker.end(), name if name in self._fields else None))
            self._sections.close()
            if self._section in self._fields:
                self._sections.open(self._section)
            pos = base + marker.end()
        self._section_text(self._text[pos - base : end - base])
        if final:
            self._section = None
            self._sections.close()
        return self._segments(end, changes)

    def _section_text(self, text: str) -> None:
        if text and self._section in self._fields:
            self._sections.add(text)


def _append(out: list[Segment], owner: str | None, text: str) -> None:
    if out and out[-1][0] == owner:
        out[-1] = (owner, out[-1][1] + text)
    else:
        out.append((owner, text))


# -- where the members of a streamed JSON object start and end --


class JsonScan:
    """Where the members of the top-level object start and end (values are left to jiter)."""

    def __init__(self, start: int) -> None:
        self.start = start  # index of the opening brace
        self.end = -1  # index after the closing brace, once seen
        self.pos = start  # how far the text was scanned
        self.member: str | None = None  # the depth-1 key whose value is being written
        self._depth = 0  # brackets open
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
        char = text[i]
        # Only depth one, the root object's members, matters: its keys are the only ones read.
        if char == '"':
            self._in_string = True
            if self._expect_key and self._depth == 1:
                self._key, self._key_length = [], 0
        elif char in "{[":
            self._depth += 1
            self._expect_key = char == "{"
        elif char in "}]":
            self._depth -= 1
            self._expect_key = False
            if not self._depth:
                self.end, self.member = offset + i + 1, None
                changes.append((offset + i, None))
        elif char == ":":
            self._expect_key = False
            if self._depth == 1:
                self.member = self._last_key
                key = self._last_key
                changes.append((offset + i + 1, key if key in fields else None))
        elif char == ",":
            self._expect_key = self._depth == 1
            if self._depth == 1:
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
