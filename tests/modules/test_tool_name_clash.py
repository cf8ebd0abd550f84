"""A `@ts.tool` parameter named like a field of its return model (issue 9).

``get_weather(city) -> Weather`` with ``Weather.city`` used to lose the parameter: the tool's
schema had no ``city`` and every call was refused. The model is now the single output
``result``, so both live apart; a parameter named ``result`` beside that output is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import respx
from pydantic import BaseModel
from react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts


class Weather(BaseModel):
    city: str
    celsius: float


class Ask(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def test_a_parameter_named_like_a_result_field_reaches_the_model_and_the_function(
    router: respx.MockRouter,
) -> None:
    seen: list[str] = []

    @ts.tool
    def get_weather(city: str) -> Weather:
        """The weather in a city.

        Args:
            city: The city's name.
        """
        seen.append(city)
        return Weather(city=city, celsius=21.5)

    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "get_weather", {"city": "Lyon"})),
            finish_reply(answer="21.5 C in Lyon"),
        ]
    )
    pred = ts.ReAct(Ask, tools=[get_weather], lm=make_lm())(question="Weather in Lyon?")

    sent = bodies(route)
    [function] = [t["function"] for t in sent[0]["tools"] if t["function"]["name"] != "finish"]
    assert function["parameters"]["properties"]["city"]["description"] == "The city's name."
    assert function["parameters"]["required"] == ["city"]
    assert seen == ["Lyon"]
    observation = sent[1]["messages"][-1]
    assert observation["role"] == "tool"
    assert json.loads(observation["content"]) == {"city": "Lyon", "celsius": 21.5}
    assert pred.answer == "21.5 C in Lyon"


def test_the_mcp_output_schema_holds_the_model_under_result() -> None:
    @ts.tool
    def get_weather(city: str) -> Weather:
        """The weather in a city."""
        return Weather(city=city, celsius=0.0)

    exported = get_weather.to_mcp_tool()
    assert exported["inputSchema"]["required"] == ["city"]
    assert exported["outputSchema"]["required"] == ["result"]
    assert get_weather(city="Oslo") == {"result": Weather(city="Oslo", celsius=0.0)}


def test_a_parameter_named_result_beside_the_result_output_is_refused_at_decoration() -> None:
    def shout(result: str) -> str:
        return result.upper()

    with pytest.raises(ts.SchemaError, match="parameter 'result'") as caught:
        ts.tool(shout)
    assert caught.value.path == ("result",)
