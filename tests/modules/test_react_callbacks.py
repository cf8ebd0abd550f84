"""ReAct module callbacks: a tool returns a marked callable that changes this run's tools."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import respx
from react_wire import (
    BASE_URL,
    bodies,
    calls_reply,
    finish_reply,
    make_lm,
    tool_message,
    tool_names,
)

import typedspy as ts
from typedspy.react import ReAct, Trajectory
from typedspy.react._run import ModuleContext, is_module_callback, module_callback
from typedspy.tools import (
    ConfirmationRequired,
    ResumeState,
    Tool,
    confirm_first,
    resume,
    tool,
)


class AnswerQuestion(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.fixture
def log() -> list[str]:
    return []


@pytest.fixture
def calculator(log: list[str]) -> Tool:
    @tool
    def calculator(expression: str) -> float:
        """Evaluate an arithmetic expression."""
        log.append(expression)
        return 42.0

    return calculator


@pytest.fixture
def search() -> Tool:
    @tool
    def search(query: str) -> str:
        """Search the web."""
        return "nothing"

    return search


def test_the_marker_marks_and_is_recognised() -> None:
    def plain(context: ModuleContext) -> str:
        return "x"

    assert not is_module_callback(plain)
    assert module_callback(plain) is plain
    assert is_module_callback(plain)
    assert not is_module_callback("a string")


def test_a_module_callback_adds_a_tool_for_the_rest_of_this_run_only(
    router: respx.MockRouter, calculator: Tool, log: list[str]
) -> None:
    seen: list[ModuleContext] = []
    names_then: list[str] = []

    @tool
    def load_calculator():  # type: ignore[no-untyped-def]
        """Make the calculator tool available."""

        @module_callback
        def add(context: ModuleContext) -> str:
            seen.append(context)
            names_then.extend(c.name for c in context.trajectory.calls)
            context.tools.add(calculator)
            return "The calculator is loaded."

        return add

    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "load_calculator", {})),
            calls_reply(("c2", "calculator", {"expression": "6 * 7"})),
            finish_reply(answer="42"),
            finish_reply(answer="again"),
        ]
    )
    agent = ReAct(AnswerQuestion, tools=[load_calculator], lm=make_lm())
    assert agent(question="6 * 7?").answer == "42"
    assert agent(question="second run").answer == "again"

    sent = bodies(route)
    assert tool_names(sent[0]) == ["load_calculator", "finish"]
    assert sent[1]["messages"][-1] == tool_message("c1", "The calculator is loaded.")
    assert tool_names(sent[1]) == ["load_calculator", "calculator", "finish"]
    assert log == ["6 * 7"]
    assert tool_names(sent[3]) == ["load_calculator", "finish"]  # the next run starts afresh
    assert [t.name for t in agent.tools] == ["load_calculator"]
    assert seen[0].module is agent
    assert isinstance(seen[0].trajectory, Trajectory)
    assert names_then == ["load_calculator"]  # the running call is already in the trajectory


def test_an_async_module_callback_can_remove_a_tool(router: respx.MockRouter, search: Any) -> None:
    @tool
    async def forget_search(why: str) -> Any:
        """Drop the search tool."""

        @module_callback
        async def drop(context: ModuleContext) -> None:
            context.tools.remove("search")

        return drop

    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "forget_search", {"why": "done"})),
            finish_reply(answer="a"),
        ]
    )
    ReAct(AnswerQuestion, tools=[search, forget_search], lm=make_lm())(question="q")

    sent = bodies(route)
    assert tool_names(sent[1]) == ["forget_search", "finish"]
    assert sent[1]["messages"][-1]["content"] == "forget_search done."


def test_a_module_callback_adding_a_tool_named_finish_ends_the_run(
    router: respx.MockRouter, calculator: Tool
) -> None:
    # ReAct(tools=[...]) refuses the name; added by a callback, the tool was left out of every
    # later step without a word (the model could never call it), and the callback said "added".
    @tool
    def load() -> Any:
        """Load more tools."""

        @module_callback
        def add(context: ModuleContext) -> str:
            context.tools.add(ts.Tool.from_function(calculator.impl, name="finish"))
            return "added"

        return add

    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", "load", {})), finish_reply(answer="a")]
    )
    agent = ReAct(AnswerQuestion, tools=[load], lm=make_lm())
    with pytest.raises(
        ts.ConfigurationError, match="added a tool named 'finish', which is reserved"
    ):
        agent(question="q")
    assert agent.tools.names == ["load"]  # the agent's own tools are untouched
    assert len(route.calls) == 1


def test_a_module_callback_asking_for_confirmation_pauses_the_run(
    router: respx.MockRouter,
) -> None:
    sent: list[str] = []

    @confirm_first
    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    @tool
    def notify() -> Any:
        """Tell Bob, in a callback."""

        @module_callback
        async def tell(context: ModuleContext) -> str:
            await send_email.acall({"to": "bob@example.com"})
            return "Bob was told."

        return tell

    notify_call = calls_reply(("call_n", "notify", {}))
    route = router.post("/chat/completions").mock(
        side_effect=[notify_call, notify_call, finish_reply(answer="told")]
    )
    agent = ReAct(AnswerQuestion, tools=[notify], lm=make_lm())
    with pytest.raises(ConfirmationRequired) as info:
        agent(question="Tell Bob.")
    assert info.value.tool_call["name"] == "send_email"
    assert info.value.context["react"].pending_call.name == "notify"  # the call that paused
    assert sent == []

    # Answered around the agent, the person's "yes" lets the callback's call run, once.
    with resume(ResumeState(info.value, "yes")):
        pred = agent(question="Tell Bob.")

    assert pred.answer == "told"
    assert sent == ["bob@example.com"]
    assert bodies(route)[2]["messages"][-1] == tool_message("call_n", "Bob was told.")


def test_a_failing_module_callback_is_news_for_the_model_unless_the_program_is_wrong(
    router: respx.MockRouter,
) -> None:
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    @tool
    def broken() -> Any:
        """A callback that fails."""

        @module_callback
        def fail(context: ModuleContext) -> str:
            raise ValueError("the index is offline")

        return fail

    @tool
    def misused() -> Any:
        """A callback that builds an agent wrong."""

        @module_callback
        def build(context: ModuleContext) -> str:
            return str(ReAct(AnswerQuestion, tools=[echo], max_iters=0))

        return build

    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_b", "broken", {})),
            finish_reply(answer="no index"),
            calls_reply(("call_m", "misused", {})),
        ]
    )
    agent = ReAct(AnswerQuestion, tools=[broken, misused], lm=make_lm())
    assert agent(question="Look it up.").answer == "no index"
    assert bodies(route)[1]["messages"][-1] == tool_message(
        "call_b", "Error: broken failed: ValueError: the index is offline"
    )
    # The old agent showed this to the model as a failure and went on.
    with pytest.raises(ts.ConfigurationError, match=r"max_iters"):
        agent(question="Echo hi.")
    assert len(route.calls) == 3


@pytest.mark.parametrize("how", ["resume_state", "around"])
@pytest.mark.parametrize("caller", ["sync", "async"])
def test_a_sync_module_callback_runs_its_approved_call_sync(
    router: respx.MockRouter, how: str, caller: str
) -> None:
    # A sync callback calling a confirm_first tool synchronously paused, and once approved
    # failed: it ran on the agent's own loop, where a sync call is refused (ADR-101). It runs
    # in a worker thread, as a sync tool does, from a sync or an async caller alike.
    sent: list[str] = []

    @confirm_first
    @tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return f"sent to {to}"

    class Mailer(ts.Module):
        signature = ts.make_signature("to: str -> result: str")

        def forward(self, to: str) -> ts.Prediction[Any]:
            return ts.Prediction(self.signature, send_email(to=to))

    @tool
    def notify() -> Any:
        """Tell Bob, in a sync callback, through a module."""

        @module_callback
        def tell(context: ModuleContext) -> str:
            return f"Bob: {Mailer()(to='bob@example.com').result}"

        return tell

    notify_call = calls_reply(("call_n", "notify", {}))
    again = [notify_call] if how == "around" else []  # around the agent: a new run
    route = router.post("/chat/completions").mock(
        side_effect=[notify_call, *again, finish_reply(answer="told")]
    )
    agent = ReAct(AnswerQuestion, tools=[notify], lm=make_lm())

    def call(**inputs: Any) -> Any:
        if caller == "sync":
            return agent(question="Tell Bob.", **inputs)
        return asyncio.run(agent.acall(question="Tell Bob.", **inputs))

    with pytest.raises(ConfirmationRequired) as info:
        call()
    assert info.value.tool_call["name"] == "send_email" and sent == []
    state = ResumeState(info.value, "yes")
    if how == "resume_state":
        pred = call(resume_state=state)
    else:
        with resume(state):
            pred = call()

    assert pred.answer == "told"
    assert sent == ["bob@example.com"]
    assert bodies(route)[-1]["messages"][-1] == tool_message(
        "call_n", "Bob: sent to bob@example.com"
    )
