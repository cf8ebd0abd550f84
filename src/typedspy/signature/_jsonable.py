"""`to_jsonable`: Python values as JSON-ready data, union members carrying their `_type`."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from typedspy.signature._unions import TYPE_KEY, is_model, user_discriminated, wire_names

__all__ = ["to_jsonable"]


def _union_models(annotation: Any) -> list[type[BaseModel]]:
    args = [a for a in get_args(annotation) if a is not type(None)]
    return [a for a in args if is_model(a)] if len(args) >= 2 else []


def _member_annotation(annotation: Any, value: Any) -> Any:
    """The member of a union annotation that ``value`` is an instance of (else Any)."""
    for arg in get_args(annotation):
        base = get_args(arg)[0] if get_origin(arg) is Annotated else arg
        origin = get_origin(base) or base
        if isinstance(origin, type) and isinstance(value, origin):
            return base
    return Any


def to_jsonable(value: Any, annotation: Any = None) -> Any:
    """Render ``value`` as JSON-ready data (dicts, lists, str, numbers, bool, None).

    Models become objects keyed by alias. Where ``annotation`` puts a model in a union of two or
    more members, the object starts with ``_type``, named as the schema names it; without an
    annotation every model gets ``_type`` with its class name, so the model can tell them apart.

    Example:
        ```python
        ts.signature.to_jsonable(SpawnTask(description="x", priority="high"))
        # {"_type": "SpawnTask", "description": "x", "priority": "high"}
        ```
    """
    origin = get_origin(annotation)
    if origin is Annotated:
        inner = get_args(annotation)[0]
        if user_discriminated(annotation.__metadata__):
            # The user's own Literal tag tells the members apart: no `_type` (as in the schema).
            return to_jsonable(value, _member_annotation(inner, value))
        return to_jsonable(value, inner)
    if origin in (Union, types.UnionType):
        models = _union_models(annotation)
        if isinstance(value, BaseModel) and type(value) in models:
            name = wire_names(models)[models.index(type(value))]
            return _model(value, name)
        return to_jsonable(value, _member_annotation(annotation, value))
    if isinstance(value, BaseModel):
        tag = type(value).__name__ if annotation is None else None
        return _model(value, tag)
    if isinstance(value, Mapping):
        value_type = get_args(annotation)[1] if len(get_args(annotation)) == 2 else None
        return {str(k): to_jsonable(v, value_type) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        args = get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return [to_jsonable(v, a) for v, a in zip(value, args, strict=False)]
        item = args[0] if args else None
        return [to_jsonable(v, item) for v in value]
    return to_jsonable_python(value)


def _model(value: BaseModel, tag: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {TYPE_KEY: tag} if tag else {}
    for name, info in type(value).model_fields.items():
        if info.exclude:
            continue
        annotation: Any = info.annotation
        if info.discriminator is not None:
            annotation = Annotated[annotation, info]
        out[info.alias or name] = to_jsonable(getattr(value, name), annotation)
    return out
