"""ReAct over native tool calling: the real openai client, HTTP answered by respx."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from pydantic import BaseModel
from react_wire import (
    BASE_URL,
    TOOLS_ONLY,
    assistant,
    bodies,
    calls_reply,
    finish_reply,
    make_lm,
    tool_message,
    tool_names,
)

import typedspy as ts
from typedspy.errors import ConfigurationError, InputError, RefusalError
from typedspy.react import ReAct
from typedspy.schema import compile_schema
from typedspy.testing import chat_completion, error_body
from typedspy.tools import Tool, tool


class AnswerQuestion(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


class Exact(BaseModel):
    value: float


class Estimate(BaseModel):
    low: float
    high: float


class Measure(ts.Signature):
    """Measure something."""

    question: str = ts.InputField()
    result: Exact | Estimate = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


class Log:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []


@pytest.fixture
def log() -> Log:
    return Log()


@pytest.fixture
def search(log: Log) -> Tool:
    @tool
    def search(query: str) -> str:
        """Search the web.

        Args:
            query: What to look for.
        """
        log.calls.append(("search", query))
        return f"Paris has 2.1 million inhabitants ({query})"

    return search


@pytest.fixture
def calculator(log: Log) -> Tool:
    @tool
    def calculator(expression: str) -> float:
        """Evaluate an arithmetic expression."""
        log.calls.append(("calculator", expression))
        if "/0" in expression:
            raise ZeroDivisionError("division by zero")
        return 4.2

    return calculator


def test_two_tools_send_back_exact_tool_messages(
    router: respx.MockRouter, search: Any, calculator: Any, log: Log
) -> None:
    first = ("call_a", "search", {"query": "population of Paris"})
    second = ("call_b", "calculator", {"expression": "2.1 * 2"})
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(first), calls_reply(second), finish_reply(answer="4.2 million")]
    )
    agent = ReAct(AnswerQuestion, tools=[search, calculator], lm=make_lm())
    pred = agent(question="What is twice the population of Paris?")

    assert pred.answer == "4.2 million"
    assert pred.finished is True
    assert log.calls == [("search", "population of Paris"), ("calculator", "2.1 * 2")]
    sent = bodies(route)
    assert len(sent) == 3
    user = {
        "role": "user",
        "content": "<question>\nWhat is twice the population of Paris?\n</question>",
    }
    assert sent[0]["messages"][1:] == [user]
    observation = "Paris has 2.1 million inhabitants (population of Paris)"
    assert sent[1]["messages"][1:] == [user, assistant(first), tool_message("call_a", observation)]
    assert sent[2]["messages"][1:] == [
        user,
        assistant(first),
        tool_message("call_a", observation),
        assistant(second),
        tool_message("call_b", "4.2"),
    ]
    system = sent[0]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Answer the question using the tools.")
    assert "call `finish`" in system["content"]
    for body in sent:
        assert tool_names(body) == ["search", "calculator", "finish"]
        assert body["tool_choice"] == "auto"  # the openai profile: response_format too
        assert body["parallel_tool_calls"] is False
        assert all(t["function"]["strict"] is True for t in body["tools"])
    assert [s.calls[0].name for s in pred.trajectory] == ["search", "calculator", "finish"]
    assert pred.steps == 3


def test_finish_parameters_are_the_strict_output_schema_and_answers_are_typed(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[finish_reply(result={"_type": "Estimate", "low": 1, "high": 2})]
    )
    pred = ReAct(Measure, lm=make_lm())(question="How tall?")

    assert pred.result == Estimate(low=1, high=2)
    finish = bodies(route)[0]["tools"][-1]["function"]
    assert finish["name"] == "finish"
    assert finish["parameters"] == compile_schema(Measure, "openai-strict").schema


def test_parallel_calls_in_one_turn_are_all_run_and_answered(
    router: respx.MockRouter, search: Any, calculator: Any, log: Log
) -> None:
    a = ("call_1", "search", {"query": "Paris"})
    b = ("call_2", "calculator", {"expression": "1 + 1"})
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(a, b), finish_reply(answer="done")]
    )
    pred = ReAct(AnswerQuestion, tools=[search, calculator], lm=make_lm())(question="q")

    assert pred.answer == "done"
    assert log.calls == [("search", "Paris"), ("calculator", "1 + 1")]
    assert bodies(route)[1]["messages"][2:] == [
        assistant(a, b),
        tool_message("call_1", "Paris has 2.1 million inhabitants (Paris)"),
        tool_message("call_2", "4.2"),
    ]


def test_invalid_arguments_do_not_call_the_tool_and_the_model_sees_why(
    router: respx.MockRouter, calculator: Any, log: Log
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_x", "calculator", {"expr": 3})),
            finish_reply(answer="gave up"),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[calculator], lm=make_lm())(question="q")

    assert pred.answer == "gave up"
    assert log.calls == []
    answer = bodies(route)[1]["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_x"
    assert answer["content"].startswith("Error: the arguments for calculator are invalid")
    assert "expression" in answer["content"] and "expr" in answer["content"]


def test_a_raising_tool_becomes_an_observation(
    router: respx.MockRouter, calculator: Any, log: Log
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "calculator", {"expression": "1/0"})),
            finish_reply(answer="undefined"),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[calculator], lm=make_lm())(question="1/0?")

    assert pred.answer == "undefined"
    assert log.calls == [("calculator", "1/0")]
    content = bodies(route)[1]["messages"][-1]["content"]
    assert content == "Error: calculator failed: ZeroDivisionError: division by zero"


def test_a_huge_error_is_cut(router: respx.MockRouter) -> None:
    @tool
    def noisy(level: int) -> str:
        """Fail loudly."""
        raise RuntimeError("x" * 50_000)

    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", "noisy", {"level": 9})), finish_reply(answer="a")]
    )
    ReAct(AnswerQuestion, tools=[noisy], lm=make_lm())(question="q")

    content = bodies(route)[1]["messages"][-1]["content"]
    assert len(content) < 1100
    assert content.endswith("more characters cut]")


def test_an_unknown_tool_is_reported_with_the_available_names(
    router: respx.MockRouter, search: Any
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", "browse", {"url": "x"})), finish_reply(answer="a")]
    )
    ReAct(AnswerQuestion, tools=[search], lm=make_lm())(question="q")

    content = bodies(route)[1]["messages"][-1]["content"]
    assert content == "Error: there is no tool named 'browse'. Available tools: search, finish."


def test_an_unknown_tool_s_long_name_is_not_repeated_whole(
    router: respx.MockRouter, search: Any
) -> None:
    name = "browse" * 2000  # 12,000 characters of the model's invention
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", name, {})), finish_reply(answer="a")]
    )
    ReAct(AnswerQuestion, tools=[search], lm=make_lm())(question="q")

    content = bodies(route)[1]["messages"][-1]["content"]
    assert len(content) < 300
    assert content.endswith("[11900 more characters cut]'. Available tools: search, finish.")


def test_invalid_finish_arguments_continue_the_run(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            finish_reply("f1", result={"_type": "Exact", "value": "tall"}),
            finish_reply("f2", result={"_type": "Exact", "value": 3}),
        ]
    )
    pred = ReAct(Measure, lm=make_lm())(question="How tall?")

    assert pred.result == Exact(value=3)
    feedback = bodies(route)[1]["messages"][-1]
    assert feedback["tool_call_id"] == "f1"
    assert feedback["content"].startswith("Error: the outputs given to finish are invalid")
    assert "result.value" in feedback["content"]
    assert [c.observation for c in pred.trajectory.calls][-1] == (
        "Done: the final answer was accepted."
    )


def test_a_text_reply_is_answered_with_a_labelled_nudge(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=chat_completion("I think it is Paris.")),
            finish_reply(answer="Paris"),
        ]
    )
    pred = ReAct(AnswerQuestion, lm=make_lm(TOOLS_ONLY))(question="Capital of France?")

    assert pred.answer == "Paris"
    reply, nudge = bodies(route)[1]["messages"][-2:]
    assert reply == {"role": "assistant", "content": "I think it is Paris."}
    assert nudge["role"] == "user"
    assert nudge["content"].startswith("[Automated feedback from typedspy's agent loop")
    assert "call `finish`" in nudge["content"]


def test_max_iters_extracts_the_answer_from_the_trajectory(
    router: respx.MockRouter, search: Any, log: Log
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "search", {"query": "one"})),
            calls_reply(("c2", "search", {"query": "two"})),
            httpx.Response(200, json=chat_completion('{"answer": "about 2.1 million"}')),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[search], max_iters=2, lm=make_lm())(question="Paris?")

    assert pred.answer == "about 2.1 million"
    assert pred.finished is False
    assert len(log.calls) == 2
    extraction = bodies(route)[2]
    assert "tools" not in extraction
    assert extraction["response_format"]["json_schema"]["name"] == "AnswerQuestionExtract"
    user = extraction["messages"][-1]["content"]
    assert "<trajectory>" in user
    assert 'Call: search {"query":"two"}' in user
    assert "Observation: Paris has 2.1 million inhabitants (two)" in user
    assert "ran out of steps" in extraction["messages"][0]["content"]
    assert pred.usage.total_tokens > 0


def test_a_refusal_ends_the_run(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(None, refusal="I can't help."))
    )
    with pytest.raises(RefusalError, match="I can't help"):
        ReAct(AnswerQuestion, lm=make_lm())(question="q")


def test_the_lm_comes_from_settings_and_history_precedes_the_inputs(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(side_effect=[finish_reply(answer="a")])
    history = ts.History(
        messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    )

    async def main() -> Any:
        with ts.context(lm=make_lm()):
            return await ReAct(AnswerQuestion).acall(question="q", history=history)

    assert asyncio.run(main()).answer == "a"
    messages = bodies(route)[0]["messages"]
    assert [m["content"] for m in messages[1:3]] == ["hi", "hello"]
    assert messages[3]["content"] == "<question>\nq\n</question>"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_iters": 0}, "max_iters"),
        ({"mode": "native"}, "unknown ReAct mode"),
    ],
)
def test_bad_settings_are_configuration_errors(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        ReAct(AnswerQuestion, **kwargs)


def test_finish_is_a_reserved_tool_name_and_trajectory_a_reserved_input() -> None:
    @tool
    def finish(answer: str) -> str:
        """Pretend to finish."""
        return answer

    with pytest.raises(ConfigurationError, match="reserved"):
        ReAct(AnswerQuestion, tools=[finish])
    with pytest.raises(ConfigurationError, match="trajectory"):
        ReAct("trajectory, question -> answer")


def test_the_extraction_predictor_is_discoverable() -> None:
    agent = ReAct(AnswerQuestion)
    names = [name for name, _ in agent.named_predictors()]
    assert names == ["extract"]
    assert "search" not in repr(agent)
    assert repr(agent) == "ReAct(AnswerQuestion, tools=[], mode='auto')"


def test_an_endpoint_rejecting_parallel_tool_calls_gets_requests_without_it(
    router: respx.MockRouter,
) -> None:
    rejected = error_body(
        "Unsupported parameter: 'parallel_tool_calls' is not supported with this model.",
        param="parallel_tool_calls",
        code="unsupported_parameter",
    )
    route = router.post("/chat/completions").mock(
        side_effect=[httpx.Response(400, json=rejected), finish_reply(answer="a")]
    )
    pred = ReAct(AnswerQuestion, lm=make_lm())(question="q")

    assert pred.answer == "a"
    first, second = bodies(route)
    assert first["parallel_tool_calls"] is False
    assert "parallel_tool_calls" not in second
    assert second["tool_choice"] == "auto"


def test_missing_inputs_fail_before_any_request() -> None:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as mock:
        route = mock.post("/chat/completions")
        with pytest.raises(InputError, match="AnswerQuestion: missing input"):
            ReAct(AnswerQuestion, lm=make_lm())(query="q")
    assert not route.called
