"""A union member written ``Annotated[Model, ...]`` is a model member: it carries `_type`.

Such a member (a description with ``Field``, a schema of its own with ``WithJsonSchema``) was
taken for a non-model member: it got no `_type` in the schema, a reply naming it by `_type` was
refused ('names no member of this union'), and a reply without `_type` that fitted it was refused
too ('no member of the union matched'), every attempt of a call failing the same way.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer, WithJsonSchema

import typedspy as ts
from typedspy.errors import SchemaError
from typedspy.parse import parse_outputs
from typedspy.schema import compile_schema
from typedspy.signature import to_jsonable
from typedspy.testing import StandIn


class Refund(BaseModel):
    order_id: str
    amount: int


class Escalate(BaseModel):
    reason: str


_REFUND_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"}},
    "required": ["order_id", "amount"],
    "additionalProperties": False,
}


class Described(ts.Signature):
    """Handle the ticket."""

    ticket: str = ts.InputField()
    action: Annotated[Refund, Field(description="money back")] | Escalate = ts.OutputField()


class OwnSchema(ts.Signature):
    """Handle the ticket."""

    ticket: str = ts.InputField()
    action: Annotated[Refund, WithJsonSchema(_REFUND_SCHEMA)] | Escalate = ts.OutputField()


def _member_types(sig: type[ts.Signature]) -> list[Any]:
    schema = compile_schema(sig, "openai-strict").schema
    text = json.dumps(schema)
    return [name for name in ("Refund", "Escalate") if f'"const": "{name}"' in text]


@pytest.mark.parametrize("sig", [Described, OwnSchema])
def test_every_member_is_tagged_in_the_schema(sig: type[ts.Signature]) -> None:
    assert _member_types(sig) == ["Refund", "Escalate"]


@pytest.mark.parametrize("sig", [Described, OwnSchema])
@pytest.mark.parametrize(
    "reply",
    [
        {"action": {"_type": "Refund", "order_id": "A1", "amount": 5}},
        {"action": {"order_id": "A1", "amount": 5}},
    ],
)
def test_a_reply_for_the_annotated_member_parses(
    sig: type[ts.Signature], reply: dict[str, Any]
) -> None:
    result = parse_outputs(sig, json.dumps(reply))
    assert result.ok, result.error
    assert result.value == {"action": Refund(order_id="A1", amount=5)}


def test_end_to_end_on_the_stand_in() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            server.enqueue(
                json.dumps({"action": {"_type": "Refund", "order_id": "A1", "amount": 5}})
            )
            scripted = ts.Predict(OwnSchema, lm=lm)(ticket="refund please")
            generated = ts.Predict(OwnSchema, lm=lm)(ticket="anything")  # schema-valid data
        finally:
            lm.close()
    assert scripted.action == Refund(order_id="A1", amount=5)
    assert isinstance(generated.action, (Refund, Escalate))
    assert server.schema_mismatches == []
    sent = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert '"const": "Refund"' in json.dumps(sent)


def test_an_input_value_of_the_annotated_member_carries_its_type() -> None:
    annotation = Described.output_fields["action"].annotation
    rendered = to_jsonable(Refund(order_id="A1", amount=5), annotation)
    assert rendered == {"_type": "Refund", "order_id": "A1", "amount": 5}


def test_a_member_schema_that_is_no_object_is_refused_naming_it() -> None:
    class Scalar(ts.Signature):
        ticket: str = ts.InputField()
        action: Annotated[Refund, WithJsonSchema({"type": "string"})] | Escalate = ts.OutputField()

    with pytest.raises(
        SchemaError, match=r"Refund is a union member whose own schema .* no JSON object"
    ) as info:
        compile_schema(Scalar, "openai-strict")
    assert info.value.path == ("Refund",)


def _refund_from_text(value: object) -> object:
    if isinstance(value, str):  # "A1:5"
        order_id, _, amount = value.partition(":")
        return {"order_id": order_id, "amount": int(amount or 0)}
    return value


# A model the model writes as text: its own schema is a string, its validator reads one.
RefundText = Annotated[
    Refund,
    BeforeValidator(_refund_from_text),
    PlainSerializer(lambda r: f"{r.order_id}:{r.amount}", return_type=str),
    WithJsonSchema({"type": "string", "pattern": "^[A-Z0-9]+:[0-9]+$"}),
]


class Written(ts.Signature):
    """Handle the ticket."""

    ticket: str = ts.InputField()
    action: RefundText | Escalate = ts.OutputField()


def test_a_member_written_as_text_by_its_own_validator_stays_a_plain_member() -> None:
    # It was refused when the schema was built ('no JSON object (string)'); main read it as the
    # text member it is declared to be, and so does this: only Escalate is tagged.
    assert _member_types(Written) == ["Escalate"]
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            server.enqueue(json.dumps({"action": "A1:5"}))
            server.enqueue(json.dumps({"action": {"_type": "Escalate", "reason": "angry"}}))
            first = ts.Predict(Written, lm=lm)(ticket="refund please")
            second = ts.Predict(Written, lm=lm)(ticket="help")
        finally:
            lm.close()
    assert first.action == Refund(order_id="A1", amount=5)
    assert second.action == Escalate(reason="angry")
    assert server.schema_mismatches == []
