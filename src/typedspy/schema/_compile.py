"""`compile_schema`: a signature's outputs as a target's JSON schema, cached per target."""

from __future__ import annotations

import copy
import json
import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast, get_args

from pydantic import BaseModel, PydanticInvalidForJsonSchema

from typedspy.errors import SchemaError
from typedspy.schema._generate import JSONSchema, neutral_schema, where
from typedspy.schema._render import render_shape
from typedspy.schema.targets._notes import restate, with_notes
from typedspy.schema.targets.json_schema import to_json_schema
from typedspy.schema.targets.openai_strict import to_openai_strict
from typedspy.signature import Signature, TypeRewriter, field_type_error

__all__ = ["SCHEMA_COMPILER_VERSION", "CompiledSchema", "Target", "compile_schema"]

SCHEMA_COMPILER_VERSION = "1"
"""Bumped whenever a change here alters the schemas sent for an unchanged signature; response
caches key on it, so cached replies to the old schemas stop matching."""

Target = Literal["openai-strict", "json-schema"]
_TARGETS: dict[str, tuple[Callable[..., JSONSchema], bool]] = {
    "openai-strict": (to_openai_strict, True),
    "json-schema": (to_json_schema, False),
}


@dataclass(frozen=True)
class CompiledSchema:
    """A signature's output schema for one target.

    Attributes:
        name: A valid ``response_format`` name derived from the signature (``[A-Za-z0-9_-]``,
            at most 64 characters).
        schema: The JSON schema (treat as read-only: it is shared through the cache).
        strict: Whether to send it with ``strict: true``.
        target: The target it was compiled for.
        output_model: The Pydantic model that validates replies (unions dispatch on ``_type``).
        shape: A compact text rendering of the output shape, for prompts.
    """

    name: str
    schema: JSONSchema
    strict: bool
    target: str
    output_model: type[BaseModel] = field(repr=False)
    shape: str = field(repr=False)

    @property
    def response_format(self) -> dict[str, Any]:
        """The Chat Completions ``response_format`` parameter for this schema."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema, "strict": self.strict},
        }


_cache: weakref.WeakKeyDictionary[type, dict[str, CompiledSchema]] = weakref.WeakKeyDictionary()


def _schema_name(cls: type) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", cls.__name__)[:64]
    return name or "output"


def _output_model(obj: type) -> type[BaseModel]:
    if isinstance(obj, type) and issubclass(obj, Signature) and obj is not Signature:
        return obj.output_model
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        rewritten = TypeRewriter().rewrite(obj)
        model: type[BaseModel] = get_args(rewritten)[0] if get_args(rewritten) else rewritten
        return model
    raise SchemaError(f"compile_schema takes a Signature subclass or a Pydantic model, not {obj!r}")


def _inline_root(schema: JSONSchema) -> JSONSchema:
    """A recursive model's schema is a bare ``$ref``; the wire root must be the object itself."""
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema
    defs = schema.get("$defs", {})
    root = copy.deepcopy(defs[ref.rsplit("/", 1)[-1]])
    return {**root, "$defs": defs}


def _check_finite(schema: JSONSchema) -> None:
    """Refuse NaN and infinity, which are no JSON, naming the field (a bound, a Literal).

    A default holding one is restated in the description, as the strict target does with
    every default.
    """
    stack: list[tuple[object, tuple[str | int, ...]]] = [(schema, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            keyword = next((p for p in reversed(path) if isinstance(p, str)), "a value")
            raise SchemaError(
                f"{where(path)}: {keyword} is {value!r}, which JSON cannot carry (it has no NaN "
                "or infinity): give a finite number",
                path=path,
            )
        if isinstance(value, dict):
            node = cast("JSONSchema", value)
            if "default" in node and not _is_json(node["default"]):
                notes: list[str] = []
                restate(node, notes, "default")
                with_notes(node, notes)
            stack.extend((v, (*path, k)) for k, v in node.items())
        elif isinstance(value, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(cast("list[object]", value)))


def _is_json(value: object) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def compile_schema(obj: type, target: Target | str = "openai-strict") -> CompiledSchema:
    """Compile a signature's outputs (or a Pydantic model) into a target's JSON schema.

    Results are cached per class and target, so calling this on every request is cheap.

    Example:
        ```python
        compiled = ts.schema.compile_schema(Decide)
        compiled.response_format  # {"type": "json_schema", "json_schema": {...}}
        ```

    Args:
        obj: A `Signature` subclass, or a Pydantic model used as the whole output.
        target: ``"openai-strict"`` (default) or ``"json-schema"``.

    Raises:
        SchemaError: For an unknown target, an output with no JSON schema (an arbitrary
            class), a shape the target cannot express (the message says what to do), or a
            schema over the target's limits; ``path`` says where.
    """
    if not isinstance(obj, type):  # `A | B`, `list[A]`: not a class, nor weakly cacheable
        raise SchemaError(
            f"compile_schema takes a Signature subclass or a Pydantic model, not {obj!r}: the "
            "response's root is always an object, so put this type in an output field, e.g. "
            "ts.make_signature('question -> result: A | B', types={'A': A, 'B': B})"
        )
    per_class = _cache.get(obj)
    if per_class is not None:
        hit = per_class.get(target)
        if hit is not None:
            return hit
    if target not in _TARGETS:
        raise SchemaError(f"unknown schema target {target!r}; use one of {sorted(_TARGETS)}")
    convert, strict = _TARGETS[target]
    model = _output_model(obj)
    name = _schema_name(obj)
    try:
        neutral = _inline_root(neutral_schema(model))
    except PydanticInvalidForJsonSchema as exc:
        raise field_type_error(name, model.model_fields, exc) from exc
    _check_finite(neutral)
    # The prompt shows the json-schema form (constraints kept), which edits its input in place.
    shape_source = to_json_schema(copy.deepcopy(neutral), name=name)
    compiled = CompiledSchema(
        name=name,
        schema=convert(neutral, name=name),
        strict=strict,
        target=target,
        output_model=model,
        shape=render_shape(_inline_root(shape_source)),
    )
    _cache.setdefault(obj, {})[target] = compiled
    return compiled
