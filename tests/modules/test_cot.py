"""ChainOfThought over HTTP: a `reasoning` output first, otherwise Predict (modes, retries)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal

import httpx
import pytest
import respx
from pydantic import BaseModel
from react_wire import BASE_URL, bodies, make_lm

import typedspy as ts
from typedspy.testing import chat_completion
from typedspy.tools import Tool

LABEL = "[Automated feedback from typedspy's output validation, not a message from the user.]"
DEFAULT_REASONING = "Think step by step before answering: your reasoning, briefly."


class Exact(BaseModel):
    value: float


class Estimate(BaseModel):
    low: float
    high: float


class Measure(ts.Signature):
    """Measure the distance."""

    question: str = ts.InputField()
    result: Exact | Estimate = ts.OutputField()
    unit: Literal["m", "km"] = ts.OutputField()


ANSWER = {
    "reasoning": "Two cities, a range.",
    "result": {"_type": "Estimate", "low": 5, "high": 7},
    "unit": "km",
}


def ok(data: Any) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps(data)))


def forced_call(name: str, data: Any) -> httpx.Response:
    calls = [{"id": "call_1", "name": name, "arguments": json.dumps(data)}]
    return httpx.Response(
        200, json=chat_completion(None, tool_calls=calls, finish_reason="tool_calls")
    )


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.mark.parametrize("target", ["openai-strict", "json-schema"])
def test_reasoning_is_the_first_property_of_the_compiled_schema(target: str) -> None:
    cot = ts.ChainOfThought(Measure)

    schema = ts.schema.compile_schema(cot.signature, target).schema  # type: ignore[arg-type]

    assert list(schema["properties"]) == ["reasoning", "result", "unit"]
    assert "reasoning" in schema["required"]
    assert schema["properties"]["reasoning"]["type"] == "string"
    assert schema["properties"]["reasoning"]["description"] == DEFAULT_REASONING
    assert cot.signature.__name__ == "Measure"
    assert cot.signature.instructions == "Measure the distance."
    assert list(cot.original_signature.output_fields) == ["result", "unit"]


def test_reasoning_description_is_overridable_and_sent(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(return_value=ok(ANSWER))
    cot = ts.ChainOfThought(
        Measure, lm=make_lm(), mode="json_schema", reasoning_description="Say which case applies."
    )

    cot(question="Paris to Versailles?")

    body = bodies(route)[0]
    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "result", "unit"]
    assert schema["properties"]["reasoning"]["description"] == "Say which case applies."
    # The enforced schema carries the outputs: the openai profile's prompt does not repeat them.
    assert "reasoning" not in body["messages"][0]["content"]


def test_a_string_signature_works() -> None:
    cot = ts.ChainOfThought("question -> answer: int")

    assert list(cot.signature.output_fields) == ["reasoning", "answer"]
    assert list(cot.original_signature.output_fields) == ["answer"]
    assert cot.signature.output_fields["answer"].annotation is int


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "prompt", "tools"])
def test_every_mode_returns_reasoning_and_the_typed_union_member(
    router: respx.MockRouter, mode: Literal["json_schema", "json_object", "prompt", "tools"]
) -> None:
    name = ts.schema.compile_schema(ts.ChainOfThought(Measure).signature, "openai-strict").name
    answer = forced_call(name, ANSWER) if mode == "tools" else ok(ANSWER)
    route = router.post("/chat/completions").mock(return_value=answer)

    pred = ts.ChainOfThought(Measure, lm=make_lm(), mode=mode)(question="Paris to Versailles?")

    assert pred.reasoning == "Two cities, a range."
    assert pred["reasoning"] == "Two cities, a range."
    assert type(pred.result) is Estimate
    assert pred.result == Estimate(low=5, high=7)
    assert pred.unit == "km"
    assert list(pred) == ["reasoning", "result", "unit"]
    assert pred.to_dict() == {
        "reasoning": "Two cities, a range.",
        "result": {"_type": "Estimate", "low": 5.0, "high": 7.0},
        "unit": "km",
    }
    body = bodies(route)[0]
    system = body["messages"][0]["content"]
    if mode == "json_schema":
        props = body["response_format"]["json_schema"]["schema"]["properties"]
        assert list(props) == ["reasoning", "result", "unit"]
    elif mode == "tools":
        assert body["tool_choice"] == {"type": "function", "function": {"name": name}}
        props = body["tools"][0]["function"]["parameters"]["properties"]
        assert list(props) == ["reasoning", "result", "unit"]
    elif mode == "json_object":
        assert body["response_format"] == {"type": "json_object"}
        assert system.index('"reasoning"') < system.index('"result"')
    else:
        assert "response_format" not in body
        assert system.index("reasoning") < system.index("result")


@pytest.mark.parametrize("mode", ["json_schema", "tools"])
def test_retry_with_feedback_keeps_the_reasoning_of_the_good_attempt(
    router: respx.MockRouter, mode: Literal["json_schema", "tools"]
) -> None:
    bad = {**ANSWER, "reasoning": "First try.", "result": {"_type": "Exact", "value": "lots"}}
    name = ts.schema.compile_schema(ts.ChainOfThought(Measure).signature, "openai-strict").name
    replies = (
        [forced_call(name, bad), forced_call(name, ANSWER)]
        if mode == "tools"
        else [ok(bad), ok(ANSWER)]
    )
    route = router.post("/chat/completions").mock(side_effect=replies)

    pred = ts.ChainOfThought(Measure, lm=make_lm(), mode=mode)(question="How far?")

    first, second = bodies(route)
    assert second["messages"][:2] == first["messages"]
    assert len(second["messages"]) == 4
    feedback = second["messages"][3]
    content = feedback["content"]
    assert content.startswith(LABEL)
    assert "- result.value: " in content
    if mode == "tools":
        assert feedback["role"] == "tool"
        assert second["messages"][2]["tool_calls"][0]["function"]["name"] == name
    else:
        assert feedback["role"] == "user"
        assert second["messages"][2] == {"role": "assistant", "content": json.dumps(bad)}
    assert pred.reasoning == "Two cities, a range."
    assert pred.result == Estimate(low=5, high=7)
    assert [a.number for a in pred.attempts] == [1, 2]
    assert [e.path for e in pred.attempts[0].errors] == [("result", "value")]


def test_async_call_and_history_work_as_in_predict(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(return_value=ok(ANSWER))
    history = ts.History(system_prompt="Use kilometres.")
    history.add_message("user", "Hi")
    history.add_message("assistant", "Hello.")
    cot = ts.ChainOfThought(Measure, lm=make_lm(), mode="json_schema")

    pred = asyncio.run(cot.acall(question="How far?", history=history))

    messages = bodies(route)[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].endswith("\n\nUse kilometres.")
    assert pred.reasoning == "Two cities, a range."


# -- as a tool -----------------------------------------------------------------------------------


def test_tool_from_chain_of_thought_exposes_the_original_signature() -> None:
    tool = Tool.from_module(ts.ChainOfThought(Measure))

    assert tool.signature is Measure
    assert tool.name == "measure"
    assert tool.description == "Measure the distance."
    mcp = tool.to_mcp_tool()
    assert list(mcp["outputSchema"]["properties"]) == ["result", "unit"]
    assert list(mcp["inputSchema"]["properties"]) == ["question"]
    function = tool.to_openai_tool()["function"]
    assert list(function["parameters"]["properties"]) == ["question"]
    assert tool.to_mcp_tool() == Tool.from_module(ts.Predict(Measure)).to_mcp_tool()


def test_chain_of_thought_tool_result_validates_without_the_reasoning(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(return_value=ok(ANSWER))
    tool = Tool.from_module(ts.ChainOfThought(Measure, lm=make_lm(), mode="json_schema"))

    outputs = asyncio.run(tool.acall('{"question": "How far?"}'))

    assert outputs == {"result": Estimate(low=5, high=7), "unit": "km"}
    assert tool.dump_outputs(outputs) == {
        "result": {"_type": "Estimate", "low": 5.0, "high": 7.0},
        "unit": "km",
    }
    # The module behind the tool still asked for its reasoning.
    props = bodies(route)[0]["response_format"]["json_schema"]["schema"]["properties"]
    assert list(props) == ["reasoning", "result", "unit"]


def test_new_instructions_apply_to_the_prompt_and_the_tool_contract() -> None:
    cot = ts.ChainOfThought(Measure)

    cot.instructions = "Measure road distance."

    assert cot.instructions == "Measure road distance."
    assert cot.signature.instructions == "Measure road distance."
    assert list(cot.signature.output_fields) == ["reasoning", "result", "unit"]
    assert cot.original_signature.instructions == "Measure road distance."
    assert Tool.from_module(cot).description == "Measure road distance."
    assert Measure.instructions == "Measure the distance."  # the user's class is untouched


def test_every_entry_point_returns_a_reasoned_prediction() -> None:
    # Issue 23: `pred.reasoning` is the prediction's own typed attribute (ts.prediction.Reasoned).
    from typedspy.testing import StandIn

    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            cot = ts.ChainOfThought("question -> answer", lm=lm)
            called = cot(question="q")
            tried = cot.try_call(question="q")
            streamed = list(cot.stream(question="q"))[-1]
            batched = cot.batch([{"question": "q"}]).items[0].result
        finally:
            lm.close()
    for pred in (called, tried, streamed, batched):
        assert isinstance(pred, ts.prediction.Reasoned)
        assert pred.reasoning == pred["reasoning"] and isinstance(pred.reasoning, str)
    assert not isinstance(ts.Predict("question -> answer"), ts.ChainOfThought)
