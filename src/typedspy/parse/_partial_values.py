"""Partial JSON shaped like an output field's annotation, for values still being streamed.

A model (or the union member named by ``_type``, once that name is complete) is built
unvalidated from the keys seen so far; lists are shaped item by item; anything else is shown as
jiter's partial mode read it.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated, Any, Union, get_args, get_origin

from jiter import from_json
from pydantic import BaseModel

from typedspy.parse._members import UNSET
from typedspy.signature import TYPE_KEY, is_model, is_union, resolve_name, wire_names

__all__ = ["OPEN_TYPE", "drop_open_type", "partial_section", "partial_value"]

_UNSET: Any = UNSET
# The text ends inside the value of a "_type" key: the member's name is not complete yet.
OPEN_TYPE = re.compile(r'"_type"\s*:\s*"[^"]*$')
_SEQUENCES = (list, tuple, set, frozenset)


def drop_open_type(value: Any) -> None:
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


def partial_section(annotation: Any, body: str) -> Any:
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
    if OPEN_TYPE.search(body, max(0, len(body) - 256)):
        drop_open_type(data)
    return partial_value(annotation, data)


def _options(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (``Annotated`` stripped), or the annotation itself."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if is_union(annotation) or get_origin(annotation) is Union:
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


def partial_value(annotation: Any, value: Any) -> Any:
    """``value`` (partial JSON) shaped like ``annotation`` as far as it can be: models built."""
    if isinstance(value, list):
        item = _shape(annotation)[1]
        return value if item is None else [partial_value(item, v) for v in value]
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
