"""ReAct on endpoints without tool calling: the `_type`-tagged union step through Predict."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import openai
import pytest
import respx
from pydantic import BaseModel

import typedspy as ts
from typedspy.errors import ConfigurationError, LMUnsupportedFeatureError
from typedspy.react import ReAct
from typedspy.testing import Reply, StandIn, chat_completion, error_body
from typedspy.tools import Tool, tool

NO_TOOLS = Reply(
    status=400,
    error={
        "message": "Unsupported parameter: 'tools' is not supported with this model.",
        "param": "tools",
        "code": "unsupported_parameter",
    },
)


class Exact(BaseModel):
    value: float


class Estimate(BaseModel):
    low: float
    high: float


class Measure(ts.Signature):
    """Measure what the question asks for."""

    question: str = ts.InputField()
    result: Exact | Estimate = ts.OutputField()
    unit: str = ts.OutputField()


def step(reasoning: str, **choice: Any) -> str:
    return json.dumps({"reasoning": reasoning, "next": choice})


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn(supports_tools=False) as s:
        yield s


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    model = ts.LM("standin-1", base_url=server.base_url, api_key="unused", max_retries=0)
    yield model
    model.close()  # its keep-alive sockets must not outlive the test (warnings are errors)


@pytest.fixture
def made() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def tools(made: list[dict[str, Any]]) -> list[Tool]:
    @tool
    def lookup_height(building: str) -> float:
        """Look up a building's height in metres."""
        made.append({"lookup_height": building})
        return 330.0

    @tool
    def convert_units(value: float, to: str) -> str:
        """Convert metres to another unit."""
        made.append({"convert_units": [value, to]})
        return f"{value * 3.28:.0f} ft"

    return [lookup_height, convert_units]


def test_auto_falls_back_to_a_tagged_union_step_over_a_real_socket(
    server: StandIn, lm: ts.LM, tools: list[Tool], made: list[dict[str, Any]]
) -> None:
    server.enqueue(
        NO_TOOLS,
        step("Find the height first.", _type="lookup_height", building="Eiffel Tower"),
        step("Convert it.", _type="convert_units", value=330, to="ft"),
        step(
            "Done.",
            _type="finish",
            result={"_type": "Estimate", "low": 1080, "high": 1085},
            unit="ft",
        ),
    )
    pred = ReAct(Measure, tools=tools, lm=lm)(question="Eiffel Tower in feet?")

    assert pred.result == Estimate(low=1080, high=1085)
    assert pred.unit == "ft"
    assert pred.finished is True
    assert made == [{"lookup_height": "Eiffel Tower"}, {"convert_units": [330.0, "ft"]}]
    first, *steps = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == [
        "lookup_height",
        "convert_units",
        "finish",
    ]
    assert len(steps) == 3
    for body in steps:
        assert "tools" not in body
        spec = body["response_format"]["json_schema"]
        assert spec["name"] == "MeasureStep" and spec["strict"] is True
        members = spec["schema"]["properties"]["next"]["anyOf"]
        names = [ref["$ref"].rsplit("/", 1)[-1] for ref in members]
        assert names == ["lookup_height", "convert_units", "finish"]
        for name in names:
            tag = spec["schema"]["$defs"][name]["properties"]["_type"]
            assert tag == {"type": "string", "const": name}
        assert list(spec["schema"]["properties"]) == ["reasoning", "next"]
    last_user = steps[2]["messages"][-1]["content"]
    assert 'Call: lookup_height {"building":"Eiffel Tower"}\nObservation: 330.0' in last_user
    assert 'Call: convert_units {"value":330.0,"to":"ft"}\nObservation: 1082 ft' in last_user
    assert [c.name for c in pred.trajectory.calls] == ["lookup_height", "convert_units", "finish"]
    assert pred.trajectory[0].reasoning == "Find the height first."


def test_auto_remembers_an_endpoint_without_tools(
    server: StandIn, lm: ts.LM, tools: list[Tool]
) -> None:
    server.enqueue(
        NO_TOOLS, step("x", _type="finish", result={"_type": "Exact", "value": 1}, unit="m")
    )
    ReAct(Measure, tools=tools, lm=lm)(question="first")
    server.enqueue(step("y", _type="finish", result={"_type": "Exact", "value": 2}, unit="m"))
    pred = ReAct(Measure, tools=tools, lm=lm)(question="second")

    assert pred.result == Exact(value=2)
    assert len(server.requests) == 3
    assert "tools" not in server.requests[2]


def test_union_mode_never_sends_tools(server: StandIn, lm: ts.LM, tools: list[Tool]) -> None:
    server.enqueue(step("x", _type="finish", result={"_type": "Exact", "value": 5}, unit="m"))
    pred = ReAct(Measure, tools=tools, mode="union", lm=lm)(question="q")

    assert pred.result == Exact(value=5)
    assert len(server.requests) == 1
    assert "tools" not in server.requests[0]


def test_tools_mode_does_not_fall_back(server: StandIn, lm: ts.LM, tools: list[Tool]) -> None:
    server.enqueue(NO_TOOLS)
    with pytest.raises(LMUnsupportedFeatureError) as info:
        ReAct(Measure, tools=tools, mode="tools", lm=lm)(question="q")
    assert info.value.feature == "tools"


def test_an_unreadable_step_is_fed_back_and_the_run_goes_on(
    server: StandIn, lm: ts.LM, tools: list[Tool]
) -> None:
    server.enqueue(
        step("x", _type="teleport", where="Mars"),
        step("y", _type="finish", result={"_type": "Exact", "value": 7}, unit="m"),
    )
    with ts.context(max_retries=0):
        pred = ReAct(Measure, tools=tools, mode="union", lm=lm)(question="q")

    assert pred.result == Exact(value=7)
    assert pred.trajectory[0].calls == []
    assert pred.trajectory[0].note is not None
    assert pred.trajectory[0].note.startswith("Your previous step could not be used")
    assert (
        "Observation: Your previous step could not be used"
        in (server.requests[1]["messages"][-1]["content"])
    )


def test_max_iters_in_the_fallback_extracts_the_answer(
    server: StandIn, lm: ts.LM, tools: list[Tool], made: list[dict[str, Any]]
) -> None:
    server.enqueue(
        step("look", _type="lookup_height", building="Big Ben"),
        json.dumps({"result": {"_type": "Exact", "value": 96}, "unit": "m"}),
    )
    agent = ReAct(Measure, tools=tools, max_iters=1, mode="union", lm=lm)
    pred = agent(question="Big Ben?")

    assert pred.result == Exact(value=96)
    assert pred.finished is False
    assert made == [{"lookup_height": "Big Ben"}]
    extraction = server.requests[1]["response_format"]["json_schema"]
    assert extraction["name"] == "MeasureExtract"
    assert list(extraction["schema"]["properties"]) == ["result", "unit"]


BASE_URL = "https://llm.test/v1"


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def test_a_respx_400_on_tools_falls_back(router: respx.MockRouter, tools: list[Tool]) -> None:
    rejected = error_body(
        "This model does not support tools.", param="tools", code="unsupported_parameter"
    )
    answer = step("done", _type="finish", result={"_type": "Exact", "value": 3}, unit="m")
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(400, json=rejected),
            httpx.Response(200, json=chat_completion(answer)),
        ]
    )
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient()),
    )
    pred = ReAct(Measure, tools=tools, lm=ts.LM("gpt-test", client=client))(question="q")

    assert pred.result == Exact(value=3)
    sent = [json.loads(c.request.content) for c in route.calls]
    assert "tools" in sent[0] and "tools" not in sent[1]
    assert sent[1]["response_format"]["json_schema"]["name"] == "MeasureStep"


def test_union_mode_checks_the_step_signature_when_built(tools: list[Tool]) -> None:
    with pytest.raises(ConfigurationError, match="rename the input"):
        ReAct("question, next -> answer", tools=tools, mode="union")
    assert ReAct("question, next -> answer", tools=tools).mode == "auto"
