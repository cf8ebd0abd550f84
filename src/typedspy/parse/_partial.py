"""Incremental parsing of a streamed completion into partial typed outputs.

Partial JSON is read by jiter's partial mode (a maintained incremental parser that ships with
the openai SDK), never by hand. Fields before the one in progress are complete and are validated
once, then cached; the field in progress is shown as a partial value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args, get_origin

from jiter import from_json
from pydantic import BaseModel, TypeAdapter, ValidationError

from typedspy.parse._extract import split_marker_sections
from typedspy.signature import Signature
from typedspy.signature._dispatch import TYPE_KEY, is_model, resolve_name, wire_names

__all__ = ["PartialParser"]

_UNSET = object()


def _members(annotation: Any) -> list[type[BaseModel]]:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if is_model(annotation):
        return [annotation]
    return [a for a in get_args(annotation) if is_model(a)]


def _partial_model(annotation: Any, value: Any) -> Any:
    """The member class ``value`` is heading for, built from what has arrived so far."""
    if not isinstance(value, Mapping):
        return value
    members = _members(annotation)
    if not members:
        return value
    chosen: type[BaseModel] | None = members[0] if len(members) == 1 else None
    if chosen is None and isinstance(value.get(TYPE_KEY), str):
        index = resolve_name(value[TYPE_KEY], wire_names(members))
        chosen = None if index is None else members[index]
    if chosen is None:
        return dict(value)
    known = {k: v for k, v in value.items() if k in chosen.model_fields}
    return chosen.model_construct(**known)


class PartialParser:
    """Feed it the whole text received so far; it says what the outputs look like now."""

    def __init__(self, sig: type[Signature]) -> None:
        self._fields = sig.output_fields
        self._adapters: dict[str, TypeAdapter[Any]] = {}
        self._done: dict[str, Any] = {}
        self.current: str | None = None

    def _validated(self, name: str, value: Any) -> Any:
        if name not in self._done:
            adapter = self._adapters.get(name)
            if adapter is None:
                info = self._fields[name]
                adapter = TypeAdapter(Annotated[info.annotation, info])  # type: ignore[arg-type]
                self._adapters[name] = adapter
            try:
                self._done[name] = adapter.validate_python(value)
            except ValidationError:
                self._done[name] = _UNSET  # the final validation reports it
        return self._done[name]

    def _from_data(self, data: Mapping[str, Any], closed: bool) -> dict[str, Any]:
        keys = [k for k in data if k in self._fields]
        last = None if closed or not keys else keys[-1]
        values: dict[str, Any] = {}
        for key in keys:
            if key == last:
                values[key] = _partial_model(self._fields[key].annotation, data[key])
            else:
                done = self._validated(key, data[key])
                if done is not _UNSET:
                    values[key] = done
        self.current = last
        return values

    def _from_sections(self, sections: Mapping[str, str]) -> dict[str, Any]:
        names = [n for n in sections if n in self._fields]
        last = names[-1] if names else None
        values: dict[str, Any] = {}
        for name in names:
            text = sections[name]
            if name == last:
                values[name] = text
            elif self._fields[name].annotation is str:
                values[name] = text
        self.current = last
        return values

    def feed(self, text: str) -> dict[str, Any]:
        """The outputs as far as ``text`` (everything received so far) shows them."""
        if "[[ ##" in text:
            sections = split_marker_sections(text)
            if sections:
                return self._from_sections(sections)
        start = text.find("{")
        if start < 0:
            return {}
        body = text[start:]
        try:
            data = from_json(body.encode(), partial_mode="trailing-strings")
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        closed = body.rstrip().rstrip("`").rstrip().endswith("}") and _complete(body)
        return self._from_data(data, closed)


def _complete(body: str) -> bool:
    try:
        from_json(body.rstrip().rstrip("`").rstrip().encode())
    except ValueError:
        return False
    return True
