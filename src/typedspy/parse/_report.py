"""Pydantic errors as compact `FieldError`s: union choices out of the path, no URLs."""

from __future__ import annotations

import json

from pydantic import ValidationError

from typedspy._types import FieldError
from typedspy.signature import TAG_PREFIX

__all__ = ["field_errors", "trim"]

_SHOW_INPUT = {
    "literal_error",
    "enum",
    "int_parsing",
    "float_parsing",
    "bool_parsing",
    "int_from_float",
    "string_pattern_mismatch",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


def trim(value: object, limit: int = 40) -> str:
    """A short JSON rendering of a value, cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_errors(exc: ValidationError) -> list[FieldError]:
    """One `FieldError` per Pydantic error, with paths as the model sees its output."""
    out = []
    for err in exc.errors(include_url=False):
        path = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(TAG_PREFIX)))
        message = err["msg"]
        if err["type"] in _SHOW_INPUT:
            message = f"{message}, got {trim(err.get('input'))}"
        out.append(FieldError(path, message))
    return out
