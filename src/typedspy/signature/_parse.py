"""``make_signature("question, context: list[str] -> answer: int")``: signatures from strings."""

from __future__ import annotations

import ast
import builtins
import datetime
import decimal
import enum
import typing
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from typedspy.errors import SchemaError
from typedspy.signature._fields import InputField, OutputField
from typedspy.signature._signature import Signature, build_signature

__all__ = ["make_signature"]

_TYPING_NAMES = (
    "Any Annotated Dict FrozenSet List Literal Mapping Optional Sequence Set Tuple Union".split()
)
_BUILTIN_NAMES = "str int float bool bytes list dict tuple set frozenset".split()


def _namespace(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    ns: dict[str, Any] = {name: getattr(builtins, name) for name in _BUILTIN_NAMES}
    ns.update({name: getattr(typing, name) for name in _TYPING_NAMES})
    ns.update(
        {
            "None": None,
            "datetime": datetime.datetime,
            "date": datetime.date,
            "time": datetime.time,
            "timedelta": datetime.timedelta,
            "Decimal": decimal.Decimal,
            "UUID": uuid.UUID,
            "Enum": enum.Enum,
            "typing": typing,
        }
    )
    if extra:
        ns.update(extra)
    return ns


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at ``sep`` outside brackets and quoted strings, empty parts dropped."""
    return [p.strip() for p in _split(text, sep) if p.strip()]


def _split(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside brackets and quoted strings (``Literal['a,b']``)."""
    parts: list[str] = []
    start = depth = i = 0
    quote = ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1  # the escaped character is part of the string
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _evaluate(node: ast.AST, ns: dict[str, Any], field: str, literal: bool = False) -> Any:
    """Evaluate a type expression, allowing only names, subscripts, `|`, tuples and literals.

    Constants other than ``None`` and ``...`` are only values inside ``Literal[...]``.
    """
    if isinstance(node, ast.Name):
        if node.id not in ns:
            raise SchemaError(
                f"unknown type name {node.id!r} for field {field!r}; builtins and typing names "
                f"are known, pass others with types={{{node.id!r}: ...}}",
                path=(field,),
            )
        return ns[node.id]
    if isinstance(node, ast.Constant):
        if literal or node.value is None or node.value is Ellipsis:
            return node.value
        raise SchemaError(
            f"{node.value!r} is not a type (field {field!r}); write Literal[{node.value!r}] "
            f"for a fixed value",
            path=(field,),
        )
    if literal and isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        number = _evaluate(node.operand, ns, field, literal)
        if type(number) in (int, float):  # Literal[-1]: a negative number, not an expression
            return -number if isinstance(node.op, ast.USub) else number
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
        return getattr(_evaluate(node.value, ns, field), node.attr)
    if isinstance(node, ast.Subscript):
        base = _evaluate(node.value, ns, field)
        index = _evaluate(node.slice, ns, field, literal=base is typing.Literal)
        return base[index]
    if isinstance(node, ast.Tuple):
        return tuple(_evaluate(elt, ns, field, literal) for elt in node.elts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _evaluate(node.left, ns, field), _evaluate(node.right, ns, field)
        return typing.Union[left, right]  # noqa: UP007 - operands may be typing forms
    raise SchemaError(f"unsupported type expression for field {field!r}", path=(field,))


def _parse_fields(part: str, ns: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for item in _split_top_level(part):
        name, _, type_text = item.partition(":")
        name = name.strip()
        if not name.isidentifier():
            raise SchemaError(f"{name!r} is not a valid field name{_hint(name)}", path=(name,))
        if name in fields:
            raise SchemaError(f"field {name!r} is declared twice", path=(name,))
        if not type_text.strip():
            fields[name] = str
            continue
        try:
            tree = ast.parse(type_text.strip(), mode="eval")
        except SyntaxError as exc:
            raise SchemaError(f"cannot read the type of field {name!r}: {exc.msg}") from exc
        try:
            fields[name] = _evaluate(tree.body, ns, name)
        except SchemaError:
            raise
        except Exception as exc:
            raise SchemaError(f"invalid type for field {name!r}: {exc}", path=(name,)) from exc
    return fields


def _hint(name: str) -> str:
    """For a type written where a name goes (``"text -> A | B"``): how to say it."""
    if not any(mark in name for mark in "|[]."):
        return ""
    return (
        f"; name the output and give its type ('... -> answer: {name}'), or ask for a "
        f"root-level output: ts.Predict('text', output={name})"
    )


def make_signature(
    spec: str,
    instructions: str | None = None,
    *,
    name: str | None = None,
    types: Mapping[str, Any] | None = None,
) -> type[Signature]:
    """Build a signature class from ``"inputs -> outputs"``.

    Fields are comma separated, each ``name`` (a ``str``) or ``name: type``. Types are read from
    builtins, `typing` and ``types``; nothing is passed to `eval`.

    Example:
        ```python
        QA = ts.make_signature("question, context: list[str] -> answer: int")
        ```

    Args:
        spec: The shorthand.
        instructions: The instruction (docstring); a default is derived from the fields if None.
        name: The class name, which also names the response schema; by default derived from
            the fields (``"question, context -> answer"`` is ``QuestionContextToAnswer``).
        types: Extra names usable in type expressions (your models, enums).

    Raises:
        SchemaError: For a malformed shorthand or an unknown type name.
    """
    sides = _split(spec, "->")  # an arrow inside a quoted Literal is text
    if len(sides) != 2:
        raise SchemaError(f"a signature string needs exactly one '->': {spec!r}")
    left, right = sides
    ns = _namespace(types)
    inputs = _parse_fields(left, ns)
    outputs = _parse_fields(right, ns)
    overlap = inputs.keys() & outputs.keys()
    if overlap:
        raise SchemaError(f"field {sorted(overlap)[0]!r} is both an input and an output")
    # A class Pydantic refuses is a SchemaError naming the field already (the metaclass says it).
    return build_signature(
        name or _derived_name(inputs, outputs),
        {n: (tp, InputField()) for n, tp in inputs.items()},
        {n: (tp, OutputField()) for n, tp in outputs.items()},
        instructions,
    )


def _derived_name(inputs: Mapping[str, Any], outputs: Mapping[str, Any]) -> str:
    """``QuestionContextToAnswer``: distinct per field list, a valid schema name (<= 64)."""

    def camel(names: Iterable[str]) -> str:
        return "".join(part.capitalize() for n in names for part in n.split("_") if part)

    name = f"{camel(inputs)}To{camel(outputs)}" if inputs else camel(outputs)
    return name[:64] or "StringSignature"
