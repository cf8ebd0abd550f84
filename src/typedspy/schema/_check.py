"""Meta-validation of compiled schemas with `jsonschema` (imported on first use: ADR-034)."""

from __future__ import annotations

from typing import Any

from typedspy.errors import SchemaError

__all__ = ["check_meta_schema", "validate_instance"]


def check_meta_schema(schema: dict[str, Any]) -> None:
    """Raise `SchemaError` unless ``schema`` is valid JSON Schema (draft 2020-12)."""
    from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
    from jsonschema.exceptions import SchemaError as _MetaError  # type: ignore[import-untyped]

    try:
        Draft202012Validator.check_schema(schema)
    except _MetaError as exc:
        raise SchemaError(
            f"compiled schema is not valid JSON Schema: {exc.message}", path=tuple(exc.path)
        ) from exc


def validate_instance(instance: Any, schema: dict[str, Any]) -> list[str]:
    """Messages for every way ``instance`` violates ``schema`` (empty when it is valid)."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(schema)
    return [
        f"{'/'.join(str(p) for p in err.absolute_path)}: {err.message}"
        for err in validator.iter_errors(instance)
    ]
