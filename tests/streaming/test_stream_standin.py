"""Streaming over a real socket: the openai SDK against the `StandIn` server's SSE streams.

The stand-in streams every reply in small pieces (8 characters per delta, then a usage-only
chunk), optionally slowly (``chunk_delay``), and counts the streams a client cut off.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

import typedspy as ts
from agent_models import Continue, Decide, SpawnTask
from typedspy.react import ReAct
from typedspy.streaming import (
    OutputDelta,
    PartialPrediction,
    RetryStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from typedspy.testing import Reply, StandIn
from typedspy.tools import ConfirmationRequired, ResumeState, confirm_first, tool


class Answer(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


T = TypeVar("T")
SPAWN = {"_type": "SpawnTask", "description": "cut the release branch today", "priority": "high"}
GOOD = json.dumps({"action": SPAWN, "confidence": 0.8})
BAD = json.dumps({"action": {**SPAWN, "priority": "urgent"}, "confidence": 0.4})
LONG = json.dumps({"action": {"_type": "Continue", "reason": "wait " * 150}, "confidence": 0.5})


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    model = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="sk-standin", max_retries=0)
    yield model
    model.close()  # the client the sync calls used (on typedspy's background loop)


def run(lm: ts.LM, main: Callable[[], Awaitable[T]]) -> T:
    """``asyncio.run(main())``, closing the LM's client before that loop ends."""

    async def closing() -> T:
        try:
            return await main()
        finally:
            await lm.aclose()

    return asyncio.run(closing())


def collect(lm: ts.LM, module: ts.Module, **inputs: Any) -> list[Any]:
    async def main() -> list[Any]:
        return [event async for event in module.astream(**inputs)]

    return run(lm, main)


def partials(events: list[Any]) -> list[PartialPrediction]:
    return [e for e in events if isinstance(e, PartialPrediction)]


def wait_for(check: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return bool(check())


# -- unions -----------------------------------------------------------------------------------


def test_union_partial_names_the_variant_before_the_object_is_complete(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(GOOD, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")
    events = collect(lm, predict, task="Ship the release")

    actions = [(p.values.get("action"), p.in_progress) for p in partials(events)]
    typed = [(a, where) for a, where in actions if isinstance(a, SpawnTask)]
    first, where = typed[0]
    assert where == "action"  # still being written ...
    assert first.model_dump(exclude_unset=True) == {}  # ... the variant is known, no field yet
    # The partial name never picks a member: before `_type` is complete, a plain dict.
    untyped = [a for a, _ in actions[: actions.index((first, where))]]
    assert all(a == {} for a in untyped)
    seen = [a.model_dump(exclude_unset=True) for a, _ in typed]
    assert {"description": "cut the releas"} in seen  # the text so far, 8 characters a delta
    assert {"description": "cut the release branch today", "priority": "hi"} in seen
    final = events[-1]
    assert final.action == SpawnTask(description="cut the release branch today", priority="high")
    assert final.confidence == 0.8
    assert partials(events)[-1].values == dict(final)
    assert final == predict(task="Ship the release")
    assert len(server.requests) == 2 and server.requests[0]["stream"] is True


@pytest.mark.parametrize("raw", ["\n", "\t", "\r\n", "\x00"])
def test_a_raw_control_character_in_a_string_does_not_hide_the_field_from_the_partials(
    server: StandIn, lm: ts.LM, raw: str
) -> None:
    # Invalid JSON, but what models write and what the final parse reads: the partials showed
    # the reason until the newline arrived, then never again, not even once it was complete.
    reason = f"first line{raw}second line"
    reply = {"action": {"_type": "Continue", "reason": reason}, "confidence": 0.5}
    server.enqueue(json.dumps(reply).replace(json.dumps(raw)[1:-1], raw))
    events = collect(lm, ts.Predict(Decide, lm=lm), task="Ship the release")
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.action == Continue(reason=reason)
    shown = [getattr(p.values.get("action"), "reason", None) for p in partials(events)]
    reasons = [r for r in shown if isinstance(r, str)]
    assert all(reason.startswith(r) for r in reasons)
    assert any(raw in r and r != reason for r in reasons)  # shown as it grew, past the newline
    assert partials(events)[-1].values == dict(final)


def test_a_partial_has_a_typed_view_of_its_values(server: StandIn, lm: ts.LM) -> None:
    # Issue 23: the stream's events were `Any`; a partial's `outputs` is the signature's view.
    server.enqueue(GOOD)
    events = list(ts.Predict(Decide, lm=lm, mode="json_schema").stream(task="Ship the release"))
    shown = partials(events)
    assert all(p.signature is Decide for p in shown)
    early = next(p for p in shown if p.in_progress == "action")
    with pytest.raises(AttributeError):
        _ = early.outputs.confidence  # not seen yet
    assert shown[-1].outputs.action == events[-1].outputs.action
    assert shown[-1].outputs.confidence == 0.8
    with pytest.raises(AttributeError, match="no signature"):
        _ = PartialPrediction({"confidence": 0.8}).outputs


# -- retries ----------------------------------------------------------------------------------


def test_a_failed_streamed_attempt_is_followed_by_retry_started(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(BAD, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")
    events = collect(lm, predict, task="Ship the release")

    retry = next(e for e in events if isinstance(e, RetryStarted))
    at = events.index(retry)
    assert retry.attempt == 2
    assert [e.path for e in retry.errors] == [("action", "priority")]
    before = [e for e in events[:at] if isinstance(e, PartialPrediction)]
    after = [e for e in events[at + 1 :] if isinstance(e, PartialPrediction)]
    # The first attempt streamed its partials; its bad priority never validated.
    assert before[-1].values == {"confidence": 0.4}
    assert after[-1].values["action"] == SpawnTask(
        description="cut the release branch today", priority="high"
    )
    deltas = [e.text for e in events[:at] if isinstance(e, OutputDelta)]
    assert "".join(deltas) == BAD
    final = events[-1]
    assert isinstance(final, ts.Prediction) and final.confidence == 0.8
    assert [a.number for a in final.attempts] == [1, 2]
    assert final.attempts[0].raw == BAD and final.attempts[1].raw == GOOD
    assert final.usage == final.attempts[0].usage + final.attempts[1].usage
    assert final.usage.total_tokens > 0
    # The retry sent the failed reply and the feedback, like a non-streamed retry.
    second = server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": BAD}
    assert "action.priority" in second[-1]["content"]


# -- cancellation -----------------------------------------------------------------------------


def test_closing_astream_early_closes_the_http_stream(server: StandIn, lm: ts.LM) -> None:
    server.chunk_delay = 0.01
    server.enqueue(LONG)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")

    async def first_partial() -> PartialPrediction:
        events = predict.astream(task="t")
        async for event in events:
            if isinstance(event, PartialPrediction):
                await events.aclose()  # type: ignore[attr-defined]
                return event
        raise AssertionError("no partial")

    partial = run(lm, first_partial)
    assert partial.in_progress == "action"
    assert wait_for(lambda: server.disconnects == 1)
    assert len(server.requests) == 1  # closing is not a retry


def test_cancelling_the_consuming_task_closes_the_http_stream(server: StandIn, lm: ts.LM) -> None:
    server.chunk_delay = 0.01
    server.enqueue(LONG)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")
    seen: list[Any] = []

    async def consume() -> None:
        async for event in predict.astream(task="t"):
            seen.append(event)

    async def main() -> None:
        task = asyncio.create_task(consume())
        while not any(isinstance(e, PartialPrediction) for e in seen):
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(lm, main)
    assert wait_for(lambda: server.disconnects == 1)
    assert not isinstance(seen[-1], ts.Prediction)


def test_breaking_out_of_the_sync_stream_releases_the_connection(
    server: StandIn, lm: ts.LM
) -> None:
    server.chunk_delay = 0.01
    server.enqueue(LONG)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")

    for event in predict.stream(task="t"):
        if isinstance(event, PartialPrediction):
            break
    assert wait_for(lambda: server.disconnects == 1)


# -- sync iteration ---------------------------------------------------------------------------


def test_sync_stream_yields_the_same_events_and_prediction(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(GOOD, GOOD, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="json_schema")

    async_events = collect(lm, predict, task="Ship")  # (closes its client: the loop ends)
    events = list(predict.stream(task="Ship"))
    plain = predict(task="Ship")

    assert events[:-1] == async_events[:-1]
    assert events[-1] == async_events[-1] == plain
    assert events[-1].usage == plain.usage
    assert "".join(e.text for e in events if isinstance(e, OutputDelta)) == GOOD


# -- ChainOfThought ---------------------------------------------------------------------------


def test_chain_of_thought_streams_its_reasoning_first(server: StandIn, lm: ts.LM) -> None:
    reply = json.dumps({"reasoning": "17 times 3 is 51, so the answer is 51.", "answer": 51})
    server.enqueue(reply)
    cot = ts.ChainOfThought("question -> answer: int", lm=lm, mode="json_schema")
    events = collect(lm, cot, question="What is 17 * 3?")

    fields = [e.field for e in events if isinstance(e, OutputDelta) and e.field is not None]
    assert fields[0] == "reasoning" and fields[-1] == "answer"
    assert fields.index("answer") > len(fields) // 2
    reasoning = [p.values["reasoning"] for p in partials(events) if p.in_progress == "reasoning"]
    assert len(reasoning) >= 4 and len(reasoning[0]) < 8
    assert all(a.startswith(b) for a, b in zip(reasoning[1:], reasoning, strict=False))
    answer_at = next(i for i, p in enumerate(partials(events)) if "answer" in p.values)
    assert partials(events)[answer_at].values["reasoning"] == events[-1].reasoning
    final = events[-1]
    assert final.reasoning == "17 times 3 is 51, so the answer is 51." and final.answer == 51
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["reasoning", "answer"]


# -- ReAct ------------------------------------------------------------------------------------


def test_react_stream_yields_tool_events_in_order_then_the_answer(
    server: StandIn, lm: ts.LM
) -> None:
    @tool
    def search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    @tool
    def broken(query: str) -> str:
        """Always fails."""
        raise RuntimeError("down")

    calls = [
        {"id": "c1", "name": "search", "arguments": '{"query":"paris"}'},
        {"id": "c2", "name": "broken", "arguments": '{"query":"x"}'},
    ]
    end = [{"id": "c3", "name": "finish", "arguments": '{"answer":"Paris has 2.1M"}'}]
    replies = [
        Reply(
            tool_calls=calls,
            finish_reason="tool_calls",
            usage={"prompt_tokens": 40, "completion_tokens": 9},
        ),
        Reply(
            tool_calls=end,
            finish_reason="tool_calls",
            usage={"prompt_tokens": 60, "completion_tokens": 7},
        ),
    ]
    server.enqueue(*replies, *replies)
    agent = ReAct(Answer, tools=[search, broken], lm=lm)
    events = collect(lm, agent, question="Population of Paris?")

    shown = [
        (type(e).__name__, getattr(e, "call_id", None))
        for e in events
        if not isinstance(e, (OutputDelta, PartialPrediction))
    ]
    assert shown == [
        ("ToolCallStarted", "c1"),
        ("ToolCallFinished", "c1"),
        ("ToolCallStarted", "c2"),
        ("ToolCallFinished", "c2"),
        ("AgentPrediction", None),
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    done = [e for e in events if isinstance(e, ToolCallFinished)]
    assert started[0] == ToolCallStarted("c1", "search", {"query": "paris"})
    assert done[0] == ToolCallFinished("c1", "search", "results for paris", error=False)
    assert (
        done[1].error is True and done[1].observation == "Error: broken failed: RuntimeError: down"
    )
    answers = [p.values.get("answer") for p in partials(events)]
    assert answers[0] == "Paris" and answers[-1] == "Paris has 2.1M"
    final = events[-1]
    assert final.answer == "Paris has 2.1M" and final.finished is True and final.steps == 2
    assert final.usage == ts.prediction.Usage(100, 16, 116)  # both steps, from their usage chunks
    plain = agent(question="Population of Paris?")
    assert plain == final and plain.usage == final.usage
    assert list(plain.trajectory) == list(final.trajectory)
    assert [r.get("stream") for r in server.requests] == [True, True, None, None]


def test_react_union_steps_and_extraction_stream(server: StandIn, lm: ts.LM) -> None:
    @tool
    def search(query: str) -> str:
        """Search the web."""
        return f"results for {query}"

    union = ReAct(Answer, tools=[search], lm=lm, mode="union", max_iters=1)
    server.enqueue(
        json.dumps({"reasoning": "look it up", "next": {"_type": "search", "query": "paris"}}),
        json.dumps({"answer": "about 2.1 million"}),
    )
    events = collect(lm, union, question="Population of Paris?")

    kinds = [type(e).__name__ for e in events if not isinstance(e, OutputDelta)]
    assert kinds[:2] == ["ToolCallStarted", "ToolCallFinished"]
    assert kinds[-1] == "AgentPrediction"
    # Only the extraction's partials are passed on: they are the task's own outputs.
    assert {name for p in partials(events) for name in p.values} == {"answer"}
    assert partials(events)[-1].values == {"answer": "about 2.1 million"}
    # `ts.react.AgentEvent[Answer]`: the extraction's partials are of the agent's signature,
    # so their typed view is an `Answer` (not the extraction step's own signature).
    assert all(p.signature is Answer for p in partials(events))
    assert isinstance(partials(events)[-1].outputs, Answer)
    assert partials(events)[-1].outputs.answer == "about 2.1 million"
    final = events[-1]
    assert final.answer == "about 2.1 million" and final.finished is False
    assert [r["stream"] for r in server.requests] == [True, True]
    assert "results for paris" in server.requests[1]["messages"][-1]["content"]


def test_react_stream_pauses_for_a_confirmation_and_resumes_with_its_events(
    server: StandIn, lm: ts.LM
) -> None:
    sent: list[str] = []

    @confirm_first(question="Send an email to {to}?")
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    email = {"id": "call_e", "name": "send_email", "arguments": '{"to":"bob@x.org","body":"hi"}'}
    end = {"id": "call_f", "name": "finish", "arguments": '{"answer":"Bob was told."}'}
    server.enqueue(
        Reply(tool_calls=[email], finish_reason="tool_calls"),
        Reply(tool_calls=[end], finish_reason="tool_calls"),
    )
    agent = ReAct(Answer, tools=[send_email], lm=lm)
    before: list[Any] = []

    async def until_paused() -> ConfirmationRequired:
        with pytest.raises(ConfirmationRequired) as info:
            async for event in agent.astream(question="Tell Bob"):
                before.append(event)
        return info.value

    pause = run(lm, until_paused)
    assert before == [ToolCallStarted("call_e", "send_email", {"to": "bob@x.org", "body": "hi"})]
    assert sent == []

    after = collect(lm, agent, resume_state=ResumeState(pause, "yes"))
    assert after[:2] == [
        ToolCallStarted("call_e", "send_email", {"to": "bob@x.org", "body": "hi"}),
        ToolCallFinished("call_e", "send_email", "sent to bob@x.org", error=False),
    ]
    assert sent == ["bob@x.org"]
    assert after[-1].answer == "Bob was told." and after[-1].steps == 2
    assert len(server.requests) == 2  # the paused step was not asked again
