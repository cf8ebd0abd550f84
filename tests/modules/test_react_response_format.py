"""ReAct's native steps send ``response_format`` with their tools only where the profile says
the endpoint allows it (`Profile.response_format_with_tools`; vLLM constrains tool steps too)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import httpx
import openai
import pytest
import respx
from react_wire import BASE_URL, bodies, calls_reply, finish_reply

import typedspy as ts
from typedspy.react import ReAct
from typedspy.streaming import PartialPrediction
from typedspy.testing import Quirks, StandIn, chat_chunk, chat_completion, sse_body


class AnswerQuestion(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def search(query: str) -> str:
    """Search the web."""
    return f"results for {query}"


def lm_with(profile: str | ts.Profile) -> ts.LM:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient()),
    )
    return ts.LM("gpt-test", client=client, profile=profile)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def test_allowed_the_step_sends_the_outputs_format_and_a_content_answer_ends_the_run(
    router: respx.MockRouter,
) -> None:
    assert ts.Profile.named("openai").response_format_with_tools
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "search", {"query": "Paris"})),
            httpx.Response(200, json=chat_completion('{"answer": "Paris"}')),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[search], lm=lm_with("openai"))(question="Capital?")

    assert pred.answer == "Paris" and pred.finished is True
    for body in bodies(route):
        assert body["response_format"]["type"] == "json_schema"
        assert body["response_format"]["json_schema"]["name"] == "AnswerQuestion"
        assert body["response_format"]["json_schema"]["schema"]["required"] == ["answer"]
        assert body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == ["search", "finish"]
    last = pred.trajectory[-1].calls[-1]
    assert (last.name, json.loads(last.arguments)) == ("finish", {"answer": "Paris"})


def test_allowed_an_invalid_content_answer_is_fed_back_and_the_run_goes_on(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=chat_completion('{"answer": 3}')),
            finish_reply(answer="Paris"),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[search], lm=lm_with("openai"))(question="Capital?")

    assert pred.answer == "Paris"
    tool_reply = bodies(route)[1]["messages"][-1]
    assert tool_reply["role"] == "tool"
    assert tool_reply["content"].startswith("Error: the outputs given to finish are invalid")


def test_not_allowed_the_step_sends_tools_alone_and_requires_a_call(
    router: respx.MockRouter,
) -> None:
    assert not ts.Profile.named("vllm").response_format_with_tools
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=chat_completion('{"answer": "Paris"}')),
            finish_reply(answer="Paris"),
        ]
    )
    pred = ReAct(AnswerQuestion, tools=[search], lm=lm_with("vllm"))(question="Capital?")

    assert pred.answer == "Paris"
    first, second = bodies(route)
    for body in (first, second):
        assert "response_format" not in body
        assert body["tool_choice"] == "required"
    # Content is no answer here: the model is told to call a tool (or finish).
    assert second["messages"][-1]["role"] == "user"
    assert "call `finish`" in second["messages"][-1]["content"]


@pytest.mark.parametrize(("profile", "tool_runs"), [("vllm", 2), ("openai", 0)])
def test_against_a_server_that_constrains_tool_steps(profile: str, tool_runs: int) -> None:
    # The stand-in with vLLM's quirk: with a response_format, no tool call can come out.
    ran: list[str] = []

    def lookup(query: str) -> str:
        """Look it up."""
        ran.append(query)
        return "found"

    with StandIn(quirks=Quirks(constrains_tool_steps=True)) as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile=profile)
        try:
            agent = ReAct(AnswerQuestion, tools=[lookup], max_iters=2, lm=lm)
            pred = agent(question="q")
        finally:
            lm.close()
    assert len(ran) == tool_runs
    assert pred.finished is (profile == "openai")


def test_a_streamed_content_answer_yields_partial_outputs() -> None:
    with StandIn() as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile="openai")
        try:
            events = list(ReAct(AnswerQuestion, tools=[search], lm=lm).stream(question="q"))
        finally:
            lm.close()
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.finished is True
    assert any(isinstance(e, PartialPrediction) for e in events[:-1])
    assert server.requests[0]["stream"] is True and server.requests[0]["tool_choice"] == "auto"


THINKING = '<think>{"answer": "Lyon"}</think>{"answer": "Paris"}'


def thinking_openai() -> ts.Profile:
    """A profile that answers in content and whose server leaves reasoning in it."""
    return ts.Profile.named("openai").derive(
        name="openai-thinking", reasoning_tags=("<think>", "</think>")
    )


def test_a_content_answer_is_read_after_the_reasoning_block(router: respx.MockRouter) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(THINKING))
    )
    pred = ReAct(AnswerQuestion, tools=[search], lm=lm_with(thinking_openai()))(question="q")

    assert pred.answer == "Paris" and pred.finished is True  # the block was read as the answer
    step = pred.trajectory[-1]
    assert step.reasoning == '{"answer": "Lyon"}'
    assert json.loads(step.calls[0].arguments) == {"answer": "Paris"}


def test_a_streamed_content_answer_shows_no_partial_from_the_reasoning_block() -> None:
    with StandIn(answer=lambda _: THINKING) as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", profile=thinking_openai())
        try:
            events = list(ReAct(AnswerQuestion, tools=[search], lm=lm).stream(question="q"))
        finally:
            lm.close()
    shown = [e.values.get("answer") for e in events if isinstance(e, PartialPrediction)]
    assert shown and "Lyon" not in shown and shown[-1] == "Paris"
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.answer == "Paris"


def _streamed(content: str, finish_arguments: str | None) -> httpx.Response:
    """A streamed reply: ``content`` in pieces, then a ``finish`` call with these arguments."""
    chunks = [chat_chunk(role="assistant", content="")]
    chunks += [chat_chunk(content=content[i : i + 4]) for i in range(0, len(content), 4)]
    if finish_arguments is not None:
        chunks.append(chat_chunk(tool_calls=[{"index": 0, "id": "c_f", "name": "finish"}]))
        chunks += [
            chat_chunk(tool_calls=[{"index": 0, "arguments": finish_arguments[i : i + 4]}])
            for i in range(0, len(finish_arguments), 4)
        ]
    chunks.append(chat_chunk(finish_reason="tool_calls" if finish_arguments else "stop"))
    return httpx.Response(
        200, content=sse_body(chunks), headers={"content-type": "text/event-stream"}
    )


@pytest.mark.parametrize(
    "prose", ["I think {x", "Let me answer: {", "Plan: {look it up} then finish."]
)
def test_a_brace_in_the_text_before_finish_does_not_hide_its_partial_outputs(
    router: respx.MockRouter, prose: str
) -> None:
    # The text before a tool call is no answer: the partial parser reads finish's arguments.
    router.post("/chat/completions").mock(
        return_value=_streamed(prose, '{"answer": "Paris is the capital"}')
    )
    agent = ReAct(AnswerQuestion, tools=[search], lm=lm_with("openai"))
    events = list(agent.stream(question="Capital?"))

    shown = [e.values.get("answer") for e in events if isinstance(e, PartialPrediction)]
    assert shown and shown[-1] == "Paris is the capital"
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.answer == "Paris is the capital"
    assert final.trajectory[0].reasoning == prose


@pytest.mark.parametrize(
    "content", ['{"answer": "Paris"}', '  \n{"answer": "Paris"}', 'Sure: {"answer": "Paris"}']
)
def test_a_streamed_content_answer_still_shows_its_partial_outputs(
    router: respx.MockRouter, content: str
) -> None:
    router.post("/chat/completions").mock(return_value=_streamed(content, None))
    events = list(ReAct(AnswerQuestion, tools=[search], lm=lm_with("openai")).stream(question="q"))

    shown = [e.values.get("answer") for e in events if isinstance(e, PartialPrediction)]
    assert shown and shown[-1] == "Paris"
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.answer == "Paris" and final.finished


@pytest.mark.parametrize(
    "content",
    [THINKING, '    \n  {"answer": "Paris"}'],
    ids=["open-tag-cut-in-pieces", "blank-first-pieces"],
)
def test_a_content_answer_whose_first_pieces_say_nothing_yet_streams_its_outputs(
    router: respx.MockRouter, content: str
) -> None:
    # The first 4-character pieces ("<thi", "    ") do not yet tell an answer from prose.
    router.post("/chat/completions").mock(return_value=_streamed(content, None))
    agent = ReAct(AnswerQuestion, tools=[search], lm=lm_with(thinking_openai()))
    events = list(agent.stream(question="q"))

    shown = [e.values.get("answer") for e in events if isinstance(e, PartialPrediction)]
    assert shown and "Lyon" not in shown and shown[-1] == "Paris"
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.answer == "Paris"
