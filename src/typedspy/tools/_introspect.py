"""A `Signature` read off a plain function: type hints and its Google-style docstring.

Parameters become input fields (annotation, default, and the description from ``Args:``). The
return annotation becomes the outputs: the fields of a Pydantic model when it names one (so the
MCP ``outputSchema`` is that model's own shape), otherwise a single output ``result``.
"""

from __future__ import annotations

import functools
import inspect
import re
import typing
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticSerializationError, PydanticUndefined, to_jsonable_python

from typedspy.errors import SchemaError, ToolError
from typedspy.signature import (
    InputField,
    OutputField,
    Signature,
    build_signature,
    without_role,
)

__all__ = [
    "RESULT_FIELD",
    "Docstring",
    "FunctionSignature",
    "parse_docstring",
    "signature_from_function",
    "unwrapped",
]

RESULT_FIELD = "result"
"""The output name for a function whose return annotation is not a Pydantic model."""

_SECTION = re.compile(
    r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|Todo|References):\s*$"
)
_ARG_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
# "list[Document]: the hits" -> "the hits"; prose such as "The hits: sorted" is left alone.
_RETURN_TYPE = re.compile(
    r"^[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*\|\s*[A-Za-z_][\w.]*(?:\[[^\]]*\])?)*:\s+"
)
_ARG_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}


@dataclass(frozen=True)
class Docstring:
    """The parts of a Google-style docstring a tool uses.

    Attributes:
        description: The text before the first section, paragraphs kept.
        params: Parameter name to its description, from ``Args:``.
        returns: The ``Returns:`` text without a leading type, or None.
    """

    description: str
    params: dict[str, str]
    returns: str | None


@dataclass(frozen=True)
class FunctionSignature:
    """What `signature_from_function` builds.

    Attributes:
        signature: The generated signature class.
        description: The docstring's description ("" when there is none).
        result_model: The return annotation when it is a Pydantic model whose fields are the
            outputs; an instance of it is read field by field.
    """

    signature: type[Signature]
    description: str
    result_model: type[BaseModel] | None


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style docstring into description, ``Args:`` entries and ``Returns:``.

    Args:
        doc: The raw docstring (indentation is cleaned here).
    """
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in lines:
        match = _SECTION.match(line)
        if match and not line.startswith((" ", "\t")):
            current = match.group(1)
            sections.setdefault(current, [])
        else:
            sections[current].append(line)
    params: dict[str, str] = {}
    for name in _ARG_SECTIONS & sections.keys():
        params.update(_entries(sections[name]))
    returns_lines = sections.get("Returns") or sections.get("Return") or []
    returns = " ".join(part.strip() for part in returns_lines if part.strip()) or None
    if returns is not None:
        returns = _RETURN_TYPE.sub("", returns, count=1) or None
    return Docstring("\n".join(sections[""]).strip(), params, returns)


def _entries(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    indent: int | None = None
    name: str | None = None
    for line in lines:
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent is None:
            indent = depth
        match = _ARG_ENTRY.match(line.strip())
        if depth <= indent and match:
            name = entry = match.group(1)
            out[entry] = match.group(2).strip()
        elif name is not None:  # a continuation line of the entry above
            out[name] = f"{out[name]} {line.strip()}".strip()
    return out


def unwrapped(fn: Callable[..., Any]) -> Any:
    """The function under any `functools.partial` layers (partial's own names describe partial)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return fn


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = unwrapped(fn)
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__  # a callable object: the hints are on its __call__
    try:
        # Names a nested function uses in its body resolve too (its closure variables).
        localns = inspect.getclosurevars(target).nonlocals if inspect.isfunction(target) else None
    except (TypeError, ValueError):
        localns = None
    try:
        return typing.get_type_hints(target, localns=localns, include_extras=True)
    except Exception as exc:  # NameError for an unresolvable forward reference, and similar
        raise ToolError(f"cannot read the type hints of {fn!r}: {exc}") from exc


def _class_name(name: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", name) if w]
    return "".join(w[:1].upper() + w[1:] for w in words) or "Tool"


def _input(
    param: inspect.Parameter, annotation: Any, description: str | None
) -> tuple[Any, FieldInfo]:
    default = param.default
    if isinstance(default, FieldInfo):  # `limit: int = Field(5, ge=1)` keeps its constraints
        if default.description is None and description:
            return Annotated[annotation, Field(description=description)], default
        return annotation, default
    kwargs: dict[str, Any] = {"description": description} if description else {}
    field: FieldInfo = InputField(... if default is inspect.Parameter.empty else default, **kwargs)
    return annotation, field


def _inputs(
    fn: Callable[..., Any], hints: dict[str, Any], docs: Docstring
) -> dict[str, tuple[Any, FieldInfo]]:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as exc:
        raise ToolError(f"cannot read the parameters of {fn!r}: {exc}") from exc
    inputs: dict[str, tuple[Any, FieldInfo]] = {}
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolError(
                f"{getattr(fn, '__name__', fn)!r}: parameter {param.name!r} cannot be passed by "
                "keyword; tools are called with named arguments only"
            )
        if param.name.startswith("_"):
            raise ToolError(f"parameter {param.name!r}: tool parameter names cannot start with '_'")
        annotation = hints.get(param.name, Any)
        annotation, field = _input(param, annotation, docs.params.get(param.name))
        if field.default is not PydanticUndefined:
            try:  # as the schema shows it: Pydantic warns and leaves out what fails here
                to_jsonable_python(field.default)
            except (PydanticSerializationError, ValueError):  # bytes not UTF-8: a ValueError
                raise ToolError(
                    f"{getattr(fn, '__name__', fn)!r}: parameter {param.name!r}: its default "
                    f"{field.default!r} is not a JSON value, so the model could not be shown "
                    "it; give a JSON default (None, a number, a string, a list, ...)"
                ) from None
        inputs[param.name] = (annotation, field)
    return inputs


def _outputs(
    hints: dict[str, Any], docs: Docstring, inputs: Collection[str]
) -> tuple[dict[str, tuple[Any, FieldInfo]], type[BaseModel] | None]:
    returned = hints.get("return", Any)  # get_type_hints gives `-> None` as NoneType
    is_model = isinstance(returned, type) and issubclass(returned, BaseModel)
    if is_model and not issubclass(returned, Signature):
        fields = {
            name: (info.annotation, without_role(info.annotation, info))
            for name, info in returned.model_fields.items()
        }
        # A parameter named like a field of the returned model (`get_weather(city) -> Weather`
        # with `Weather.city`): one class cannot hold both, so the model is the one output
        # `result` instead of its fields (issue 9).
        if fields and not any(field in inputs for field in fields):
            return fields, returned
    kwargs: dict[str, Any] = {"description": docs.returns} if docs.returns else {}
    result: FieldInfo = OutputField(**kwargs)
    return {RESULT_FIELD: (returned, result)}, None


def signature_from_function(fn: Callable[..., Any], *, name: str) -> FunctionSignature:
    """Build the signature of a plain (sync or async) function.

    Args:
        fn: The function; its parameters must be passable by keyword.
        name: The tool name; the signature class is named after it in CamelCase.

    A parameter named like a field of the returned model makes the model the single output
    ``result``: the parameter and the field then live apart.

    Raises:
        ToolError: ``*args``/``**kwargs``/positional-only parameters, a parameter starting with
            ``_``, unreadable hints, or types a signature cannot hold (the `SchemaError` is the
            ``__cause__``).
        SchemaError: A parameter named ``result`` when the return value is that output.
    """
    hints = _hints(fn)
    docs = parse_docstring(inspect.getdoc(unwrapped(fn)))
    inputs = _inputs(fn, hints, docs)
    outputs, result_model = _outputs(hints, docs, inputs.keys())
    if RESULT_FIELD in inputs and RESULT_FIELD in outputs:
        raise SchemaError(
            f"{name}: parameter {RESULT_FIELD!r} has the name of the tool's output (the return "
            f"value, when it is not a Pydantic model with fields of its own); rename the "
            "parameter or return a model",
            path=(RESULT_FIELD,),
        )
    try:
        signature = build_signature(
            _class_name(name), inputs, outputs, docs.description or None, replied=False
        )
    except (SchemaError, TypeError, ValueError) as exc:
        raise ToolError(f"cannot build a signature for {name!r}: {exc}", tool=name) from exc
    return FunctionSignature(signature, docs.description, result_model)
