"""Incremental parsing of a streamed completion into partial typed outputs.

`PartialParser` is fed the completion piece by piece. It says which output field each piece of
text belongs to, and what the outputs look like so far:

* Values are read by jiter's partial mode (a maintained incremental parser that ships with the
  openai SDK), never by hand. A light scan of the top-level object's structure (strings,
  brackets, ``:`` and ``,`` at depth one; no values decoded) tells where each member starts and
  ends, so a member followed by ``,`` or the closing brace is known to be complete. Each
  member's value is read on its own (`ObjectValues`): the work per piece does not grow with
  the text before it (ADR-031).
* A complete field is validated exactly as the final validation does (the signature's output
  model, field by field), once; a field that fails is left out (the final validation reports it).
* The field in progress is shown as it stands: partial text, the items so far, and for a model
  or union field an instance of the member class named by ``_type`` (once that name is complete),
  built unvalidated from the keys seen so far.
* ``[[ ## field ## ]]`` marker output is read section by section; text before the JSON object
  (prose, a ```json fence) belongs to no field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import (
    Annotated,
    Any,
    Concatenate,
    Literal,
    ParamSpec,
    TypeVar,
    Union,
    get_args,
    get_origin,
)

from jiter import from_json
from pydantic import BaseModel

from typedspy._json import MAX_JSON_DEPTH, depth_exceeded, depth_limit
from typedspy.parse._members import UNSET, ObjectValues
from typedspy.parse._scan import JsonScan
from typedspy.parse._sections import _MARKER
from typedspy.parse._validate import _JITER_DEPTH, _section_value
from typedspy.signature import TYPE_KEY, Signature, is_model, is_union, resolve_name, wire_names

__all__ = ["PartialParser", "Segment"]

Segment = tuple[str | None, str]
"""A piece of the completion and the output field it belongs to (``None``: no field)."""

_UNSET: Any = UNSET
# A proper prefix of a ``[[ ## name ## ]]`` marker, at the very end of the text.
_MARKER_PREFIX = re.compile(r"\[(?:\[ *(?:#(?:# *(?:\w+ *(?:#(?:# *\]?)?)?)?)?)?)?")
_MARKER_WINDOW = 100  # how far back a marker that is still arriving can start
# The text ends inside the value of a "_type" key: the member's name is not complete yet.
_OPEN_TYPE = re.compile(r'"_type"\s*:\s*"[^"]*$')
_SEQUENCES = (list, tuple, set, frozenset)

P = ParamSpec("P")
R = TypeVar("R")


def _within_depth(
    method: Callable[Concatenate[PartialParser, P], R],
) -> Callable[Concatenate[PartialParser, P], R]:
    """Run a public method with the parser's ``max_json_depth`` active (ADR-048)."""

    @functools.wraps(method)
    def run(self: PartialParser, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with depth_limit(self.max_json_depth):
            return method(self, *args, **kwargs)

    return run


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
        self.max_json_depth = MAX_JSON_DEPTH if max_json_depth is None else max_json_depth
        self._fields = sig.output_fields
        self._model = sig.output_model
        self._instance = self._model.model_construct()
        self._done: dict[str, tuple[Any, Any]] = {}
        self._text = ""  # the text from `_base` on, not yet returned (before a JSON object)
        self._base = 0
        self._pieces: list[str] = []
        self._size = 0  # characters fed so far
        self._object = ObjectValues(self._member_value, self._open_value)
        self._sections = ObjectValues(self._section_done, self._open_section)
        self._final = False
        self._mode: Literal["json", "markers"] | None = None
        self._scan: JsonScan | None = None
        self._owner: str | None = None  # the field the text fed so far ends in
        self._emitted = 0  # text before this index was returned by feed
        self._section: str | None = None  # markers: the section being written
        self._values: dict[str, Any] = {}
        self._shown: tuple[dict[str, Any], frozenset[str]] = ({}, frozenset())

    @property
    def text(self) -> str:
        """Everything fed so far."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    @property
    def current(self) -> str | None:
        """The output field being written, if any."""
        if self._scan is not None:
            name = self._scan.member if self._scan.end < 0 else None
        else:
            name = self._section
        return name if name in self._fields else None

    @_within_depth
    def feed(self, piece: str) -> list[Segment]:
        """Take the next piece of the completion; return it split by the field it belongs to.

        In marker mode, text that may be the start of a ``[[ ## ... ## ]]`` marker is held
        back until it is complete (see `flush`); the segments returned over a whole stream
        (flush included) add up to the whole text.
        """
        start = self._size
        self._size += len(piece)
        self._pieces.append(piece)
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

    @_within_depth
    def flush(self) -> list[Segment]:
        """The text still held back (the stream ended): attributed as it stands."""
        self._final = True
        if self._emitted >= self._size:
            return []
        return self._marker_segments(self._size, final=True)

    @_within_depth
    def values(self) -> dict[str, Any]:
        """The outputs as far as the text fed so far shows them (see the module docstring)."""
        if self._mode == "json":
            self._values = self._object.values(final=self._final)
        elif self._mode == "markers":
            self._values = self._sections.values(final=self._final)
        return dict(self._values)

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
        marker = _MARKER.search(text, start)
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
        for marker in _MARKER.finditer(self._text, pos - base, end - base):
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

    # -- values --

    def _member_value(self, name: str, text: str) -> Any:
        """A complete JSON member's value, validated (`_UNSET` when it is not one)."""
        try:
            raw = from_json(text.encode(), allow_inf_nan=False)
        except ValueError:
            return _UNSET
        if self._too_deep(raw, inside=1):
            return _UNSET  # the final validation reports it
        return self._validated(name, raw)

    def _open_value(self, name: str, text: str, tail: str) -> Any:
        """The JSON member being written, read as far as it goes, shaped by its annotation."""
        try:
            data = from_json(
                b"[" + text.encode(), partial_mode="trailing-strings", allow_inf_nan=False
            )
        except ValueError:  # not JSON (yet, or at all): nothing to show for it
            return _UNSET
        if not isinstance(data, list) or not data or self._too_deep(data[0], inside=1):
            return _UNSET
        raw = data[0]
        if _OPEN_TYPE.search(tail):
            _drop_open_type(raw)
        return _partial_value(self._fields[name].annotation, raw)

    def _section_done(self, name: str, text: str) -> Any:
        """A complete ``[[ ## name ## ]]`` section's value, validated."""
        body = text.strip()
        ok, decoded, _ = _section_value(self._fields[name].annotation, body)
        return self._validated(name, decoded, key=body) if ok else _UNSET

    def _open_section(self, name: str, text: str, tail: str) -> Any:
        """The section being written: its text, or its partial JSON value."""
        value = _partial_section(self._fields[name].annotation, text.strip())
        return _UNSET if self._too_deep(value, inside=0) else value

    def _too_deep(self, value: Any, *, inside: int) -> bool:
        """Whether ``value``, ``inside`` levels down the output, nests past the limit."""
        # jiter refuses nesting past about 200 levels by itself: only a lower limit is checked.
        limit = self.max_json_depth - inside
        return self.max_json_depth < _JITER_DEPTH and depth_exceeded(value, limit)

    def _validated(self, name: str, raw: Any, *, key: Any = _UNSET) -> Any:
        """A complete field's value, validated by the output model itself (cached)."""
        key = raw if key is _UNSET else key
        cached = self._done.get(name)
        if cached is not None and type(cached[0]) is type(key) and cached[0] == key:
            return cached[1]
        try:
            self._model.__pydantic_validator__.validate_assignment(self._instance, name, raw)
            value = self._instance.__dict__[name]
        except Exception:  # invalid (or a user validator raised): the final validation reports it
            value = _UNSET
        self._done[name] = (key, value)
        return value


def _append(out: list[Segment], owner: str | None, text: str) -> None:
    if out and out[-1][0] == owner:
        out[-1] = (owner, out[-1][1] + text)
    else:
        out.append((owner, text))


def _drop_open_type(value: Any) -> None:
    """Remove the ``_type`` whose name is still arriving (the last key on the right edge)."""
    while True:
        if isinstance(value, dict) and value:
            last = next(reversed(value))
            if last == TYPE_KEY and isinstance(value[last], str):
                del value[last]
                return
            value = value[last]
        elif isinstance(value, list) and value:
            value = value[-1]
        else:
            return


def _partial_section(annotation: Any, body: str) -> Any:
    """The section being written: its text for a ``str`` field, else its partial JSON value."""
    options = _shape(annotation)[0]
    if str in options and all(o in (str, type(None)) for o in options):
        return body
    if body.startswith("```"):  # an opening fence: the JSON starts on the next line
        newline = body.find("\n")
        body = body[newline + 1 :] if newline >= 0 else ""
    try:
        data = from_json(body.encode(), partial_mode="trailing-strings", allow_inf_nan=False)
    except ValueError:
        return _UNSET
    if _OPEN_TYPE.search(body, max(0, len(body) - 256)):
        _drop_open_type(data)
    return _partial_value(annotation, data)


def _options(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (``Annotated`` stripped), or the annotation itself."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if is_union(annotation) or get_origin(annotation) is Union:
        return tuple(o for arg in get_args(annotation) for o in _options(arg))
    return (annotation,)


_Shape = tuple[tuple[Any, ...], Any, tuple[type[BaseModel], ...], list[str]]


def _shape(annotation: Any) -> _Shape:
    """What `_partial_value` needs of an annotation: its options, list item type, models."""
    try:
        return _cached_shape(annotation)
    except TypeError:  # an unhashable annotation: worked out each time
        return _cached_shape.__wrapped__(annotation)


@functools.lru_cache(maxsize=1024)
def _cached_shape(annotation: Any) -> _Shape:
    options = _options(annotation)
    item = next((get_args(o)[0] for o in options if _is_sequence(o)), None)
    members = tuple(o for o in options if is_model(o))
    return options, item, members, wire_names(list(members)) if len(members) > 1 else []


def _partial_value(annotation: Any, value: Any) -> Any:
    """``value`` (partial JSON) shaped like ``annotation`` as far as it can be: models built."""
    if isinstance(value, list):
        item = _shape(annotation)[1]
        return value if item is None else [_partial_value(item, v) for v in value]
    if not isinstance(value, dict):
        return value
    _, _, members, names = _shape(annotation)
    chosen: type[BaseModel] | None = members[0] if len(members) == 1 else None
    tag = value.get(TYPE_KEY)
    if names and isinstance(tag, str):
        index = resolve_name(tag, names)
        chosen = None if index is None else members[index]
    if chosen is None:
        return value
    known = {}
    for name, info in chosen.model_fields.items():
        key = name if name in value else info.alias
        if key is not None and key in value:
            known[name] = _partial_value(info.annotation, value[key])
    return chosen.model_construct(**known)


def _is_sequence(annotation: Any) -> bool:
    return get_origin(annotation) in _SEQUENCES and bool(get_args(annotation))
