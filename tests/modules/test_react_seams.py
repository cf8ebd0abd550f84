"""Seams a new user hit in ReAct: LLM-backed tools and the agent's LM, configuration errors in
tools, and `_type` on observations. Every test fails on the code before the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx
from pydantic import BaseModel
from react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.errors import ConfigurationError
from typedspy.testing import chat_completion
from typedspy.tools import tool


class Ask(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


class Summarize(ts.Signature):
    """Summarize the text."""

    text: str = ts.InputField()
    summary: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def _summary_reply(summary: str) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps({"summary": summary})))


def test_a_module_tool_uses_the_agents_lm(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "summarize", {"text": "a long report"})),
            _summary_reply("short"),
            finish_reply(answer="short"),
        ]
    )
    summarize = ts.Tool.from_module(ts.Predict(Summarize), name="summarize")
    agent = ts.ReAct(Ask, tools=[summarize], lm=make_lm())  # no ts.configure: only lm=

    pred = agent(question="Summarize the report")

    sent = bodies(route)
    assert len(sent) == 3  # the tool's own request went to the agent's endpoint
    assert "a long report" in json.dumps(sent[1]["messages"])
    assert sent[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "short"}
    assert pred.answer == "short"


def test_a_function_tool_that_calls_a_module_uses_the_agents_lm(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "digest", {"text": "a long report"})),
            _summary_reply("brief"),
            finish_reply(answer="brief"),
        ]
    )
    inner = ts.Predict(Summarize)

    @tool
    def digest(text: str) -> str:
        """Digest a text (a synchronous tool calling a module)."""
        return inner(text=text).summary

    agent = ts.ReAct(Ask, tools=[digest], lm=make_lm())
    pred = agent(question="Digest the report")

    sent = bodies(route)
    assert len(sent) == 3
    assert sent[2]["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "brief"}
    assert pred.answer == "brief"


def test_a_configuration_error_in_a_tool_is_raised_not_shown(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("call_1", "lookup", {"key": "x"}))]
    )

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise ConfigurationError(f"lookup has no backend for {key}")

    agent = ts.ReAct(Ask, tools=[lookup], lm=make_lm())
    with pytest.raises(ConfigurationError, match="no backend"):
        agent(question="?")
    assert len(route.calls) == 1  # the model never saw the error as an observation


class Weather(BaseModel):
    city: str
    celsius: float


class Sunny(BaseModel):
    hours: int


class Cloudy(BaseModel):
    cover: float


def test_a_model_outside_any_union_gets_no_type_tag(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "weather", {"cities": ["Oslo"]})),
            finish_reply(answer="cold"),
        ]
    )

    @tool
    def weather(cities: list[str]) -> list[Weather]:
        """The weather in some cities."""
        return [Weather(city=c, celsius=-3.0) for c in cities]

    ts.ReAct(Ask, tools=[weather], lm=make_lm())(question="Weather in Oslo?")

    observation = bodies(route)[1]["messages"][-1]["content"]
    assert json.loads(observation) == [{"city": "Oslo", "celsius": -3.0}]


def test_a_union_member_keeps_its_type_tag(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "sky", {"city": "Oslo"})),
            finish_reply(answer="cloudy"),
        ]
    )

    @tool
    def sky(city: str) -> Sunny | Cloudy:
        """The sky over a city."""
        return Cloudy(cover=0.8)

    ts.ReAct(Ask, tools=[sky], lm=make_lm())(question="Sky over Oslo?")

    observation = bodies(route)[1]["messages"][-1]["content"]
    assert json.loads(observation) == {"_type": "Cloudy", "cover": 0.8}
