"""Output types are read from the JSON form their schema asks for (stand-in and `parse_outputs`).

Each was refused on every reply: ``Literal[Color.RED]`` (its schema asks for ``"red"``, which
Pydantic reads only as the member itself), a ``Counter``, ``OrderedDict`` or ``defaultdict``
(the strict schema asks for key/value pairs, which only a ``dict`` was read from), ``tuple[()]``
(the strict schema was refused as "a list of Any"). A union member's own before validator saw
the ``_type`` key typedspy adds. ``make_signature`` refused ``Literal[-1]`` and split a quoted
``Literal['a,b']`` at its comma.
"""

from __future__ import annotations

import collections
import enum
import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, BeforeValidator, model_validator

import typedspy as ts
from typedspy.parse import parse_outputs
from typedspy.testing import StandIn


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.Enum):
    ONE = 1


class Paint(BaseModel):
    colors: list[Literal[Color.RED, Level.ONE]]


def _signature(annotation: Any) -> type[ts.Signature]:
    namespace = {
        "__doc__": "Answer.",
        "__annotations__": {"q": str, "a": annotation},
        "q": ts.InputField(),
        "a": ts.OutputField(),
    }
    return type("Reply", (ts.Signature,), namespace)


def _on_the_stand_in(sig: type[ts.Signature], *replies: str) -> list[Any]:
    """What `Predict` returns for each scripted reply, then for one the stand-in makes up."""
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            for reply in replies:
                server.enqueue(reply)
            out = [ts.Predict(sig, lm=lm)(q="x").a for _ in range(len(replies) + 1)]
        finally:
            lm.close()
    assert server.schema_mismatches == []
    return out


READ: list[tuple[Any, Any, Any]] = [
    (Literal[Color.RED], "red", Color.RED),
    (Literal[Color.RED, Color.BLUE] | None, "blue", Color.BLUE),
    (Literal[Level.ONE], 1, Level.ONE),
    (Paint, {"colors": ["red", 1]}, Paint(colors=[Color.RED, Level.ONE])),
    (collections.Counter[str], [{"key": "x", "value": 2}], collections.Counter(x=2)),
    (collections.OrderedDict[str, int], [{"key": "x", "value": 2}], collections.OrderedDict(x=2)),
    (
        collections.defaultdict[str, int],
        [{"key": "x", "value": 2}],
        collections.defaultdict(int, x=2),
    ),
    (tuple[()], [], ()),
]


@pytest.mark.parametrize(("annotation", "reply", "expected"), READ)
def test_a_reply_in_the_schema_form_is_read(annotation: Any, reply: Any, expected: Any) -> None:
    sig = _signature(annotation)
    result = parse_outputs(sig, json.dumps({"a": reply}))
    assert result.ok, result.errors
    assert result.value == {"a": expected}
    assert result.value is not None
    assert type(result.value["a"]) is type(expected)
    scripted, generated = _on_the_stand_in(sig, json.dumps({"a": reply}))
    assert scripted == expected
    assert generated is None or type(generated) is type(expected)


def test_a_mapping_written_as_an_object_is_read_too() -> None:
    # A profile without strict schemas asks for the object itself.
    result = parse_outputs(_signature(collections.Counter[str]), '{"a": {"x": 2}}')
    assert result.value == {"a": collections.Counter(x=2)}


@pytest.mark.parametrize(
    ("annotation", "reply", "message"),
    [
        # The message names the values the model writes (it reads it as feedback), not members.
        (Literal[Color.RED], "1", "Input should be 'red'"),
        (Literal[Level.ONE], "1", "Input should be 1"),  # text is not the number
        (Literal[Level.ONE], True, "Input should be 1"),
        (Literal[Color.RED], "RED", "Input should be 'red'"),
        (Literal[Color.RED, "x", 2], "blue", "Input should be 'red' or 'x' or 2"),
        (tuple[()], [None], "at most 0 items"),
    ],
)
def test_nothing_else_is_converted(annotation: Any, reply: Any, message: str) -> None:
    result = parse_outputs(_signature(annotation), json.dumps({"a": reply}))
    assert not result.ok
    assert message in str(result.errors[0])


class Refund(BaseModel):
    order_id: str


class Escalate(BaseModel):
    reason: str


class Checked(BaseModel):
    order_id: str

    @model_validator(mode="before")
    @classmethod
    def keys_declared(cls, data: Any) -> Any:
        assert set(data) <= {"order_id"}, f"undeclared keys in {data}"
        return data


def _declared_keys_only(data: Any) -> Any:
    assert set(data) <= {"order_id"}, f"undeclared keys in {data}"
    return data


@pytest.mark.parametrize(
    "member", [Annotated[Refund, BeforeValidator(_declared_keys_only)], Checked]
)
def test_a_member_s_own_validator_never_sees_the_type_key(member: Any) -> None:
    sig = _signature(member | Escalate)
    reply = json.dumps({"a": {"_type": member_name(member), "order_id": "A1"}})
    result = parse_outputs(sig, reply)
    assert result.ok, result.errors
    assert result.value == {"a": member_model(member)(order_id="A1")}
    scripted, generated = _on_the_stand_in(sig, reply)
    assert scripted.order_id == "A1"
    assert isinstance(generated, (Refund, Checked, Escalate))


def member_model(member: Any) -> type[BaseModel]:
    return getattr(member, "__origin__", member)


def member_name(member: Any) -> str:
    return member_model(member).__name__


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        ("Literal[-1, 0, 1]", Literal[-1, 0, 1]),
        ("Literal[-1.5, +2.0]", Literal[-1.5, 2.0]),
        ("Literal['a,b', 'c]d', 'x->y', 'it\\'s']", Literal["a,b", "c]d", "x->y", "it's"]),
        ("list[Literal[-1, 'x,y']]", list[Literal[-1, "x,y"]]),
    ],
)
def test_string_form_literals_read_signs_and_quoted_separators(
    type_text: str, expected: Any
) -> None:
    sig = ts.make_signature(f"q -> a: {type_text}, b: int")
    assert list(sig.output_fields) == ["a", "b"]
    assert sig.output_fields["a"].annotation == expected


def test_string_form_negative_literal_reads_a_negative_reply() -> None:
    sig = ts.make_signature("q -> a: Literal[-1, 0, 1]")
    assert parse_outputs(sig, '{"a": -1}').value == {"a": -1}
    assert _on_the_stand_in(sig, '{"a": -1}')[0] == -1


@pytest.mark.parametrize("type_text", ["Literal[-True]", "Literal[-'a']", "Literal[1 - 2]"])
def test_string_form_signs_go_only_on_numbers(type_text: str) -> None:
    with pytest.raises(ts.SchemaError, match="unsupported type expression"):
        ts.make_signature(f"q -> a: {type_text}")
