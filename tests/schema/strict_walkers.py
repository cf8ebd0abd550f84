"""Rule walkers for OpenAI strict schemas, shared by the schema tests (not a test module).

Each rule returns a list of ``(path, problem)`` pairs; an empty list means the rule holds.
The walkers are written independently of typedspy's own checker so that they can catch it.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, ClassVar

import openai
from pydantic import BaseModel

Path = tuple[str | int, ...]
Problem = tuple[Path, str]

STRICT_FORMATS = {
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
}
UNSUPPORTED = {
    "oneOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "minLength",
    "maxLength",
    "uniqueItems",
    "prefixItems",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "unevaluatedItems",
}


def subschemas(schema: dict[str, Any]) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Every schema node with its document path (properties, $defs, items, anyOf, ...)."""
    stack: list[tuple[Path, dict[str, Any]]] = [((), schema)]
    while stack:
        path, node = stack.pop()
        yield path, node
        for key in ("properties", "$defs", "definitions", "patternProperties"):
            children = node.get(key)
            if isinstance(children, dict):
                stack.extend(
                    ((*path, key, name), sub)
                    for name, sub in children.items()
                    if isinstance(sub, dict)
                )
        for key in ("items", "additionalProperties", "propertyNames", "not", "contains"):
            child = node.get(key)
            if isinstance(child, dict):
                stack.append(((*path, key), child))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            children = node.get(key)
            if isinstance(children, list):
                stack.extend(((*path, key, i), sub) for i, sub in enumerate(children))


def is_object(node: dict[str, Any]) -> bool:
    return node.get("type") == "object" or "properties" in node


def resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """Follow a local ``$ref`` (``#`` or ``#/$defs/Name``) to its target."""
    seen = 0
    while "$ref" in node and seen < 50:
        ref = node["$ref"]
        if ref == "#":
            node = schema
        else:
            assert ref.startswith("#/$defs/"), ref
            node = schema["$defs"][ref[len("#/$defs/") :]]
        seen += 1
    return node


def root_is_object(schema: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    if schema.get("type") != "object":
        problems.append(((), f"root type is {schema.get('type')!r}"))
    for key in ("anyOf", "oneOf", "$ref", "allOf"):
        if key in schema:
            problems.append(((), f"root has {key}"))
    if not isinstance(schema.get("properties"), dict):
        problems.append(((), "root has no properties"))
    return problems


def forbidden_keyword(schema: dict[str, Any], keyword: str) -> list[Problem]:
    return [(path, f"has {keyword!r}") for path, node in subschemas(schema) if keyword in node]


def required_is_every_property(schema: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for path, node in subschemas(schema):
        if is_object(node):
            props = list(node.get("properties", {}))
            if node.get("required") != props:
                problems.append((path, f"required {node.get('required')} != {props}"))
    return problems


def additional_properties_false(schema: dict[str, Any]) -> list[Problem]:
    return [
        (path, f"additionalProperties is {node.get('additionalProperties', '<missing>')!r}")
        for path, node in subschemas(schema)
        if is_object(node) and node.get("additionalProperties") is not False
    ]


def ref_has_no_siblings(schema: dict[str, Any]) -> list[Problem]:
    return [
        (path, f"$ref with {sorted(k for k in node if k != '$ref')}")
        for path, node in subschemas(schema)
        if "$ref" in node and len(node) != 1
    ]


def no_unsupported_keywords(schema: dict[str, Any]) -> list[Problem]:
    problems: list[Problem] = []
    for path, node in subschemas(schema):
        problems.extend((path, f"has {key!r}") for key in sorted(UNSUPPORTED & node.keys()))
        fmt = node.get("format")
        if fmt is not None and fmt not in STRICT_FORMATS:
            problems.append((path, f"format {fmt!r}"))
        if node == {}:
            problems.append((path, "empty schema"))
        if node.get("type") == "array" and not isinstance(node.get("items"), dict):
            problems.append((path, "array without a single items schema"))
    return problems


def union_tags(
    schema: dict[str, Any], tag_keys: frozenset[str] = frozenset({"_type"})
) -> list[Problem]:
    """Every anyOf with two or more object branches: each starts with a tag key holding a const.

    ``tag_keys`` lists the allowed first keys (``_type``, plus user discriminators).
    """
    problems: list[Problem] = []
    for path, node in subschemas(schema):
        branches = node.get("anyOf")
        if not isinstance(branches, list):
            continue
        objects = [(i, resolve(schema, b)) for i, b in enumerate(branches)]
        objects = [(i, b) for i, b in objects if is_object(b)]
        if len(objects) < 2:
            continue
        consts = []
        for i, branch in objects:
            props = branch.get("properties", {})
            first = next(iter(props), None)
            if first not in tag_keys:
                problems.append(((*path, "anyOf", i), f"first property is {first!r}"))
                continue
            if "const" not in props[first] and len(props[first].get("enum", [])) != 1:
                problems.append(((*path, "anyOf", i), f"{first!r} has no const"))
                continue
            consts.append(props[first].get("const", props[first].get("enum", [None])[0]))
        if len(set(map(str, consts))) != len(consts):
            problems.append((path, f"duplicate tags {consts}"))
    return problems


def sdk_changes(schema: dict[str, Any]) -> bool:
    """Whether openai's own strict pass would change anything in ``schema``.

    Reached through the SDK's public ``openai.pydantic_function_tool``, which asks a model for
    its schema with Pydantic's public ``model_json_schema`` and makes that strict; the model here
    answers with ``schema`` itself.
    """

    class Carrier(BaseModel):
        given: ClassVar[dict[str, Any]] = schema

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return copy.deepcopy(cls.given)

    tool = openai.pydantic_function_tool(Carrier)
    return bool(tool["function"].get("parameters") != schema)


STRICT_RULES = {
    "root_is_object": root_is_object,
    "no_oneOf": lambda s: forbidden_keyword(s, "oneOf"),
    "no_discriminator": lambda s: forbidden_keyword(s, "discriminator"),
    "no_default": lambda s: forbidden_keyword(s, "default"),
    "no_title": lambda s: forbidden_keyword(s, "title"),
    "required_is_every_property": required_is_every_property,
    "additional_properties_false": additional_properties_false,
    "ref_has_no_siblings": ref_has_no_siblings,
    "no_unsupported_keywords": no_unsupported_keywords,
}


def all_strict_problems(
    schema: dict[str, Any], tag_keys: frozenset[str] = frozenset({"_type"})
) -> list[tuple[str, Problem]]:
    """Every rule's problems, labelled with the rule name."""
    out = [(name, p) for name, rule in STRICT_RULES.items() for p in rule(schema)]
    out.extend(("union_tags", p) for p in union_tags(schema, tag_keys))
    return out
