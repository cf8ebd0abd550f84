"""OpenAI's strict JSON-schema subset as data: limits, keywords, formats.

Facts and sources: ``../shared/reference/structured-outputs.md`` §1.2–1.6. The checker
(`_openai_rules`) and the compiler target (`openai_strict`) read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "ALLOWED_KEYWORDS",
    "ANNOTATION_KEYWORDS",
    "JSON_TYPES",
    "MAX_ENUM_VALUES",
    "MAX_LARGE_ENUM_CHARS",
    "MAX_NAME_LENGTH",
    "MAX_NESTING_DEPTH",
    "MAX_PROPERTIES",
    "MAX_REPORTED",
    "MAX_STRING_BUDGET",
    "NAME_PATTERN",
    "SUPPORTED_STRING_FORMATS",
    "UNSUPPORTED_KEYWORDS",
]

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
