"""The values of streamed output fields, kept member by member (ADR-031).

`JsonScan` says where each top-level member's value starts and ends (or the markers say where
each ``[[ ## field ## ]]`` section does); `ObjectValues` is given each member's value text as it
arrives. A member that ends is decoded and validated once, and never read again; only the member
still being written is re-read, and once its text is long, only after it grew by an eighth.
So the work per piece of text does not grow with the text before it: a completed member
costs nothing more, and re-reading a long open value is spread over the text that grew it.

`FieldValues` turns each field's text into its value:

* a complete field is validated exactly as the final validation does (the signature's output
  model, field by field), once; a field that fails is left out (the final validation reports it);
* the field in progress is read as far as it goes by jiter's partial mode and shaped by its
  annotation (`partial_value`): a model (or the union member named by ``_type``, once that name
  is complete) is built unvalidated from the keys seen so far; lists are shaped item by item;
  anything else is shown as jiter read it;
* a value nested past ``max_json_depth`` is not shown.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin

from jiter import from_json
from pydantic import BaseModel

from typedspy._json import depth_exceeded
from typedspy.parse._lenient import LenientDecodeError, decode_lenient
from typedspy.parse._sections import section_value
from typedspy.parse._validate import JITER_DEPTH, finite_for_jiter
from typedspy.signature import TYPE_KEY, Signature, is_model, is_union, resolve_name, wire_names

__all__ = ["FieldValues", "ObjectValues"]

UNSET: Any = object()
READ_EVERY_PIECE = 2_048
"""An open value up to this many characters is re-read at every piece; a longer one once it
grew by an eighth since its last reading (and always at the end of the stream)."""
_TAIL = 256  # how much of the open value's end the ``_type`` check looks at


class ObjectValues:
    """Completed members (validated) and the member being written (partial) of one object.

    Args:
        complete: A complete field's validated value from its text (`UNSET`: left out).
        partial: The open field's partial value from its text (`UNSET`: nothing to show yet).
    """

    def __init__(
        self,
        complete: Callable[[str, str], Any],
        partial: Callable[[str, str], Any],
    ) -> None:
        self._complete_value = complete
        self._partial = partial
        self._complete: dict[str, Any] = {}
        self._key: str | None = None  # the field being written, if any
        self._parts: list[str] = []
        self._length = 0
        self._read_at = -1  # the open value's length when it was last read
        self._open: Any = UNSET

    def open(self, key: str) -> None:
        """The value of field ``key`` starts."""
        self._key, self._parts, self._length = key, [], 0
        self._read_at, self._open = -1, UNSET

    def add(self, text: str) -> None:
        """More of the open value's text."""
        self._parts.append(text)
        self._length += len(text)

    def close(self) -> None:
        """The open value ended: decode and validate it, once."""
        key = self._key
        if key is None:
            return
        self._key, self._open = None, UNSET
        text, self._parts = "".join(self._parts), []
        value = self._complete_value(key, text)
        if value is UNSET:  # invalid: left out (the final validation reports it)
            self._complete.pop(key, None)
        else:
            self._complete[key] = value

    def values(self, *, final: bool = False) -> dict[str, Any]:
        """The completed fields, then the open one as far as it was last read."""
        values = dict(self._complete)
        key = self._key
        if key is None:
            return values
        length = self._length
        if final or length <= READ_EVERY_PIECE or length - self._read_at >= length >> 3:
            self._read_at = length
            self._open = self._read(key)
        if self._open is not UNSET:
            values[key] = self._open
        elif key in values:  # a repeated key being written again: the last one wins
            del values[key]
        return values

    def _read(self, key: str) -> Any:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]  # joined once, not at every reading
        return self._partial(key, self._parts[0] if self._parts else "")


class FieldValues:
    """Complete (validated, cached) and partial (shaped) values of a signature's output fields.

    Args:
        sig: The signature whose output fields are read.
        max_json_depth: Deepest nesting shown.
    """

    def __init__(self, sig: type[Signature], max_json_depth: int) -> None:
        self.max_json_depth = max_json_depth
        self._fields = sig.output_fields
        self._model = sig.output_model
        self._instance = self._model.model_construct()
        self._done: dict[str, tuple[Any, Any]] = {}

    def member(self, name: str, text: str) -> Any:
        """A complete JSON member's value, validated (`UNSET` when it is not one).

        A huge number is read as the final parse reads it (`finite_for_jiter`).
        """
        try:
            if finite_for_jiter(text):
                raw = _from_json(text)
            else:
                raw = decode_lenient(text)
        except (ValueError, LenientDecodeError):
            return UNSET
        if self._too_deep(raw, inside=1):
            return UNSET  # the final validation reports it
        return self._validated(name, raw)

    def open_member(self, name: str, text: str) -> Any:
        """The JSON member being written, read as far as it goes, shaped by its annotation."""
        try:
            data = _from_json("[" + text, partial=True)
        except ValueError:  # not JSON (yet, or at all): nothing to show for it
            return UNSET
        if not isinstance(data, list) or not data or self._too_deep(data[0], inside=1):
            return UNSET
        _drop_open_type(data[0], text)
        return partial_value(self._fields[name].annotation, data[0])

    def section(self, name: str, text: str) -> Any:
        """A complete ``[[ ## name ## ]]`` section's value, validated."""
        body = text.strip()
        ok, decoded, _ = section_value(self._fields[name].annotation, body)
        return self._validated(name, decoded, key=body) if ok else UNSET

    def open_section(self, name: str, text: str) -> Any:
        """The section being written: its text, or its partial JSON value."""
        value = _partial_section(self._fields[name].annotation, text.strip())
        return UNSET if self._too_deep(value, inside=0) else value

    def _too_deep(self, value: Any, *, inside: int) -> bool:
        """Whether ``value``, ``inside`` levels down the output, nests past the limit."""
        # jiter refuses nesting past about 200 levels by itself: only a lower limit is checked.
        limit = self.max_json_depth - inside
        return self.max_json_depth < JITER_DEPTH and depth_exceeded(value, limit)

    def _validated(self, name: str, raw: Any, *, key: Any = UNSET) -> Any:
        """A complete field's value, validated by the output model itself (cached)."""
        key = raw if key is UNSET else key
        cached = self._done.get(name)
        if cached is not None and type(cached[0]) is type(key) and cached[0] == key:
            return cached[1]
        try:
            self._model.__pydantic_validator__.validate_assignment(self._instance, name, raw)
            value = self._instance.__dict__[name]
        except Exception:  # invalid (or a user validator raised): the final validation reports it
            value = UNSET
        self._done[name] = (key, value)
        return value


# A JSON string, possibly still open at the end of the text.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_CONTROL = re.compile(r"[\x00-\x1f]")
_CONTROLS = {code: f"\\u{code:04x}" for code in range(0x20)}


def _from_json(text: str, *, partial: bool = False) -> Any:
    """The value of JSON ``text``, read by jiter (``partial``: as far as it goes).

    Raw control characters in strings (a newline, a tab) are invalid JSON, but what models
    write and what the final parse reads: they are escaped and the text read again.

    Raises:
        ValueError: Not JSON, even so.
    """
    try:
        return _read(text, partial)
    except ValueError:
        if _CONTROL.search(text) is None:
            raise
    return _read(_STRING.sub(lambda string: string.group().translate(_CONTROLS), text), partial)


# A number cut after its point or its exponent's ``e`` (``12.``, ``4e-``): jiter reads no number.
_NUMBER_TAIL = re.compile(r"(?<=\d)(?:\.|[eE][+-]?)\Z")


def _read(text: str, partial: bool) -> Any:
    if partial and (tail := _NUMBER_TAIL.search(text)) and not _inside_string(text):
        text = text[: tail.start()]  # the number as far as it is one, not no number at all
    mode: Literal["trailing-strings", "off"] = "trailing-strings" if partial else "off"
    return from_json(text.encode(), partial_mode=mode, allow_inf_nan=False)


def _inside_string(text: str) -> bool:
    """Whether partial JSON ``text`` ends inside a string (a quote more closes it)."""
    try:
        from_json((text + '"').encode(), partial_mode="trailing-strings")
    except ValueError:
        return False
    return True


# -- partial JSON shaped like a field's annotation --

# The text ends inside the value of a "_type" key: the member's name is not complete yet.
_OPEN_TYPE = re.compile(r'"_type"\s*:\s*"[^"]*$')
_SEQUENCES = (list, tuple, set, frozenset)


def _drop_open_type(value: Any, text: str) -> None:
    """Remove the ``_type`` whose name is still arriving (the last key on the right edge).

    Only when ``text``, the value's text, ends inside a ``_type`` value.
    """
    if not _OPEN_TYPE.search(text, max(0, len(text) - _TAIL)):
        return
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
        data = _from_json(body, partial=True)
    except ValueError:
        return UNSET
    _drop_open_type(data, body)
    return partial_value(annotation, data)


def _options(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (``Annotated`` stripped), or the annotation itself."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if is_union(annotation):
        return tuple(o for arg in get_args(annotation) for o in _options(arg))
    return (annotation,)


_Shape = tuple[tuple[Any, ...], Any, tuple[type[BaseModel], ...], list[str]]


def _shape(annotation: Any) -> _Shape:
    """What `partial_value` needs of an annotation: its options, list item type, models."""
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


_FLOAT_MAX = int(sys.float_info.max)  # past it an int has no float (the limit check drops it)


def partial_value(annotation: Any, value: Any) -> Any:
    """``value`` (partial JSON) shaped like ``annotation`` as far as it can be: models built."""
    if isinstance(value, list):
        item = _shape(annotation)[1]
        return value if item is None else [partial_value(item, v) for v in value]
    if type(value) is int:  # a float field's ``12`` is ``12.0``, as the final validation makes it
        options = _shape(annotation)[0]
        if float in options and int not in options and abs(value) <= _FLOAT_MAX:
            return float(value)
        return value
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
            known[name] = partial_value(info.annotation, value[key])
    return chosen.model_construct(**known)


def _is_sequence(annotation: Any) -> bool:
    return get_origin(annotation) in _SEQUENCES and bool(get_args(annotation))
