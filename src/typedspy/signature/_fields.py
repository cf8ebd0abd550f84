"""`InputField` / `OutputField`: Pydantic fields that also carry their role in the signature."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field
from pydantic.fields import FieldInfo

__all__ = ["FieldRole", "InputField", "OutputField", "role_of", "without_role"]


@dataclass(frozen=True)
class FieldRole:
    """Marks a signature field as an input or an output (kept in ``FieldInfo.metadata``)."""

    kind: Literal["input", "output"]


_INPUT = FieldRole("input")
_OUTPUT = FieldRole("output")


def InputField(default: Any = ..., **kwargs: Any) -> Any:
    """Declare an input of a signature.

    Accepts every `pydantic.Field` argument (``description``, constraints such as ``ge`` or
    ``max_length``, ``default``/``default_factory``). The description is shown to the model.

    Example:
        ```python
        class Answer(ts.Signature):
            question: str = ts.InputField(description="what the user asked")
        ```
    """
    info: FieldInfo = Field(default, **kwargs)
    info.metadata.append(_INPUT)
    return info


def OutputField(default: Any = ..., *, init: Literal[False] = False, **kwargs: Any) -> Any:
    """Declare an output of a signature.

    Accepts every `pydantic.Field` argument. Constraints are enforced by local validation and,
    where the target allows, sent in the JSON schema; the description is shown to the model.

    Args:
        default: A default value (rarely useful: the model is asked for every output).
        init: Always False: it tells type checkers (through ``dataclass_transform``, ADR-015)
            that an output is not a call keyword, so ``predict(action=...)`` is a type error.
        **kwargs: `pydantic.Field` arguments (``description``, ``ge``, ``max_length``, ...).
    """
    del init  # static only: outputs are never constructor (call) keywords
    info: FieldInfo = Field(default, **kwargs)
    info.metadata.append(_OUTPUT)
    return info


def role_of(info: FieldInfo) -> set[str]:
    """The roles a field was marked with: ``{"input"}``, ``{"output"}``, both, or none."""
    return {m.kind for m in info.metadata if isinstance(m, FieldRole)}


def without_role(info: FieldInfo) -> FieldInfo:
    """A copy of ``info`` without its role marker, for building plain Pydantic models."""
    merged = FieldInfo.merge_field_infos(info)
    merged.metadata = [m for m in info.metadata if not isinstance(m, FieldRole)]
    return merged
