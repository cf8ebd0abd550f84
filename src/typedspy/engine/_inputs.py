"""What a module call accepts: its signature, and inputs checked against it before any request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from typedspy.errors import InputError, SchemaError
from typedspy.parse import field_value
from typedspy.signature import Signature, make_signature, returns_signature

__all__ = ["check_inputs", "signature_class", "signature_of"]


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
        model = _by_the_value_rule(signature, inputs, exc)
    # An input left out takes its default, sent like any other value (issue 23): the model
    # must learn the audience a caller did not override. A default of None means "not given".
    return {
        n: value
        for n in fields
        if (value := getattr(model, n)) is not None or n in inputs or n in model.model_fields_set
    }


def _by_the_value_rule(
    signature: type[Signature], inputs: Mapping[str, Any], exc: ValidationError
) -> BaseModel:
    """``inputs`` validated one field at a time by `field_value`, the rule demos follow.

    The input model holds tagged copies of the user's models where they hold unions or open
    dicts; a user's own instance of such a model is read through its tagged JSON (issue 20).
    """
    fields, typed, problems = signature.input_fields, {}, []
    for name, value in inputs.items():
        typed[name], errors = field_value(
            signature.input_model, name, value, fields[name].annotation
        )
        problems += errors
    if not problems:  # the values are validated (and typed as the user's classes) already
        return signature.input_model.model_construct(set(typed), **typed)
    detail = "; ".join(str(e) for e in problems[:5])
    raise InputError(f"{signature.__name__}: invalid input: {detail}") from exc


def signature_of(signature: object, output: Any = None) -> type[Signature]:
    """The signature a module runs: a class as is, a string parsed, or a `Returns` of ``output``.

    Raises:
        SchemaError: As `signature_class` and `make_signature`; ``output`` with a signature
            class (declare ``class X(ts.Returns[T])`` instead) or with ``->`` in the string.
    """
    if output is not None:
        if not isinstance(signature, str):
            raise SchemaError(
                "output= goes with a string of inputs, ts.Predict('text', output=list[Item]); "
                "with a signature class, declare its output as a field or subclass "
                "ts.Returns[...]"
            )
        return returns_signature(signature, output)
    return make_signature(signature) if isinstance(signature, str) else signature_class(signature)


def signature_class(signature: object) -> type[Signature]:
    """``signature`` itself when it is a `Signature` subclass.

    Raises:
        SchemaError: Anything else, for instance a plain Pydantic model (the message says how
            to declare a signature).
    """
    if isinstance(signature, type) and issubclass(signature, Signature):
        if signature is Signature:
            raise SchemaError("ts.Signature itself declares no fields: pass a subclass")
        if signature.__pydantic_generic_metadata__["parameters"]:
            raise SchemaError(
                f"{signature.__name__} is generic: give its output type, "
                f"{signature.__name__}[list[Item]] for instance"
            )
        return signature
    if isinstance(signature, type) and issubclass(signature, BaseModel):
        raise SchemaError(
            f"{signature.__name__} is a pydantic BaseModel, not a ts.Signature: declare "
            f"`class {signature.__name__}(ts.Signature)` with ts.InputField()/ts.OutputField() "
            f"fields, or ask for it as the output: ts.Predict('question', "
            f"output={signature.__name__})"
        )
    raise SchemaError(
        f"expected a ts.Signature subclass or a string such as 'question -> answer', "
        f"not {signature!r}"
    )
