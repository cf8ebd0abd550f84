"""The values of one signature's output fields, read from their text as a stream shows it.

`PartialParser` says which text belongs to which field; `FieldValues` turns that text into
values, and `ObjectValues` calls it (a JSON member, or a ``[[ ## field ## ]]`` section):

* a complete field is validated exactly as the final validation does (the signature's output
  model, field by field), once; a field that fails is left out (the final validation reports it);
* the field in progress is read as far as it goes and shaped by its annotation
  (`partial_value`);
* a value nested past ``max_json_depth`` is not shown.
"""

from __future__ import annotations

from typing import Any

from jiter import from_json

from typedspy._json import depth_exceeded
from typedspy.parse._members import UNSET
from typedspy.parse._partial_values import (
    OPEN_TYPE,
    drop_open_type,
    partial_section,
    partial_value,
)
from typedspy.parse._validate import _JITER_DEPTH, _section_value
from typedspy.signature import Signature

__all__ = ["FieldValues"]

_UNSET: Any = UNSET


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
        """A complete JSON member's value, validated (`_UNSET` when it is not one)."""
        try:
            raw = from_json(text.encode(), allow_inf_nan=False)
        except ValueError:
            return _UNSET
        if self._too_deep(raw, inside=1):
            return _UNSET  # the final validation reports it
        return self._validated(name, raw)

    def open_member(self, name: str, text: str, tail: str) -> Any:
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
        if OPEN_TYPE.search(tail):
            drop_open_type(raw)
        return partial_value(self._fields[name].annotation, raw)

    def section(self, name: str, text: str) -> Any:
        """A complete ``[[ ## name ## ]]`` section's value, validated."""
        body = text.strip()
        ok, decoded, _ = _section_value(self._fields[name].annotation, body)
        return self._validated(name, decoded, key=body) if ok else _UNSET

    def open_section(self, name: str, text: str, tail: str) -> Any:
        """The section being written: its text, or its partial JSON value."""
        value = partial_section(self._fields[name].annotation, text.strip())
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
