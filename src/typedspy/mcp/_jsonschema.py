"""Validation of remote values against schemas that have no Pydantic model (jsonschema).

A remote MCP tool's ``inputSchema`` and ``outputSchema`` are plain JSON Schema; `jsonschema`
checks instances against them and reports each violation's path (ADR-019).
"""

from __future__ import annotations

from typing import Any

from jsonschema import validators  # type: ignore[import-untyped]
from jsonschema.exceptions import (  # type: ignore[import-untyped]
    SchemaError as _MetaError,
)
from jsonschema.exceptions import (
    ValidationError as _Violation,
)

from typedspy._types import FieldError
from typedspy.errors import SchemaError

__all__ = ["Checker", "violation_errors"]

_MAX_ERRORS = 20


class Checker:
    """A compiled validator for one schema (draft chosen by ``$schema``, 2020-12 by default)."""

    def __init__(self, schema: dict[str, Any], *, where: str) -> None:
        """Compile ``schema``.

        Raises:
            SchemaError: It is not valid JSON Schema; ``where`` names it in the message.
        """
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        try:
            cls.check_schema(schema)
        except _MetaError as exc:
            raise SchemaError(f"{where} is not valid JSON Schema: {exc.message}") from exc
        self._validator = cls(schema)

    def errors(self, instance: Any) -> list[FieldError]:
        """One `FieldError` per violation (at most 20), deepest paths first; empty when valid."""
        found = sorted(self._validator.iter_errors(instance), key=_depth, reverse=True)
        return [_field_error(err) for err in found[:_MAX_ERRORS]]


def violation_errors(error: BaseException | None) -> list[FieldError]:
    """The violation a jsonschema exception describes, when ``error`` is one."""
    return [_field_error(error)] if isinstance(error, _Violation) else []


def _depth(err: Any) -> int:
    return len(err.absolute_path)


def _field_error(err: Any) -> FieldError:
    return FieldError(tuple(err.absolute_path), str(err.message))
