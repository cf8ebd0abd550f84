"""A ReAct run whose request outgrows the context window leaves its oldest steps out (ADR-094).

The stand-in answers a step with OpenAI's ``context_length_exceeded`` 400; the next request must
leave the oldest step out (saying so to the model), the run must go on, and the prediction's
trajectory must still hold every step. Native steps, union steps and the extraction, plain and
streamed; a request that does not fit with no step left to leave out raises.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import Reply, StandIn


class Ask(ts.Signature):
    """Answer the question, using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


TOO_LONG = Reply(
    status=400,
    error={
        "message": "This model's maximum context length is 4096 tokens. However, your messages "
        "resulted in 5000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    },
)
CUT = "left out here to fit the model's context window"


def call(name: str, **arguments: Any) -> Reply:
    return Reply(
        tool_calls=[{"name": name, "arguments": json.dumps(arguments)}], finish_reason="tool_calls"
    )


def run(server: StandIn, stream: bool, **options: Any) -> ts.Prediction[Any]:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="k", max_retries=0)
    agent = ts.ReAct(Ask, tools=[lookup], lm=lm, **options)
    try:
        if stream:
            events = list(agent.stream(question="where?"))
            assert isinstance(events[-1], ts.Prediction)
            return events[-1]
        return agent(question="where?")
    finally:
        lm.close()


def sent_text(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_native_step_past_the_window_leaves_the_oldest_step_out(stream: bool) -> None:
    with StandIn() as server:
        server.enqueue(
            call("lookup", query="first"),
            call("lookup", query="second"),
            TOO_LONG,
            TOO_LONG,
            call("finish", answer="here"),
        )
        pred = run(server, stream)
    assert pred.answer == "here"
    assert [c.arguments for c in pred.trajectory.calls] == [
        '{"query": "first"}',
        '{"query": "second"}',
        '{"answer": "here"}',
    ]  # the prediction keeps every step
    third, fourth, fifth = (sent_text(r) for r in server.requests[2:])
    assert "first" in third and CUT not in third
    assert "found first" not in fourth and "found second" in fourth and "Steps 1 to 1" in fourth
    assert "found second" not in fifth and "Steps 1 to 2" in fifth


def test_a_request_past_the_window_with_no_step_left_out_raises() -> None:
    with StandIn() as server:
        server.enqueue(call("lookup", query="first"), TOO_LONG, TOO_LONG)
        with pytest.raises(ts.errors.LMContextLengthError):
            run(server, False)
    assert len(server.requests) == 3  # the one step there was left out once, then no more


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_union_steps_and_the_extraction_leave_the_oldest_step_out_too(stream: bool) -> None:
    with StandIn() as server:
        step = {"reasoning": "look", "next": {"_type": "lookup", "query": "first"}}
        server.enqueue(json.dumps(step), TOO_LONG, json.dumps(step), TOO_LONG)
        server.enqueue(json.dumps({"answer": "extracted"}))
        pred = run(server, stream, mode="union", max_iters=2)
    assert pred.answer == "extracted"
    assert len(pred.trajectory) == 2
    second_step, extraction = sent_text(server.requests[2]), sent_text(server.requests[4])
    assert "Steps 1 to 1" in second_step and "found first" not in second_step
    assert "Steps 1 to 2" in extraction and "found first" not in extraction
