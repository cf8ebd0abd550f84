"""OpenAI's strict JSON-schema subset: the rules as data, and a checker that applies them.

This module is the one home of provider knowledge about what ``strict: true`` accepts on
``response_format`` and on function tools. The schema compiler imports the constants to decide
what to emit, and the stand-in server runs :func:`check_openai_strict` to answer 400s the way
api.openai.com does.

Where OpenAI's behaviour is unsettled we take the strict reading: ``default``,
``discriminator``, ``minLength``/``maxLength`` and siblings of ``$ref`` are all rejected, as
are keywords that no allow-list names. Messages reuse OpenAI's wording where it is known
(see ``/work/shared/reference/structured-outputs.md`` §1.6); the others follow the same style.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from typedspy.schema.targets._openai_measure import (
    LARGE_ENUM_THRESHOLD,
    MAX_WALK_NODES,
    EnumMeasure,
    Path,
    SchemaMeasures,
    Visit,
    definition_names,
    measure_schema,
    ref_target,
    walk,
)

__all__ = [
    "ALLOWED_KEYWORDS",
    "ANNOTATION_KEYWORDS",
    "JSON_TYPES",
    "LARGE_ENUM_THRESHOLD",
    "MAX_ENUM_VALUES",
    "MAX_LARGE_ENUM_CHARS",
    "MAX_NAME_LENGTH",
    "MAX_NESTING_DEPTH",
    "MAX_PROPERTIES",
    "MAX_REPORTED",
    "MAX_STRING_BUDGET",
    "MAX_WALK_NODES",
    "NAME_PATTERN",
    "SUPPORTED_STRING_FORMATS",
    "UNSUPPORTED_KEYWORDS",
    "EnumMeasure",
    "SchemaMeasures",
    "StrictViolation",
    "check_name",
    "check_openai_strict",
    "format_violation",
    "limit_violations",
    "measure_schema",
]

# The facts (../shared/reference/structured-outputs.md §1.2–1.6): limits, keywords, formats.
MAX_NESTING_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000
MAX_STRING_BUDGET = 120_000
MAX_LARGE_ENUM_CHARS = 15_000  # one string enum with more than LARGE_ENUM_THRESHOLD values
MAX_NAME_LENGTH = 64
MAX_REPORTED = 1000  # structural violations collected before the checker stops looking
NAME_PATTERN = r"^[a-zA-Z0-9_-]{1,64}$"

SUPPORTED_STRING_FORMATS: frozenset[str] = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
JSON_TYPES: frozenset[str] = frozenset(
    {"string", "number", "integer", "boolean", "object", "array", "null"}
)

ANNOTATION_KEYWORDS: frozenset[str] = frozenset(
    {"description", "title", "examples", "$comment", "deprecated", "readOnly", "writeOnly"}
)
_SCALAR = frozenset({"type", "enum", "const"})
_NUMERIC = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})

ALLOWED_KEYWORDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        # Permitted next to every kind except "$ref", which takes no siblings at all.
        "annotations": ANNOTATION_KEYWORDS,
        # Permitted on the root schema only.
        "root": frozenset({"$defs", "definitions", "$schema", "$id"}),
        "object": frozenset({"type", "properties", "required", "additionalProperties"}),
        "array": frozenset({"type", "items", "minItems", "maxItems"}),
        "string": _SCALAR | {"pattern", "format"},
        "number": _SCALAR | _NUMERIC,
        "integer": _SCALAR | _NUMERIC,
        "boolean": _SCALAR,
        "null": _SCALAR,
        "anyOf": frozenset({"anyOf"}),
        "$ref": frozenset({"$ref"}),
    }
)

UNSUPPORTED_KEYWORDS: frozenset[str] = frozenset(
    {
        "oneOf", "allOf", "not", "if", "then", "else",
        "dependentRequired", "dependentSchemas", "dependencies",
        "patternProperties", "propertyNames", "unevaluatedProperties",
        "minProperties", "maxProperties",
        "uniqueItems", "prefixItems", "additionalItems", "unevaluatedItems",
        "contains", "minContains", "maxContains",
        "minLength", "maxLength", "contentEncoding", "contentMediaType", "contentSchema",
        "default", "discriminator", "nullable",
        "$anchor", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    }
)  # fmt: skip

_COMBINATORS = frozenset({"oneOf", "allOf", "not", "if", "then", "else"})
_MSG_ADDITIONAL = "'additionalProperties' is required to be supplied and to be false."
_MSG_REQUIRED = (
    "'required' is required to be supplied and to be an array including every key in properties."
)
_MSG_NO_TYPE = "schema must have a 'type' key."
_OPT_OUT = "or use 'strict: false' to opt out of structured outputs."


Scope = Literal["context", "schema", "name"]


@dataclass(frozen=True)
class StrictViolation:
    """One way a schema breaks OpenAI's strict subset.

    Attributes:
        path: Where the problem is, as the keys and indexes leading to the offending
            sub-schema, e.g. ``("properties", "action", "anyOf", 0)``.
        message: The problem in OpenAI's own wording, e.g. ``"'oneOf' is not permitted."``.
        scope: ``"context"`` for a problem OpenAI reports with ``In context=(...)``,
            ``"schema"`` for a whole-schema limit (reported without a context; ``path`` then
            only points at the cause) and ``"name"`` for a bad ``response_format`` or
            function name.
    """

    path: Path
    message: str
    scope: Scope = "context"


def check_openai_strict(schema: object, *, name: str = "response") -> list[StrictViolation]:
    """List every way ``schema`` breaks OpenAI's strict subset.

    The name check comes first, then structural problems in document order (the first
    :data:`MAX_REPORTED` or so), then the whole-schema limits. Never raises, whatever JSON-like
    value it is given.

    Args:
        schema: The JSON schema (``response_format.json_schema.schema`` or a function's
            ``parameters``).
        name: The ``response_format`` or function name, checked against :data:`NAME_PATTERN`.

    Returns:
        The violations; empty when OpenAI would accept the schema.
    """
    found = check_name(name)
    definitions = definition_names(schema)
    for visit in walk(schema):
        if len(found) >= MAX_REPORTED:
            break
        found.extend(StrictViolation(visit.path, m) for m in _node_problems(visit, definitions))
    found.extend(limit_violations(measure_schema(schema)))
    return found


def check_name(name: object) -> list[StrictViolation]:
    """Check a ``response_format`` or function name against :data:`NAME_PATTERN`.

    Args:
        name: The name as sent.

    Returns:
        No violation, or one with scope ``"name"`` worded like OpenAI's ``invalid_value``
        errors.
    """
    if not isinstance(name, str):
        message = "expected a string."
    elif not name:
        message = "string too short. Expected a string with minimum length 1."
    elif len(name) > MAX_NAME_LENGTH:
        message = (
            f"string too long. Expected a string with maximum length {MAX_NAME_LENGTH}, "
            f"but got a string with length {len(name)} instead."
        )
    elif re.fullmatch(NAME_PATTERN, name) is None:
        message = (
            "string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
    else:
        return []
    return [StrictViolation((), message, "name")]


def format_violation(
    v: StrictViolation,
    *,
    name: str,
    kind: Literal["response_format", "function"] = "response_format",
) -> str:
    """Render a violation as the message of OpenAI's 400 error.

    Args:
        v: The violation.
        name: The ``response_format`` or function name the schema was sent under.
        kind: Which of the two the schema belongs to.

    Returns:
        E.g. ``"Invalid schema for response_format 'Out': In context=('properties', 'x'),
        'oneOf' is not permitted."``.
    """
    if v.scope == "name":
        where = "response_format.json_schema.name" if kind == "response_format" else "function.name"
        return f"Invalid '{where}': {v.message}"
    head = f"Invalid schema for {kind} '{name}': "
    if v.scope == "schema":
        return head + v.message
    return f"{head}In context={v.path!r}, {v.message}"


# --- one sub-schema ---------------------------------------------------------------------


def _node_problems(visit: Visit, definitions: set[Path]) -> Iterator[str]:
    node, path = visit.node, visit.path
    is_root = path == ()
    if is_root:
        yield from _root_type(node)
    if not isinstance(node, dict):
        if not is_root:
            yield f"schema must be a JSON object, got {_json_kind(node)}."
        return
    if "$ref" in node:
        yield from _ref_problems(node, definitions)
        return
    types, problem = _node_types(node, is_root)
    yield from _keyword_problems(node, types, is_root)
    if problem:
        yield problem
    for t in types:
        if t == "object":
            yield from _object_problems(node)
        elif t == "array":
            yield from _array_problems(node)
        elif t == "string":
            yield from _format_problems(node)
    yield from _value_problems(node, is_root)


def _root_type(node: object) -> Iterator[str]:
    declared = node.get("type") if isinstance(node, dict) else None
    if declared != "object":
        shown = declared if isinstance(declared, str) or declared is None else _dumps(declared)
        yield f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{shown}\"'."


def _node_types(node: dict[object, object], is_root: bool) -> tuple[list[str], str | None]:
    """The node's declared types, and the problem with its ``type`` if there is one."""
    if "anyOf" in node and not is_root:
        return [], None
    declared = node.get("type")
    if declared is None:
        # At the root the root-type message already says it.
        return [], None if is_root else _MSG_NO_TYPE
    items = declared if isinstance(declared, list) else [declared]
    valid = [t for t in items if isinstance(t, str) and t in JSON_TYPES]
    if not items or len(valid) != len(items) or len(set(valid)) != len(valid):
        allowed = ", ".join(f"'{t}'" for t in sorted(JSON_TYPES))
        return [], f"'type' must be one of {allowed}, or a list of them; got {_dumps(declared)}."
    return valid, None


def _keyword_problems(node: dict[object, object], types: list[str], is_root: bool) -> Iterator[str]:
    if "anyOf" in node and not is_root:
        allowed = ALLOWED_KEYWORDS["anyOf"]
    elif types:
        allowed = frozenset().union(*(ALLOWED_KEYWORDS[t] for t in types))
    else:
        # Without a usable type the node is rejected already; only flag what no kind permits.
        allowed = frozenset().union(*ALLOWED_KEYWORDS.values()) - ALLOWED_KEYWORDS["root"]
    allowed = allowed | ANNOTATION_KEYWORDS
    if is_root:
        allowed = allowed | ALLOWED_KEYWORDS["root"]
    rejected = [key for key in node if key not in allowed]
    # Combinators first: for Pydantic's {"oneOf", "discriminator", ...} OpenAI names 'oneOf'.
    rejected.sort(key=lambda key: key not in _COMBINATORS)
    for key in rejected:
        yield f"'{key}' is not permitted."


def _ref_problems(node: dict[object, object], definitions: set[Path]) -> Iterator[str]:
    siblings = sorted(str(k) for k in node if k != "$ref")
    if siblings:
        yield "$ref cannot have keywords {" + ", ".join(repr(k) for k in siblings) + "}."
    ref = node["$ref"]
    if ref_target(ref, definitions) is None:
        yield f"reference {_dumps(ref)} cannot be resolved; use '#' or '#/$defs/<name>'."


def _object_problems(node: dict[object, object]) -> Iterator[str]:
    if node.get("additionalProperties", True) is not False:
        yield _MSG_ADDITIONAL
    props = node.get("properties")
    if props is None:
        yield "object schema missing properties."
        return
    if not isinstance(props, dict):
        yield "'properties' must be an object."
        return
    required = node.get("required")
    if required is None and not props:
        return
    listed = [k for k in required if isinstance(k, str)] if isinstance(required, list) else []
    named = set(listed)
    for key in props:
        if key not in named:
            yield f"{_MSG_REQUIRED} Missing '{key}'."
    for key in listed:
        if key not in props:
            yield f"{_MSG_REQUIRED} Extra required key '{key}' supplied."


def _array_problems(node: dict[object, object]) -> Iterator[str]:
    items = node.get("items")
    if items is None:
        yield "array schema missing items."
    elif isinstance(items, list):
        yield "'items' must be a single schema; tuple forms are not permitted."
    elif not isinstance(items, dict):
        yield f"'items' must be a schema object, got {_json_kind(items)}."


def _format_problems(node: dict[object, object]) -> Iterator[str]:
    fmt = node.get("format")
    if fmt is not None and fmt not in SUPPORTED_STRING_FORMATS:
        supported = ", ".join(sorted(SUPPORTED_STRING_FORMATS))
        yield f"format {_dumps(fmt)} is not supported; use one of: {supported}."


def _value_problems(node: dict[object, object], is_root: bool) -> Iterator[str]:
    """Keywords present with a value of the wrong shape."""
    if "enum" in node and not (isinstance(node["enum"], list) and node["enum"]):
        yield "'enum' must be a non-empty array."
    if "anyOf" in node and not (isinstance(node["anyOf"], list) and node["anyOf"]):
        yield "'anyOf' must be a non-empty array."
    if "pattern" in node and not isinstance(node["pattern"], str):
        yield "'pattern' must be a string."
    for key in ("$defs", "definitions"):
        if is_root and key in node and not isinstance(node[key], dict):
            yield f"'{key}' must be an object."
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
        if key in node and not _is_number(node[key]):
            yield f"'{key}' must be a number."
    for key in ("minItems", "maxItems"):
        value = node.get(key, 0)
        if not (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
            yield f"'{key}' must be a non-negative integer."


# --- limits -----------------------------------------------------------------------------


def limit_violations(m: SchemaMeasures) -> list[StrictViolation]:
    """Turn measures that exceed OpenAI's limits into violations (scope ``"schema"``).

    Args:
        m: What :func:`measure_schema` returned.

    Returns:
        One violation per exceeded limit, worded like OpenAI's.
    """
    found: list[StrictViolation] = []

    def over(message: str, path: Path = ()) -> None:
        found.append(StrictViolation(path, message, "schema"))

    if m.truncated and m.depth <= MAX_NESTING_DEPTH:
        over(f"schema has more than {MAX_WALK_NODES} sub-schemas and was not fully checked.")
    if m.depth > MAX_NESTING_DEPTH:
        over(f"{m.depth} levels of nesting exceeds limit of {MAX_NESTING_DEPTH}.", m.deepest_path)
    if m.properties > MAX_PROPERTIES:
        # "parameters" is what OpenAI's own message says, even for response_format.
        over(f"{m.properties} parameters exceeds limit of {MAX_PROPERTIES}.")
    if m.enum_values > MAX_ENUM_VALUES:
        over(
            f"Expected at most {MAX_ENUM_VALUES} enum values in total within a single schema "
            f"when using structured outputs, but received {m.enum_values}. "
            f"Consider reducing the number of enums, {_OPT_OUT}"
        )
    for enum in m.large_enums:
        if enum.chars > MAX_LARGE_ENUM_CHARS:
            over(
                f"Expected at most {MAX_LARGE_ENUM_CHARS} total characters across enum values "
                f"when there are more than {LARGE_ENUM_THRESHOLD} enum values, but received "
                f"{enum.chars}. Consider reducing the number of enums, {_OPT_OUT}",
                enum.path,
            )
    if m.string_budget > MAX_STRING_BUDGET:
        over(
            f"Expected at most {MAX_STRING_BUDGET} total characters across property names, "
            f"definition names, enum values and const values, but received {m.string_budget}. "
            f"Consider shortening the schema, {_OPT_OUT}"
        )
    return found


# --- helpers ----------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _dumps(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return "<unprintable>"


def _json_kind(value: object) -> str:
    if isinstance(value, bool) or value is None:
        return "boolean" if value is not None else "null"
    names: dict[type, str] = {
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        tuple: "array",
    }
    return names.get(type(value), type(value).__name__)
