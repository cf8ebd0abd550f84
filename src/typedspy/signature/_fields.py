"""`InputField` / `OutputField`: Pydantic fields that also carry their role in the signature."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field
from pydantic.fields import FieldInfo

from typedspy.errors import SchemaError

__all__ = ["FieldRole", "InputField", "OutputField", "copy_field", "role_of", "without_role"]


@dataclass(frozen=True)
class FieldRole:
    """Marks a signature field as an input or an output (kept in ``FieldInfo.metadata``)."""

    kind: Literal["input", "output"]


_INPUT = FieldRole("input")
_OUTPUT = FieldRole("output")
_FIELD_ARGUMENTS = frozenset(inspect.signature(Field).parameters) - {"default"}


def _field(role: FieldRole, default: Any, kwargs: dict[str, Any]) -> Any:
    """A `pydantic.Field` with ``role``; DSPy's ``desc=`` is ``description=`` (ADR-066).

    Raises:
        SchemaError: A keyword `pydantic.Field` does not take (Pydantic would keep it as
            schema extra with a warning Python hides, and drop its meaning).
    """
    name = f"{role.kind.capitalize()}Field"
    if "desc" in kwargs:
        if "description" in kwargs:
            raise SchemaError(f"{name}(desc=..., description=...): give one of them")
        kwargs["description"] = kwargs.pop("desc")
    unknown = sorted(set(kwargs) - _FIELD_ARGUMENTS)
    if unknown:
        raise SchemaError(
            f"{name}() does not take {', '.join(map(repr, unknown))}: it takes pydantic.Field's "
            "arguments (description= or DSPy's desc=, default=, ge=, max_length=, pattern=, "
            "...)"
        )
    info: FieldInfo = Field(default, **kwargs)
    info.metadata.append(role)
    return info


def InputField(default: Any = ..., **kwargs: Any) -> Any:
    """Declare an input of a signature.

    Accepts every `pydantic.Field` argument (``description``, constraints such as ``ge`` or
    ``max_length``, ``default``/``default_factory``), and DSPy's ``desc=`` for ``description=``.
    The description is shown to the model.

    Example:
        ```python
        class Answer(ts.Signature):
            question: str = ts.InputField(description="what the user asked")
        ```

    Raises:
        SchemaError: A keyword `pydantic.Field` does not take.
    """
    return _field(_INPUT, default, kwargs)


def OutputField(default: Any = ..., *, init: Literal[False] = False, **kwargs: Any) -> Any:
    """Declare an output of a signature.

    Accepts every `pydantic.Field` argument. Constraints are enforced by local validation and,
    where the target allows, sent in the JSON schema; the description is shown to the model.

    Args:
        default: A default value (rarely useful: the model is asked for every output).
        init: Always False: it tells type checkers (through ``dataclass_transform``, ADR-015)
            that an output is not a call keyword, so ``predict(action=...)`` is a type error.
        **kwargs: `pydantic.Field` arguments (``description`` or DSPy's ``desc``, ``ge``,
            ``max_length``, ...).

    Raises:
        SchemaError: A keyword `pydantic.Field` does not take.
    """
    del init  # static only: outputs are never constructor (call) keywords
    return _field(_OUTPUT, default, kwargs)


def role_of(info: FieldInfo) -> set[str]:
    """The roles a field was marked with: ``{"input"}``, ``{"output"}``, both, or none."""
    return {m.kind for m in info.metadata if isinstance(m, FieldRole)}


def copy_field(annotation: Any, info: FieldInfo, *changes: FieldInfo) -> FieldInfo:
    """``info`` as a field of type ``annotation``, with the keywords set in ``changes`` on top.

    Pydantic's public merge of ``Annotated`` metadata (``FieldInfo.merge_field_infos`` is
    deprecated). The copy is complete: given as a default, its attributes win over those of an
    ``Annotated`` type, so ``annotation`` is the one the field will have (its ``Field`` keywords
    are folded in).
    """
    form: Any = Annotated[(annotation, info, *changes)]  # a type form, not a `type`
    return FieldInfo.from_annotation(form)


def without_role(annotation: Any, info: FieldInfo) -> FieldInfo:
    """``info`` as a field of type ``annotation`` without its role marker, for plain models."""
    merged = copy_field(annotation, info)
    merged.metadata = [m for m in merged.metadata if not isinstance(m, FieldRole)]
    return merged
