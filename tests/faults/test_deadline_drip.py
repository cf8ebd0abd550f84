"""Deadlines over a real socket: a drip, a stall, an endless stream (ADR-030).

Every test is bounded: the deadlines under test are fractions of a second, and an outer
``asyncio.wait_for`` (or the drip server stopping) ends a test that the deadline failed to end.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from drip import completion, drip_server

import typedspy as ts
from faults.server import FaultServer
from faults.server import Reply as FaultReply
from typedspy.streaming import OutputDelta
from typedspy.testing import Reply, StandIn

ANSWER = completion('{"answer": "hi"}')
SAFETY = 10.0  # seconds: a test whose deadline did not work fails here instead of hanging


@contextmanager
def lm_for(base_url: str, **options: Any) -> Iterator[ts.LM]:
    options.setdefault("profile", "openai")  # a transport fault server: nothing to identify
    lm = ts.LM("drip-1", base_url=base_url, api_key="sk-drip", max_retries=0, **options)
    try:
        yield lm
    finally:
        lm.close()


def test_a_drip_is_cut_by_the_deadline_not_let_through_by_the_read_timeout() -> None:
    # One byte per 50 ms passes a 1 s per-read timeout for ever (the body takes 15 s); the
    # deadline ends it. The first call (answered at once) builds the client.
    script = (("reply", ANSWER), ("drip", ANSWER, 0.05))
    with drip_server(*script) as server, lm_for(server.base_url, timeout=1) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")
        with ts.context(lm=lm):
            assert predict(question="hi").answer == "hi"
        start = time.monotonic()
        with ts.context(lm=lm, deadline=1), pytest.raises(ts.DeadlineExceededError) as caught:
            predict(question="hi")
        took = time.monotonic() - start
        assert server.gone.wait(SAFETY)  # the connection was closed, not left dripping
        assert server.requests == 2
    error = caught.value
    assert isinstance(error, TimeoutError)
    assert (error.limit, error.seconds, error.requests, error.attempts) == ("deadline", 1, 1, 1)
    assert error.stage == "waiting for a response"
    assert 1 <= error.elapsed < 3 and took < 3
    assert "Predict(" in str(error) and "deadline of 1 s" in str(error)
    assert "1 request(s) sent" in str(error)


def test_the_deadline_covers_retries_and_says_how_far_the_call_got() -> None:
    # Attempt 1 answers with no JSON (a retry follows), attempt 2 stalls.
    script = (("reply", ANSWER), ("reply", completion("no json here")), ("stall",))
    with drip_server(*script) as server, lm_for(server.base_url) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")

        async def call() -> None:
            await lm.acall("warm up")  # builds the client: the deadline bounds the call alone
            with ts.context(lm=lm, deadline=0.5):
                await asyncio.wait_for(predict.acall(question="hi"), SAFETY)

        with pytest.raises(ts.DeadlineExceededError) as caught:
            asyncio.run(call())
    assert (caught.value.requests, caught.value.attempts) == (2, 2)
    assert caught.value.stage == "waiting for a response"
    assert server.requests == 3


def test_an_endless_stream_ends_at_the_call_deadline() -> None:
    script = (("reply", ANSWER), ("endless", "x", 0.01))
    with drip_server(*script) as server, lm_for(server.base_url) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")
        seen: list[object] = []

        async def consume() -> None:
            await lm.acall("warm up")
            with ts.context(lm=lm, deadline=0.5):
                async for event in predict.astream(question="hi"):
                    seen.append(event)

        with pytest.raises(ts.DeadlineExceededError) as caught:
            asyncio.run(asyncio.wait_for(consume(), SAFETY))
        assert server.gone.wait(SAFETY)
    error = caught.value
    assert error.limit == "deadline" and error.stage == "streaming the reply"
    assert error.streamed > 0 and error.streamed == sum(len(e.text) for e in seen)  # type: ignore[attr-defined]
    assert f"{error.streamed:,} characters streamed" in str(error)
    assert all(isinstance(e, OutputDelta) for e in seen)


def test_a_stream_that_never_ends_is_stopped_by_the_stream_deadline() -> None:
    # No call deadline: the per-stream bound (600 s by default) is what ends it.
    with drip_server(("endless", "x", 0.01)) as server, lm_for(server.base_url) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")
        seen: list[OutputDelta] = []
        with ts.context(lm=lm, stream_deadline=0.3):
            with pytest.raises(ts.DeadlineExceededError) as caught:
                for event in predict.stream(question="hi"):
                    assert isinstance(event, OutputDelta)
                    seen.append(event)
    assert caught.value.limit == "stream_deadline" and caught.value.seconds == 0.3
    assert "stream_deadline of 0.3 s" in str(caught.value)
    assert ts.settings.get_settings().stream_deadline == 600.0  # the default
    # It names the one request it bounds, and what of it arrived (on the code before: "0
    # request(s) sent" and nothing streamed, as if it had not been sent at all).
    assert (caught.value.requests, caught.value.streamed) == (1, sum(len(e.text) for e in seen))
    assert caught.value.streamed > 0
    assert f"1 request(s) sent, {caught.value.streamed:,} characters streamed" in str(caught.value)


@pytest.mark.parametrize("cut", ["consumer stops", "deadline", "stream_deadline"])
def test_a_budget_counts_a_stream_cut_midway(cut: str) -> None:
    # The endpoint read the prompt and generated what arrived (and more, until it saw the client
    # go), but reports usage only at a stream's end. On the code before, a cut stream counted
    # nothing, so a budget was never passed by calls that kept being cut.
    budget = ts.limits.Budget(total_tokens=1_000_000)
    seen: list[OutputDelta] = []
    with drip_server(("endless", "xxxx", 0.01)) as server, lm_for(server.base_url) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")
        limits = {"deadline": 0.5} if cut == "deadline" else {}
        limits |= {"stream_deadline": 0.5} if cut == "stream_deadline" else {}
        with ts.context(lm=lm, budget=budget, **limits):
            try:
                for event in predict.stream(question="hi"):
                    assert isinstance(event, OutputDelta)
                    seen.append(event)
                    if cut == "consumer stops" and len(seen) == 5:
                        break
            except ts.DeadlineExceededError as exc:
                assert exc.limit == cut
    assert len(seen) >= 5 if cut == "consumer stops" else seen
    assert budget.usage.prompt_tokens > 0  # its estimate: none was reported
    assert budget.usage.completion_tokens >= len("".join(e.text for e in seen)) // 4 > 0
    assert budget.requests == 1


def test_a_stalled_tool_step_in_react_ends_at_the_deadline() -> None:
    started: list[str] = []

    async def lookup(query: str) -> str:
        """Look something up (never returns)."""
        started.append(query)
        await asyncio.Event().wait()
        return query

    call = {"name": "lookup", "arguments": {"query": "x"}}
    with StandIn() as server, lm_for(server.base_url) as lm:
        server.enqueue("warm", Reply(tool_calls=[call]))
        agent = ts.ReAct("question -> answer", tools=[lookup])

        async def run() -> None:
            await lm.acall("warm up")
            with ts.context(lm=lm, deadline=0.5):
                await asyncio.wait_for(agent.acall(question="hi"), SAFETY)

        with pytest.raises(ts.DeadlineExceededError) as caught:
            asyncio.run(run())
    assert started == ["x"]
    assert caught.value.tool_calls == 1 and caught.value.stage == "running tool 'lookup'"


def test_the_consumer_is_never_interrupted_between_events() -> None:
    with StandIn() as server, lm_for(server.base_url) as lm:
        server.enqueue('{"answer": "a fairly long answer, streamed in pieces"}')
        predict = ts.Predict("question -> answer", mode="prompt")

        async def consume() -> object:
            with ts.context(lm=lm, deadline=1):
                events = predict.astream(question="hi")
                first = await events.__anext__()
                await asyncio.sleep(1.2)  # the consumer's own work outlives the deadline
                with pytest.raises(ts.DeadlineExceededError):
                    await events.__anext__()
                await events.aclose()
            return first

        assert asyncio.run(consume()) is not None


def test_a_nested_module_call_runs_under_the_enclosing_deadline() -> None:
    class Outer(ts.Module):
        def __init__(self) -> None:
            self.inner = ts.Predict("question -> answer", mode="prompt")

        async def aforward(self, *, question: str) -> object:
            with ts.context(deadline=60):  # a looser deadline inside cannot extend the outer one
                return await self.inner.acall(question=question)

    with drip_server(("stall",)) as server, lm_for(server.base_url) as lm:
        with ts.context(lm=lm, deadline=0.5), pytest.raises(ts.DeadlineExceededError) as caught:
            asyncio.run(asyncio.wait_for(Outer().acall(question="hi"), SAFETY))
    assert caught.value.seconds == 0.5 and "Outer" in str(caught.value)
    assert caught.value.elapsed < 3


@pytest.mark.parametrize("value", [0, -1, True, "5"])
def test_deadline_settings_are_checked(value: object) -> None:
    with pytest.raises(ts.ConfigurationError, match="deadline"):
        ts.context(deadline=value)  # type: ignore[arg-type]
    with pytest.raises(ts.ConfigurationError, match="stream_deadline"):
        ts.context(stream_deadline=value)  # type: ignore[arg-type]


def test_a_sync_call_stalled_on_its_own_request_ends_at_the_deadline() -> None:
    # ADR-064: a sync call's own request under a deadline is sent with the async client on the
    # thread's loop, so the deadline's timer ends the stall, as the same typed error, the SDK
    # not retrying. (The first call, without a deadline, is sent with the blocking client.)
    with drip_server(("reply", ANSWER), ("stall",)) as server, lm_for(server.base_url) as lm:
        predict = ts.Predict("question -> answer", mode="prompt")
        with ts.context(lm=lm):
            predict(question="warm up")
        start = time.monotonic()
        with ts.context(lm=lm, deadline=0.5), pytest.raises(ts.DeadlineExceededError) as caught:
            predict(question="hi")
        took = time.monotonic() - start
        assert server.requests == 2
    assert (caught.value.limit, caught.value.requests) == ("deadline", 1)
    assert caught.value.stage == "waiting for a response"
    assert took < 3


def test_a_sync_calls_wait_between_retries_ends_at_the_deadline() -> None:
    # The SDK sleeps 30 s (Retry-After) before retrying a 503: the deadline's timer cuts the
    # wait (a blocking client would sleep through it) and the retry is not sent.
    busy = FaultReply.json({"error": {"message": "busy"}}, status=503)
    busy = FaultReply(busy.status, {**busy.headers, "retry-after": "30"}, busy.pieces)
    with FaultServer(busy) as server:
        lm = ts.LM("m", base_url=server.url, api_key="sk-test", max_retries=2)
        try:
            start = time.monotonic()
            with ts.context(lm=lm, deadline=0.5), pytest.raises(ts.DeadlineExceededError):
                ts.Predict("question -> answer", mode="prompt")(question="hi")
            took = time.monotonic() - start
        finally:
            lm.close()
        assert len(server.requests) == 1
    assert took < 10


def test_a_module_call_in_a_sync_tool_ends_at_the_agents_deadline() -> None:
    # The tool runs in a worker thread, its Predict in that thread's own task: under a bound
    # with the agent's expiry and its own timer, not unbounded for want of the agent's task.
    call = {"name": "ask_elsewhere", "arguments": {"query": "x"}}
    with (
        StandIn() as server,
        drip_server(("stall",)) as stalled,
        lm_for(server.base_url) as lm,
        lm_for(stalled.base_url) as elsewhere,
    ):
        inner = ts.Predict("question -> answer", mode="prompt", lm=elsewhere)

        def ask_elsewhere(query: str) -> str:
            """Ask another model (its server never answers)."""
            return str(inner(question=query).answer)

        server.enqueue("warm", Reply(tool_calls=[call]))
        agent = ts.ReAct("question -> answer", tools=[ask_elsewhere])

        async def run() -> None:
            await lm.acall("warm up")
            with ts.context(lm=lm, deadline=0.5):
                await asyncio.wait_for(agent.acall(question="hi"), SAFETY)

        with pytest.raises(ts.DeadlineExceededError) as caught:
            asyncio.run(run())  # the safety net would raise TimeoutError
    assert caught.value.seconds == 0.5


def test_no_stream_deadline_streams_to_the_end() -> None:
    with StandIn() as server, lm_for(server.base_url) as lm:
        server.enqueue('{"answer": "streamed whole"}')
        with ts.context(lm=lm, stream_deadline=None, deadline=None):
            events = list(ts.Predict("question -> answer", mode="prompt").stream(question="q"))
    assert events[-1].answer == "streamed whole"
