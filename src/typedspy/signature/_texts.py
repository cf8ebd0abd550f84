"""A signature's texts (instruction, field descriptions, union members' docstrings) as data.

`texts_of` reads them, `with_texts` makes a new signature that says them (ADR-081). The class a
user wrote is never changed: field descriptions are set on a derived class, and a union
member's docstring is replaced for the derived signature only (`set_member_docs`), so its
predictions are still instances of the user's own classes.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic.fields import FieldInfo

from typedspy._text import encodable
from typedspy._types import FieldError
from typedspy.errors import ConfigurationError
from typedspy.signature._declared import walk_types
from typedspy.signature._dispatch import is_union, qualified_name, union_models
from typedspy.signature._fields import copy_field
from typedspy.signature._signature import Signature, set_member_docs

__all__ = ["FieldTexts", "SignatureTexts", "texts_errors", "texts_of", "with_texts"]


class FieldTexts(BaseModel):
    """A signature's field descriptions and union members' docstrings.

    Attributes:
        inputs: Input field name to its description ("" for none).
        outputs: Output field name to its description.
        members: A union member's (qualified) class name to its docstring, for every model
            that is a member of a union anywhere in the outputs.
    """

    model_config = ConfigDict(strict=True, extra="forbid")

    inputs: dict[str, str] = Field(default_factory=dict)
    outputs: dict[str, str] = Field(default_factory=dict)
    members: dict[str, str] = Field(default_factory=dict)

    @field_validator("inputs", "outputs", "members")
    @classmethod
    def _encodable(cls, texts: dict[str, str]) -> dict[str, str]:
        # A model's rewrite may hold a lone surrogate (half an emoji): U+FFFD, as on the wire.
        return {name: encodable(text) for name, text in texts.items()}


class SignatureTexts(FieldTexts):
    """Everything a signature says in words: its instruction and its `FieldTexts`."""

    instructions: str

    @field_validator("instructions")
    @classmethod
    def _encodable_instructions(cls, text: str) -> str:
        return encodable(text)


def union_members(sig: type[Signature]) -> dict[str, type[BaseModel]]:
    """The models that are union members anywhere in ``sig``'s outputs, by name.

    The name is the class's qualified name, or its module and qualified name where two
    members share one.
    """
    found: list[type[BaseModel]] = []
    seen: set[type[BaseModel]] = set()
    for info in sig.output_fields.values():
        for part, _ in walk_types(info.annotation, (), seen):
            if is_union(part):
                found += [m for m in union_models(part) if m not in found]
    short = [qualified_name(m) for m in found]
    return {
        (s if short.count(s) == 1 else f"{m.__module__}.{s}"): m
        for m, s in zip(found, short, strict=True)
    }


def _doc(model: type[BaseModel], sig: type[Signature]) -> str:
    doc = sig.__typedspy_member_docs__.get(model, model.__doc__)
    return inspect.cleandoc(doc) if doc else ""


def texts_of(sig: type[Signature]) -> SignatureTexts:
    """What ``sig`` says: its instruction, field descriptions and union members' docstrings."""
    return SignatureTexts(
        instructions=sig.instructions,
        inputs={n: f.description or "" for n, f in sig.input_fields.items()},
        outputs={n: f.description or "" for n, f in sig.output_fields.items()},
        members={name: _doc(m, sig) for name, m in union_members(sig).items()},
    )


def texts_errors(sig: type[Signature], texts: FieldTexts) -> list[FieldError]:
    """Names in ``texts`` that ``sig`` has no field or union member for (empty: all fit)."""
    known: dict[str, Mapping[str, object]] = {
        "inputs": sig.input_fields,
        "outputs": sig.output_fields,
        "members": union_members(sig),
    }
    return [
        FieldError((group, name), f"{sig.__name__} has no {group[:-1]} {name!r}")
        for group, names in known.items()
        for name in getattr(texts, group)
        if name not in names
    ]


def with_texts(sig: type[Signature], texts: FieldTexts) -> type[Signature]:
    """A new signature like ``sig`` that says ``texts`` (``sig`` itself is not changed).

    Names ``texts`` leaves out keep their text; a `SignatureTexts` sets the instruction too.
    An empty description removes the field's description.

    Raises:
        ConfigurationError: A name that is no field (or union member) of ``sig``.
    """
    errors = texts_errors(sig, texts)
    if errors:
        raise ConfigurationError("; ".join(str(e) for e in errors))
    fields = {**sig.input_fields, **sig.output_fields}
    described = {**texts.inputs, **texts.outputs}
    definitions: dict[str, Any] = {
        name: (fields[name].annotation, _described(fields[name], text))
        for name, text in described.items()
        if (fields[name].description or "") != text
    }
    instructions = texts.instructions if isinstance(texts, SignatureTexts) else sig.instructions
    derived: type[Signature] = create_model(
        sig.__name__,
        __base__=sig,
        __doc__=instructions,
        __module__=sig.__module__,
        **definitions,
    )
    derived.__qualname__ = sig.__qualname__
    derived.__typedspy_worded__ = True
    members = union_members(sig)
    docs = {
        members[name]: doc for name, doc in texts.members.items() if _doc(members[name], sig) != doc
    }
    if docs:
        set_member_docs(derived, docs)
    return derived


def _described(info: FieldInfo, text: str) -> FieldInfo:
    # Pydantic's own merge: a copy whose description attribute alone is set is read back
    # without it by Pydantic 2.12 (it rebuilds fields from the attributes it saw set).
    return copy_field(info.annotation, info, Field(description=text or None))
