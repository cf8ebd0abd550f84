"""JSON Schema checks with `jsonschema` (imported on first use: ADR-034).

`validate_instance` checks a value against a schema (the engine's remedies, the stand-in's
replies); `meta_schema_violation` checks a schema against the draft 2020-12 meta-schema (the
stand-in's 400 for an invalid ``response_format``, ADR-046).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from typedspy.schema.targets._openai_rules import StrictViolation

__all__ = ["meta_schema_violation", "validate_instance"]


def meta_schema_violation(schema: object) -> StrictViolation | None:
    """The most relevant way ``schema`` is not valid JSON Schema (draft 2020-12), or None.

    The violation's ``path`` leads to the offending keyword inside ``schema``; its message is
    jsonschema's. Results are cached by the schema's JSON text.
    """
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return StrictViolation((), "the schema is not JSON.", "schema")
    return _meta_violation(text)


@functools.lru_cache(maxsize=256)
def _meta_violation(text: str) -> StrictViolation | None:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    meta = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    error = best_match(meta.iter_errors(json.loads(text)))
    if error is None:
        return None
    path = tuple(error.absolute_path)
    return StrictViolation(path, f"{error.message}.", "context" if path else "schema")


def validate_instance(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Messages for every way ``instance`` violates ``schema`` (empty when it is valid).

    The validator is built once per schema (cached by its JSON text).
    """
    validator = _validator(json.dumps(schema, sort_keys=True))
    return [
        f"{'/'.join(str(p) for p in err.absolute_path)}: {err.message}"
        for err in validator.iter_errors(instance)
    ]


@functools.lru_cache(maxsize=256)
def _validator(text: str) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(text))
