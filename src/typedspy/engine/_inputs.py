"""What a module call accepts: its signature, and inputs checked against it before any request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from typedspy.errors import InputError, SchemaError
from typedspy.parse import field_errors
from typedspy.signature import Signature

__all__ = ["check_inputs", "signature_class"]


def check_inputs(signature: type[Signature], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` validated by the signature's input model, as the values to send.

    Raises:
        InputError: Missing or unexpected names, or a value that fails validation (the message
            names the signature and the field path).
    """
    fields = signature.input_fields
    missing = [n for n, f in fields.items() if n not in inputs and f.is_required()]
    unexpected = [n for n in inputs if n not in fields]
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing input(s) {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected input(s) {', '.join(unexpected)}")
        expected = ", ".join(fields) or "none"
        raise InputError(
            f"{signature.__name__}: {'; '.join(parts)} (inputs are: {expected})",
            missing=missing,
            unexpected=unexpected,
        )
    try:
        model = signature.input_model.model_validate(dict(inputs))
    except ValidationError as exc:
        detail = "; ".join(str(e) for e in field_errors(exc)[:5])
        raise InputError(f"{signature.__name__}: invalid input: {detail}") from exc
    return {n: getattr(model, n) for n in fields if n in inputs or n in model.model_fields_set}


def signature_class(signature: object) -> type[Signature]:
    """``signature`` itself when it is a `Signature` subclass.

    Raises:
        SchemaError: Anything else, for instance a plain Pydantic model (the message says how
            to declare a signature).
    """
    if isinstance(signature, type) and issubclass(signature, Signature):
        if signature is Signature:
            raise SchemaError("ts.Signature itself declares no fields: pass a subclass")
        return signature
    if isinstance(signature, type) and issubclass(signature, BaseModel):
        raise SchemaError(
            f"{signature.__name__} is a pydantic BaseModel, not a ts.Signature: declare "
            f"`class {signature.__name__}(ts.Signature)` with ts.InputField()/ts.OutputField() "
            "fields, or use it as the type of an output field"
        )
    raise SchemaError(
        f"expected a ts.Signature subclass or a string such as 'question -> answer', "
        f"not {signature!r}"
    )
