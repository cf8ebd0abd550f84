"""One rule for a value given for a signature field by a user (a demo, an example's label).

A value may be anything a prediction of that field can hold: the user's own model instances at
any depth of unions, tagged dicts, or what `to_jsonable` writes. A signature's output model
validates union members through tagged shadow classes, which take dicts, not the user's
instances nested inside another member (issue 20); so a value holding models that fails as
given is validated again in its JSON form, tagged as the prompt shows it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from typedspy._types import FieldError
from typedspy.parse._report import field_errors
from typedspy.signature import to_jsonable

__all__ = ["field_value"]


def field_value(
    model: type[BaseModel], name: str, value: Any, annotation: Any
) -> tuple[Any, list[FieldError]]:
    """``value`` validated as field ``name`` of ``model``: the typed value, or the problems.

    ``annotation`` is the field's type as the user declared it (the signature's, not the
    tagged model's). Paths in the problems start at ``name``.
    """
    holder = model.model_construct()
    try:
        model.__pydantic_validator__.validate_assignment(holder, name, value)
    except ValidationError as exc:
        if not _holds_models(value):
            return value, field_errors(exc)
        try:
            tagged = to_jsonable(value, annotation)
            model.__pydantic_validator__.validate_assignment(holder, name, tagged)
        except ValidationError as again:  # its paths name the nested field at fault
            return value, field_errors(again)
        except (TypeError, ValueError):
            return value, field_errors(exc)
    return getattr(holder, name), []


def _holds_models(value: Any, depth: int = 0) -> bool:
    if isinstance(value, BaseModel):
        return True
    if depth > 8:
        return False
    if isinstance(value, dict):
        return any(_holds_models(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_models(v, depth + 1) for v in value)
    return False
