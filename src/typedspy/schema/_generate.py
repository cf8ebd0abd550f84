"""Pydantic JSON schema of an output model, with every tagged union member carrying `_type`.

This produces the target-neutral schema: Pydantic's own output, plus ``_type`` const properties
(first among the properties) on each union member. Targets (`schema/targets/`) then reshape it
for a provider.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from typedspy.errors import SchemaError
from typedspy.schema._patterns import DECIMAL, INTEGER
from typedspy.signature import NOMATCH_TAG, OTHER_TAG, TAG_PREFIX, TYPE_KEY

__all__ = ["JSONSchema", "neutral_schema", "walk_schema", "where"]

JSONSchema = dict[str, Any]
_MARKER = "x-typedspy-tag"
_DEFS = "#/$defs/"


class _TaggingGenerator(GenerateJsonSchema):
    """Emits ``anyOf`` for typedspy's tagged unions, each member marked with its wire name."""

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        choices = schema["choices"]
        if not any(isinstance(k, str) and k.startswith(TAG_PREFIX) for k in choices):
            return super().tagged_union_schema(schema)
        branches: list[JsonSchemaValue] = []
        for tag, choice in choices.items():
            if tag == NOMATCH_TAG:
                continue
            sub = self.generate_inner(choice)
            if tag == OTHER_TAG:
                branches.extend(sub["anyOf"] if set(sub) == {"anyOf"} else [sub])
            else:
                branches.append({**sub, _MARKER: str(tag)[len(TAG_PREFIX) :]})
        return {"anyOf": branches}

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        """Pydantic's, with integer keys said: JSON keys are text, ``{"1": ...}`` reads as 1.

        Without it a ``dict[int, V]`` took any text as a key, and the strict target's pairs
        asked for string keys a model filled with words, each reply refused.
        """
        out = super().dict_schema(schema)
        keys = schema.get("keys_schema")
        if keys is not None and keys.get("type") == "int" and "propertyNames" not in out:
            out["propertyNames"] = {"type": "string", "pattern": INTEGER}
        return out

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> JsonSchemaValue:
        """Pydantic's, with a pattern engines can enforce on the string branch."""
        out = super().decimal_schema(schema)
        for branch in out.get("anyOf", [out]):
            if branch.get("type") == "string":
                branch["pattern"] = DECIMAL  # Pydantic's own (if any) uses a look-ahead
        return out


def _subschemas(node: JSONSchema) -> Iterator[JSONSchema]:
    """Direct sub-schemas of a schema node (properties, items, anyOf members, ...)."""
    for key in ("properties", "$defs", "patternProperties"):
        children = node.get(key)
        if isinstance(children, dict):
            yield from (c for c in children.values() if isinstance(c, dict))
    for key in ("items", "additionalProperties", "propertyNames", "not", "contains"):
        child = node.get(key)
        if isinstance(child, dict):
            yield child
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children = node.get(key)
        if isinstance(children, list):
            yield from (c for c in children if isinstance(c, dict))


def where(path: tuple[str | int, ...]) -> str:
    """The field a schema path leads to, for messages: ``field a.b``, or ``the output``."""
    names = [str(p) for i, p in enumerate(path) if i and path[i - 1] in ("properties", "$defs")]
    return "field " + ".".join(names) if names else "the output"


def walk_schema(node: JSONSchema, *, defs: bool = True) -> Iterator[JSONSchema]:
    """``node`` and every sub-schema in it, parents first (``defs=False``: not its ``$defs``).

    A parent's sub-schemas are listed after it is yielded, so a caller may reshape it first.
    """
    yield node  # itself, not a copy: a caller reshaping it reshapes the schema
    stack = list(_subschemas(node if defs else {k: v for k, v in node.items() if k != "$defs"}))
    while stack:
        current = stack.pop()
        yield current
        stack.extend(_subschemas(current))


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "Model"


def neutral_schema(model: type[BaseModel]) -> JSONSchema:
    """The output model's JSON schema with `_type` tags resolved into tagged `$defs`."""
    schema = model.model_json_schema(schema_generator=_TaggingGenerator, mode="validation")
    defs: dict[str, JSONSchema] = schema.setdefault("$defs", {})
    tagged: dict[tuple[str, str], str] = {}  # (untagged def, wire name) -> temporary def key

    def tag_node(node: JSONSchema) -> None:
        wire = node[_MARKER]
        if not isinstance(node.get("$ref"), str):  # `Annotated[Model, WithJsonSchema(...)]`
            member = {k: v for k, v in copy.deepcopy(node).items() if k != _MARKER}
            _check_taggable(
                member,
                wire,
                "own schema (WithJsonSchema) is",
                "give it an object schema, or drop the custom schema",
            )
            _prepend_type(member, wire)
            node.clear()
            node.update(member)
            return
        # Pydantic puts a model in `$defs`; `Annotated[Model, Field(...)]` adds siblings.
        source = node["$ref"][len(_DEFS) :]
        key = tagged.get((source, wire))
        if key is None:
            key = f"{TAG_PREFIX}{len(tagged)}"
            tagged[(source, wire)] = key
            # Copy before this node loses its marker: in a recursive model the node may sit
            # inside the very definition being copied, and the copy must refer to itself tagged.
            member = copy.deepcopy(defs[source])
            # A RootModel: no keys to hold the tag.
            _check_taggable(
                member,
                source,
                "values are",
                "put its root type in the union instead (`int | Cat`)",
            )
            _prepend_type(member, wire)
            defs[key] = member
        del node[_MARKER]
        node["$ref"] = _DEFS + key

    for node in list(walk_schema(schema, defs=False)):
        if _MARKER in node:
            tag_node(node)
    done: set[str] = set()
    while len(done) < len(defs):  # tagging adds definitions, which may hold unions themselves
        for name in [n for n in defs if n not in done]:
            done.add(name)
            for node in list(walk_schema(defs[name])):
                if _MARKER in node:
                    tag_node(node)
    return _tidy_defs(schema, {key: wire for (_, wire), key in tagged.items()})


def _check_taggable(member: JSONSchema, name: str, what: str, instead: str) -> None:
    """Refuse a union member whose schema is no JSON object: it has no keys to hold `_type`."""
    if member.get("type") != "object" or not isinstance(member.get("properties", {}), dict):
        shown = member.get("type") or "not an object"
        raise SchemaError(
            f"{name} is a union member whose {what} no JSON object ({shown}), so it cannot carry "
            f"the {TYPE_KEY!r} tag typedspy adds to every model of a union (replies name "
            f"their member by it): {instead}",
            path=(name,),
        )


def _prepend_type(member: JSONSchema, wire: str) -> None:
    props = member.get("properties", {})
    member["properties"] = {TYPE_KEY: {"type": "string", "const": wire}, **props}
    member["required"] = [TYPE_KEY, *[r for r in member.get("required", []) if r != TYPE_KEY]]


def _reachable(schema: JSONSchema, defs: dict[str, JSONSchema]) -> set[str]:
    """The definitions that the schema's body refers to, directly or through other ones."""
    reachable: set[str] = set()
    stack = [schema]
    while stack:
        for node in walk_schema(stack.pop(), defs=False):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_DEFS):
                name = ref[len(_DEFS) :]
                if name not in reachable and name in defs:
                    reachable.add(name)
                    stack.append(defs[name])
    return reachable


def _tidy_defs(schema: JSONSchema, tagged_wire: dict[str, str]) -> JSONSchema:
    """Drop definitions nothing refers to, and give tagged ones readable names."""
    defs: dict[str, JSONSchema] = schema.get("$defs", {})
    if not defs:
        schema.pop("$defs", None)
        return schema
    reachable = _reachable(schema, defs)
    kept = {name: d for name, d in defs.items() if name in reachable}
    renames: dict[str, str] = {}
    taken = {n for n in kept if n not in tagged_wire}
    for name in kept:
        if name in tagged_wire:
            base = _safe_name(tagged_wire[name])
            new, n = base, 1
            while new in taken:
                n += 1
                new = f"{base}_{n}"
            taken.add(new)
            renames[name] = new
    if renames:
        for node in walk_schema({**schema, "$defs": kept}):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref[len(_DEFS) :] in renames:
                node["$ref"] = _DEFS + renames[ref[len(_DEFS) :]]
    ordered = {renames.get(name, name): kept[name] for name in kept}
    result = {k: v for k, v in schema.items() if k != "$defs"}
    if ordered:
        result["$defs"] = dict(sorted(ordered.items()))
    return result
