"""A tool's values at its two edges: the model's arguments in, the implementation's result out.

Arguments are decoded leniently and validated against the signature's input model before the
implementation runs; results are read in any of the shapes a tool may return and validated
against the output model. Both report problems as `FieldError`s naming the field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from typedspy._types import FieldError
from typedspy.errors import ToolArgumentsError, ToolError
from typedspy.parse import LenientDecodeError, decode_lenient, field_errors
from typedspy.prediction import Prediction
from typedspy.signature import Signature, is_union, unsendable

__all__ = ["check_arguments", "check_result"]

_SHOWN_ERRORS = 5


def check_arguments(
    tool: str, signature: type[Signature], arguments: str | Mapping[str, Any]
) -> dict[str, Any]:
    """Decode and validate a call's arguments (see `Tool.parse_arguments`).

    Args:
        tool: The tool's name, for messages.
        signature: Its signature; the input fields are the parameters.
        arguments: The model's JSON text, or a mapping.

    Returns:
        Every parameter by name, defaults filled in, as validated Python values.

    Raises:
        ToolArgumentsError: Not a JSON object, unknown names, or failed validation.
    """
    raw = _decode(tool, arguments)
    fields = signature.input_fields
    errors = [
        FieldError((key,), f"unexpected argument (parameters: {', '.join(fields) or 'none'})")
        for key in raw
        if key not in fields
    ]
    given = {
        key: value
        for key, value in raw.items()
        if key in fields and not (value is None and _null_means_default(fields[key]))
    }
    try:
        model = signature.input_model.model_validate(given)
    except ValidationError as exc:
        raise _arguments_error(tool, [*errors, *field_errors(exc)]) from None
    if errors:
        raise _arguments_error(tool, errors)
    return {name: getattr(model, name) for name in fields}


def check_result(
    tool: str,
    signature: type[Signature],
    result: object,
    result_models: tuple[type[BaseModel], ...],
) -> dict[str, Any]:
    """Read an implementation's result as the signature's outputs and validate them.

    Accepted: a `Prediction`; an instance of one of ``result_models`` (read field by field); a
    mapping of outputs (for a single output, one that holds the output's name); and, for a
    single output, the bare value.

    Args:
        tool: The tool's name, for messages.
        signature: Its signature; the output fields are the result.
        result: What the implementation returned.
        result_models: Model classes whose instances hold the outputs as fields.

    Returns:
        The outputs by name, as validated Python values.

    Raises:
        ToolError: The result has no usable shape, fails validation, or holds a value JSON
            cannot write for the model (``errors`` set).
    """
    fields = signature.output_fields
    data: Mapping[str, Any]
    if isinstance(result, Prediction):
        data = dict(result)
    elif isinstance(result, result_models):
        data = {name: getattr(result, name) for name in fields if hasattr(result, name)}
    # A single output's own name among the keys means "these are the outputs"; otherwise a
    # mapping is that output's bare value (a dict-typed output).
    elif isinstance(result, Mapping) and (len(fields) != 1 or next(iter(fields)) in result):
        data = result
    elif len(fields) == 1:
        data = {next(iter(fields)): result}
    else:
        raise ToolError(
            f"{tool} returned {type(result).__name__}; return a Prediction, a "
            f"{signature.output_model.__name__}, or a dict with {', '.join(fields)}",
            tool=tool,
        )
    try:
        model = signature.output_model.model_validate(data)
    except ValidationError as exc:
        errors = field_errors(exc)
        shown = "; ".join(str(e) for e in errors[:_SHOWN_ERRORS])
        raise ToolError(
            f"{tool}: the result does not match the outputs of {signature.__name__}: {shown}",
            tool=tool,
            errors=errors,
        ) from exc
    outputs = {name: getattr(model, name) for name in fields}
    for name, value in outputs.items():
        if callable(value):  # an agent's module callback (`ts.react.module_callback`): it runs it
            continue
        if problem := unsendable(value, fields[name].annotation):
            raise ToolError(
                f"{tool}: output {name!r} cannot be sent to the model: {problem}",
                tool=tool,
                errors=[FieldError((name,), problem)],
            )
    return outputs


def _decode(tool: str, arguments: object) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        value: object = dict(arguments)
    elif isinstance(arguments, str):
        value = _decode_text(tool, arguments)
    else:
        value = arguments
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        message = f"arguments must be a JSON object, got {kind}"
        raise _arguments_error(tool, [FieldError((), message)])
    return value


def _decode_text(tool: str, text: str) -> object:
    if not text.strip():
        return {}  # some models send "" for a call without arguments
    try:
        value = decode_lenient(text)
        if isinstance(value, str) and value.lstrip().startswith("{"):
            value = decode_lenient(value)  # a JSON object sent as a JSON string
    except LenientDecodeError as exc:
        raise _arguments_error(tool, [FieldError((), f"not valid JSON: {exc}")]) from None
    return value


def _arguments_error(tool: str, errors: list[FieldError]) -> ToolArgumentsError:
    shown = "; ".join(str(e) for e in errors[:_SHOWN_ERRORS])
    more = f" (and {len(errors) - _SHOWN_ERRORS} more)" if len(errors) > _SHOWN_ERRORS else ""
    return ToolArgumentsError(f"{tool}: invalid arguments: {shown}{more}", tool=tool, errors=errors)


def _null_means_default(info: FieldInfo) -> bool:
    # Models often send null for "not given"; a default that rejects None is what they meant.
    return not info.is_required() and not _accepts_none(info.annotation)


def _accepts_none(annotation: Any) -> bool:
    if annotation is None or annotation is type(None) or annotation is Any:
        return True
    if get_origin(annotation) is Annotated:
        return _accepts_none(get_args(annotation)[0])
    if is_union(annotation):
        return any(_accepts_none(arg) for arg in get_args(annotation))
    return False
