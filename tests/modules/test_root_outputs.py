"""Root-level output types: ``output=`` and ``ts.Returns[T]`` (issue 9, ADR-045).

A root-level type (``list[Item]``, ``A | B``, a plain model) travels wrapped in an object, as
OpenAI strict requires: the property ``output`` of the response object. The value comes back
typed as ``pred.outputs.output``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
import respx
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn, chat_completion
from wire import BASE_URL, make_lm, sent


class Item(BaseModel):
    name: str
    quantity: int


class Refund(BaseModel):
    amount: float


class Escalate(BaseModel):
    team: Literal["billing", "legal"]


class Triage(ts.Returns[Refund | Escalate]):
    """Decide what to do with the customer's message."""

    message: str = ts.InputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def _reply(value: Any) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps(value)))


def test_a_list_output_goes_wrapped_in_an_object_and_comes_back_typed(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=_reply({"output": [{"name": "apple", "quantity": 2}]})
    )
    extract = ts.Predict("text", output=list[Item], lm=make_lm())

    pred = extract(text="two apples")

    assert pred.outputs.output == [Item(name="apple", quantity=2)]
    fmt = sent(route)[0]["response_format"]["json_schema"]
    assert fmt["strict"] is True
    schema = fmt["schema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["output"]
    assert schema["properties"]["output"]["type"] == "array"
    assert "`text`" in sent(route)[0]["messages"][0]["content"]


def test_a_union_output_is_typed_through_returns_and_tagged_on_the_wire(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=_reply({"output": {"_type": "Escalate", "team": "legal"}})
    )

    pred = ts.Predict(Triage, lm=make_lm())(message="I will sue")

    assert pred.outputs.output == Escalate(team="legal")
    body = sent(route)[0]
    assert body["messages"][0]["content"].startswith("Decide what to do")
    members = body["response_format"]["json_schema"]["schema"]["properties"]["output"]["anyOf"]
    assert len(members) == 2


def test_output_takes_a_union_and_a_plain_model_at_run_time(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(
        side_effect=[
            _reply({"output": {"_type": "Refund", "amount": 12.5}}),
            _reply({"output": {"name": "pear", "quantity": 1}}),
        ]
    )
    lm = make_lm()
    union = ts.Predict("message", output=Refund | Escalate, lm=lm)(message="charged twice")
    model = ts.Predict("text", output=Item, lm=lm)(text="a pear")
    assert union.outputs.output == Refund(amount=12.5)
    assert model.outputs.output == Item(name="pear", quantity=1)


def test_chain_of_thought_reasons_before_the_root_output(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        return_value=_reply({"reasoning": "17 * 3 = 51", "output": 51})
    )
    pred = ts.ChainOfThought("question", output=int, lm=make_lm())(question="17 * 3?")
    assert (pred.reasoning, pred.outputs.output) == ("17 * 3 = 51", 51)
    schema = sent(route)[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "output"]


def test_root_outputs_pass_the_stand_ins_strict_checks_over_a_real_socket() -> None:
    with StandIn() as server:
        lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="offline")
        items = ts.Predict("text", output=list[Item], lm=lm)(text="fruit")
        triage = ts.Predict(Triage, lm=lm)(message="charged twice")
        lm.close()
    assert all(isinstance(item, Item) for item in items.outputs.output)
    assert isinstance(triage.outputs.output, (Refund, Escalate))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ts.Predict("text -> Refund | Escalate"), "output=Refund | Escalate"),
        (lambda: ts.Predict(Item), "output=Item"),
        (lambda: ts.Predict(ts.Returns), "is generic"),
        (lambda: ts.Predict(Triage, output=int), "output= goes with a string of inputs"),
        (lambda: ts.Predict("text -> answer", output=int), "names only the inputs"),
        (lambda: ts.Predict("text", output=Triage), "is a ts.Signature"),
    ],
    ids=["type-as-name", "plain-model", "bare-generic", "class-and-output", "arrow", "signature"],
)
def test_root_level_mistakes_are_schema_errors_that_say_what_to_write(
    build: Any, message: str
) -> None:
    with pytest.raises(ts.SchemaError, match=message.replace("|", r"\|")):
        build()
