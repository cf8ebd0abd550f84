"""What a tool raises that a future cannot carry reaches the agent as the tool's failure.

A sync tool runs in a worker thread, and its exception crosses a future on the way back. A
`StopIteration` (``next()`` on an empty iterator) cannot be set on one: asyncio logged a
``TypeError`` and the run waited for ever (only a deadline ended it). A
``concurrent.futures.CancelledError`` (a pool's future the tool waited on was cancelled) was
converted by asyncio into `asyncio.CancelledError`, and escaped ``agent(...)`` as if the call had
been cancelled; so did an async tool's own `CancelledError`. Each is now a `RuntimeError` naming
the tool and what it raised, which the agent reports to the model like any failing tool; a real
cancellation (the deadline's) still ends the run. A module with only a sync ``forward`` runs the
same way.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import respx
from react_wire import BASE_URL, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.react import ReAct

# A bound the fixed code never comes near; on main the StopIteration cases end only here.
DEADLINE = 20.0


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def empty_next(key: str) -> str:
    """Look a key up."""
    return next(iter([]))


def cancelled_pool_future(key: str) -> str:
    """Look a key up."""
    future: concurrent.futures.Future[str] = concurrent.futures.Future()
    future.cancel()
    return future.result()


async def cancelled_task_future(key: str) -> str:
    """Look a key up."""
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    future.cancel()
    return await future


TOOLS: dict[str, tuple[Callable[..., Any], str]] = {
    "a sync StopIteration": (empty_next, "StopIteration"),
    "a sync pool future's CancelledError": (cancelled_pool_future, "CancelledError"),
    "an async CancelledError of its own": (cancelled_task_future, "CancelledError"),
}


@pytest.mark.parametrize("case", list(TOOLS))
def test_the_agent_reads_it_as_a_failed_call_and_goes_on(
    router: respx.MockRouter, case: str
) -> None:
    fn, kind = TOOLS[case]
    router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", fn.__name__, {"key": "k"})), finish_reply(answer="a")]
    )
    agent = ReAct(Answer, tools=[fn], lm=make_lm())
    with ts.context(deadline=DEADLINE):
        pred = agent(question="q")

    assert pred.answer == "a"
    observation = pred.trajectory.calls[0].observation
    assert observation == f"Error: {fn.__name__} failed: RuntimeError: {fn.__name__} raised {kind}"


@pytest.mark.parametrize("case", list(TOOLS))
def test_calling_the_tool_raises_a_runtime_error_from_it(case: str) -> None:
    fn, kind = TOOLS[case]
    tool = ts.tool(fn)
    with pytest.raises(RuntimeError, match=f"^{fn.__name__} raised {kind}$") as caught:
        asyncio.run(asyncio.wait_for(tool.acall({"key": "k"}), DEADLINE))
    assert type(caught.value.__cause__).__name__ == kind


def test_a_cancellation_of_the_call_still_ends_the_run(router: respx.MockRouter) -> None:
    async def wait_forever(key: str) -> str:
        """Look a key up."""
        await asyncio.Event().wait()
        return "never"

    router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", "wait_forever", {"key": "k"}))]
    )
    agent = ReAct(Answer, tools=[wait_forever], lm=make_lm())
    with ts.context(deadline=0.2), pytest.raises(ts.DeadlineExceededError) as caught:
        agent(question="q")
    assert caught.value.stage == "running tool 'wait_forever'"


class Lookup(ts.Module):
    signature = Answer

    def forward(self, question: str) -> dict[str, str]:
        return {"answer": next(iter([]))}


def test_a_sync_forward_raising_stop_iteration_is_a_runtime_error_from_acall() -> None:
    with ts.context(deadline=DEADLINE), pytest.raises(RuntimeError) as caught:
        asyncio.run(Lookup().acall(question="q"))
    assert str(caught.value) == "Lookup.forward raised StopIteration"
    assert isinstance(caught.value.__cause__, StopIteration)
