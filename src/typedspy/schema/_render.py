"""A compact text rendering of an output schema, for prompts that carry the shape themselves."""

from __future__ import annotations

import json
from typing import Any

from typedspy.schema._generate import JSONSchema

__all__ = ["render_shape"]

_CONSTRAINTS = {
    "minimum": ">= {}",
    "maximum": "<= {}",
    "exclusiveMinimum": "> {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "pattern": "matching {}",
    "format": "format {}",
    "multipleOf": "multiple of {}",
}


def _type_text(node: JSONSchema) -> str:
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    if "const" in node:
        return json.dumps(node["const"], ensure_ascii=False)
    if "enum" in node:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in node["enum"])
    if "anyOf" in node:
        return " | ".join(_type_text(b) for b in node["anyOf"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(_type_text({**node, "type": k}) for k in kind)
    if kind == "array":
        item = node.get("items", {})
        inner = _type_text(item) if isinstance(item, dict) else "value"
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if kind == "object":
        if node.get("properties"):
            return _object_text(node, indent=1)
        extra = node.get("additionalProperties")
        value = _type_text(extra) if isinstance(extra, dict) else "value"
        return f"{{[key: string]: {value}}}"
    if kind is None:
        return "value"
    return str(kind)


def _constraints(node: JSONSchema) -> list[str]:
    """The node's own constraints, and those of the non-null branches of an ``anyOf``.

    An ``Optional`` field's pattern or bounds sit in its ``anyOf`` branch, not beside it
    (issue 23: a server that fails open relies on the shape, so the prompt must show them).
    """
    parts = [text.format(node[key]) for key, text in _CONSTRAINTS.items() if key in node]
    for branch in node.get("anyOf", ()):
        if isinstance(branch, dict) and branch.get("type") != "null" and "$ref" not in branch:
            parts += _constraints(branch)
    items = node.get("items")
    if isinstance(items, dict) and "$ref" not in items:
        each = _constraints(items)
        if each:
            parts.append("each " + ", ".join(each))
    return parts


def _notes(node: JSONSchema) -> str:
    parts = _constraints(node)
    if "default" in node:
        parts.append(f"default {json.dumps(node['default'], default=str)}")
    desc = node.get("description")
    if isinstance(desc, str) and desc:
        parts.insert(0, " ".join(desc.split()))
    return ", ".join(parts)


def _object_text(node: JSONSchema, indent: int = 1) -> str:
    pad = "  " * indent
    lines = ["{"]
    props: dict[str, Any] = node.get("properties", {})
    for i, (name, sub) in enumerate(props.items()):
        comma = "," if i < len(props) - 1 else ""
        note = _notes(sub)
        text = _type_text(sub).replace("\n", "\n" + pad)
        lines.append(f"{pad}{json.dumps(name)}: {text}{comma}" + (f"  // {note}" if note else ""))
    lines.append("  " * (indent - 1) + "}")
    return "\n".join(lines)


def render_shape(schema: JSONSchema) -> str:
    """Render ``schema`` as a JSON-like template: types in place of values, defs below it.

    Example output::

        {
          "action": SpawnTask | Continue,
          "confidence": number  // >= 0, <= 1
        }
        SpawnTask = {"_type": "SpawnTask", "priority": "low" | "high"}
    """
    parts = [_object_text(schema)]
    for name, sub in schema.get("$defs", {}).items():
        parts.append(
            f"{name} = {_type_text(sub) if sub.get('properties') is None else _object_text(sub)}"
        )
    return "\n".join(parts)
