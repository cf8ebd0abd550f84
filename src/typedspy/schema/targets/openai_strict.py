"""The ``openai-strict`` target: reshape a neutral schema into OpenAI's strict subset.

Rules (facts in ../shared/reference/structured-outputs.md; the checker and limits are in
`_openai_rules`): root object; ``anyOf`` not ``oneOf``; no ``discriminator``/``default``/``title``;
every property required (optional fields stay nullable); ``additionalProperties: false``
everywhere; nothing beside ``$ref``. Keywords outside the subset are removed from the wire schema
and restated in the ``description``; local validation still enforces them (ADR-003).
"""

from __future__ import annotations

from typing import cast

from typedspy.errors import SchemaError
from typedspy.schema._generate import JSONSchema, where
from typedspy.schema.targets._notes import restate, with_notes
from typedspy.schema.targets._openai_rules import (
    SUPPORTED_STRING_FORMATS,
    check_openai_strict,
    format_violation,
)

__all__ = ["to_openai_strict"]

_DROP = ("title", "default", "examples", "discriminator", "$schema", "readOnly", "writeOnly")
_ANNOTATION_ONLY = {"description", "title", "default", "examples"}


def _convert(node: JSONSchema, path: tuple[str | int, ...]) -> JSONSchema:
    notes: list[str] = []
    node = _prepare(dict(node), path, notes)
    if "$ref" in node:
        return _ref(node, path)
    if "type" not in node and "anyOf" not in node and ("enum" in node or "const" in node):
        node = _typed_values(node)
    if "anyOf" in node:
        node["anyOf"] = _any_of(node["anyOf"], path)
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        node = _object(node, path, notes)
    elif kind == "array":
        node = _array(node, path, notes)
    elif kind == "string":
        restate(node, notes, "minLength", "maxLength")
        if "format" in node and node["format"] not in SUPPORTED_STRING_FORMATS:
            restate(node, notes, "format")
    return with_notes(node, notes)


def _prepare(node: JSONSchema, path: tuple[str | int, ...], notes: list[str]) -> JSONSchema:
    """Drop what strict mode rejects, merge ``allOf``/``oneOf``, and refuse ``Any``."""
    if "default" in node and node["default"] is not None:
        restate(node, notes, "default")
    for key in _DROP:
        node.pop(key, None)
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf") + node.get("anyOf", [])
    if "allOf" in node:
        node = _merge_all_of(node, path)
    if not set(node) - _ANNOTATION_ONLY:  # `{}`, or only a description: Any
        raise SchemaError(
            f"{where(path)} accepts any value (Any, or a bare dict/list), which OpenAI "
            f"strict mode cannot express; give it a concrete type, or compile with "
            f"target='json-schema'",
            path=path,
        )
    return node


def _merge_all_of(node: JSONSchema, path: tuple[str | int, ...]) -> JSONSchema:
    parts = node.pop("allOf")
    if len(parts) != 1:
        raise SchemaError(f"{where(path)} combines schemas with allOf", path=path)
    return {**parts[0], **node}


def _ref(node: JSONSchema, path: tuple[str | int, ...]) -> JSONSchema:
    siblings = {k: v for k, v in node.items() if k != "$ref"}
    if not siblings:
        return node
    if not set(siblings) <= _ANNOTATION_ONLY:
        raise SchemaError(f"{where(path)} constrains a reference: {sorted(siblings)}", path=path)
    # "$ref cannot have keywords {'description'}": keep the text on a one-branch anyOf.
    return {"anyOf": [{"$ref": node["$ref"]}], **siblings}


def _any_of(branches: list[JSONSchema], path: tuple[str | int, ...]) -> list[JSONSchema]:
    flat: list[JSONSchema] = []
    for i, branch in enumerate(branches):
        converted = _convert(branch, (*path, "anyOf", i))
        if set(converted) == {"anyOf"}:
            flat.extend(converted["anyOf"])
        else:
            flat.append(converted)
    return flat


def _object(node: JSONSchema, path: tuple[str | int, ...], notes: list[str]) -> JSONSchema:
    props = node.get("properties")
    extra = node.get("additionalProperties")
    keyed = "propertyNames" in node or _key_pattern(node) is not None
    if not props and (isinstance(extra, dict) or keyed):
        return _pairs(node, path, notes)
    if not props and extra is not False:
        raise SchemaError(
            f"{where(path)} is an open object (dict with Any values, or a model with no "
            f"fields); OpenAI strict mode needs declared properties: use a model, or "
            f"dict[str, T] with a concrete T",
            path=path,
        )
    restate(node, notes, "minProperties", "maxProperties", "patternProperties", "propertyNames")
    node["properties"] = {
        name: _convert(sub, (*path, "properties", name)) for name, sub in (props or {}).items()
    }
    node["required"] = list(node["properties"])
    node["additionalProperties"] = False
    node["type"] = "object"
    return node


def _pairs(node: JSONSchema, path: tuple[str | int, ...], notes: list[str]) -> JSONSchema:
    """``dict[K, V]`` as ``[{"key": K, "value": V}]`` (ADR-003); validation maps it back."""
    value = node.get("additionalProperties")
    key_schema: JSONSchema = dict(node.get("propertyNames", {"type": "string"}))
    if (pattern := _key_pattern(node)) is not None:  # dict[Annotated[str, pattern], T]
        value = node["patternProperties"][pattern]
        key_schema = {"type": "string", "pattern": pattern}
    value_schema: JSONSchema | None = value if isinstance(value, dict) else None
    if value_schema is None or value_schema == {}:
        raise SchemaError(
            f"{where(path)} is a dict with Any values; give the values a concrete type",
            path=path,
        )
    if "$ref" not in key_schema:  # an Enum key refers to its (typed) definition
        key_schema.setdefault("type", "string")
    restate(node, notes, "minProperties", "maxProperties")
    pair = {
        "type": "object",
        "properties": {
            "key": _convert(key_schema, (*path, "propertyNames")),
            "value": _convert(value_schema, (*path, "additionalProperties")),
        },
        "required": ["key", "value"],
        "additionalProperties": False,
    }
    notes.insert(0, "a mapping, given as a list of key/value pairs")
    out: JSONSchema = {"type": "array", "items": pair}
    if "description" in node:
        out["description"] = node["description"]
    return out


def _array(node: JSONSchema, path: tuple[str | int, ...], notes: list[str]) -> JSONSchema:
    if "prefixItems" in node:  # a tuple: one schema per position is not in the subset
        members = node.pop("prefixItems")
        rest = node.pop("items", None)
        options = [*members, *([rest] if isinstance(rest, dict) else [])]
        unique = []
        for m in options:
            if m not in unique:
                unique.append(m)
        node["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
        if rest is None:
            node["minItems"] = node["maxItems"] = len(members)
        order = ", ".join(_brief(m) for m in members)
        notes.append(f"in this order: {order}")
    keys = ("uniqueItems", "contains", "minContains", "maxContains", "unevaluatedItems")
    restate(node, notes, *keys)
    if node.get("maxItems") == 0 and "items" not in node:  # tuple[()]: always [], as asked
        node["items"] = {"type": "null"}  # strict mode needs an item type; none is ever read
    items = node.get("items")
    if not isinstance(items, dict) or items == {}:
        raise SchemaError(
            f"{where(path)} is a list of Any; give its items a concrete type", path=path
        )
    node["items"] = _convert(items, (*path, "items"))
    return node


_VALUE_TYPES: dict[type, str] = {
    bool: "boolean",
    type(None): "null",
    int: "integer",
    float: "number",
    str: "string",
}


def _typed_values(node: JSONSchema) -> JSONSchema:
    """An untyped ``enum``/``const`` (``Literal[1, "a"]``) with the ``type`` strict mode needs.

    One type, or one ``anyOf`` branch per JSON type holding its values.
    """
    values: list[object] = node["enum"] if "enum" in node else [node["const"]]
    kinds: dict[str, list[object]] = {}
    for value in values:
        kind = _VALUE_TYPES.get(type(value))
        if kind is None:  # an object or array value: the checker names it
            return node
        kinds.setdefault(kind, []).append(value)
    if "integer" in kinds and "number" in kinds:
        kinds["number"] = [*kinds.pop("integer"), *kinds["number"]]
    if len(kinds) == 1:
        return {**node, "type": next(iter(kinds))}
    rest = {k: v for k, v in node.items() if k not in ("enum", "const")}
    return {**rest, "anyOf": [{"type": kind, "enum": vals} for kind, vals in kinds.items()]}


def _key_pattern(node: JSONSchema) -> str | None:
    """The key pattern of ``dict[Annotated[str, Field(pattern=...)], T]``, or None.

    Pydantic writes it as one ``patternProperties`` entry, with no ``additionalProperties``.
    """
    patterns: object = node.get("patternProperties")
    if "additionalProperties" in node or not isinstance(patterns, dict) or len(patterns) != 1:
        return None
    return str(next(iter(cast("dict[str, object]", patterns))))


def _brief(schema: JSONSchema) -> str:
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    return str(schema.get("type", "value"))


def to_openai_strict(schema: JSONSchema, *, name: str) -> JSONSchema:
    """Convert a neutral schema to OpenAI's strict subset, checking every rule and limit.

    Raises:
        SchemaError: For a shape the subset cannot express (with what to do instead), or a
            schema over OpenAI's size limits; ``path`` names where.
    """
    defs = schema.get("$defs", {})
    result = _convert({k: v for k, v in schema.items() if k != "$defs"}, ())
    if defs:
        result["$defs"] = {n: _convert(d, ("$defs", n)) for n, d in defs.items()}
    violations = check_openai_strict(result, name=name)
    if violations:
        first = violations[0]
        message = format_violation(first, name=name)
        if first.scope == "schema":  # a size limit: say where, and how to send it anyway
            message += f" ({where(first.path)}) {_OVER_LIMIT}"
        raise SchemaError(message, path=first.path)
    return result


_OVER_LIMIT = (
    "To send it without strict mode, compile for target='json-schema' (sent with strict: "
    "false): an LM with profile=ts.Profile.named('openai').derive(target='json-schema'), or "
    "mode='json_object' or mode='prompt'."
)
