"""A confirmation asked inside a sub-agent (an agent used as another agent's tool): the outer
run pauses at the inner call, and resuming it resumes the inner run where it paused (ADR-099)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.react import ReAct
from typedspy.testing import Reply, StandIn
from typedspy.tools import ConfirmationRequired, ResumeState, Tool, confirm_first, tool

SECRET = "test-secret-for-signing-resume-states"  # at least 32 bytes


class Task(ts.Signature):
    """Do the task."""

    task: str = ts.InputField()
    result: str = ts.OutputField()


class Ask(ts.Signature):
    """Answer, delegating what needs doing."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def call(name: str, arguments: dict[str, Any], call_id: str) -> Reply:
    listed = [{"id": call_id, "name": name, "arguments": json.dumps(arguments)}]
    return Reply(tool_calls=listed, finish_reason="tool_calls")


class Agents:
    """An outer agent whose one tool, ``delegate``, is an inner agent with a confirm_first tool."""

    def __init__(
        self,
        server: StandIn,
        *,
        shape: str = "agent",
        inner_signature: type[ts.Signature] = Task,
    ) -> None:
        self.sent: list[str] = []

        @confirm_first
        @tool
        def send_email(to: str) -> str:
            """Send an email."""
            self.sent.append(to)
            return f"sent to {to}"

        self.lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile="openai")
        inner = ReAct(inner_signature, tools=[send_email], lm=self.lm, max_iters=3, mode="tools")
        delegate = Tool.from_module(inner, name="delegate", description="Delegate a task.")
        if shape == "confirmed":  # the sub-agent tool asks first too
            delegate = delegate.with_confirmation()
        elif shape == "two-agents":  # a function running two agents over one signature
            researcher = ReAct(Task, tools=[], lm=self.lm, max_iters=3, mode="tools")

            async def run_both(task: str) -> str:
                """Delegate a task."""
                found = await researcher.acall(task=f"research {task}")
                done = await inner.acall(task=task)
                return f"{found.result} / {done.result}"

            delegate = Tool.from_function(run_both, name="delegate")
        elif shape == "flaky":  # a function whose second run fails before it starts the agent
            runs: list[str] = []

            async def run_flaky(task: str) -> str:
                """Delegate a task."""
                runs.append(task)
                if len(runs) > 1:
                    raise TimeoutError("the upstream did not answer")
                return str((await inner.acall(task=task)).result)

            delegate = Tool.from_function(run_flaky, name="delegate")
        self.outer = ReAct(Ask, tools=[delegate], lm=self.lm, max_iters=3, mode="tools")

    def pause(self) -> ConfirmationRequired:
        with pytest.raises(ConfirmationRequired) as info:
            self.outer(question="Please email Bob.")
        return info.value

    def resume(self, state: ResumeState) -> str:
        answer: str = self.outer(question="Please email Bob.", resume_state=state).answer
        return answer


DELEGATE = call("delegate", {"task": "email bob"}, "outer-1")
SEND = call("send_email", {"to": "bob"}, "inner-1")


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as standin:
        yield standin


@pytest.fixture
def make(server: StandIn) -> Iterator[Callable[..., Agents]]:
    built: list[Agents] = []

    def agents(**options: Any) -> Agents:
        built.append(Agents(server, **options))
        return built[-1]

    yield agents
    for each in built:
        each.lm.close()


def test_the_outer_run_pauses_at_the_inner_call_and_resumes_the_inner_run(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    server.enqueue(DELEGATE, SEND)
    agents = make()
    pause = agents.pause()
    # The person is asked about the call that needs them, with the inner model's call id.
    assert pause.tool_call == {"name": "send_email", "arguments": {"to": "bob"}, "id": "inner-1"}
    assert "send_email" in pause.question and agents.sent == []
    saved = ResumeState(pause, "yes").to_json(secret=SECRET)

    server.enqueue(call("finish", {"result": "Bob emailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Done: Bob emailed"}, "outer-2"))
    fresh = make()  # another process: a saved state, new agents
    answer = fresh.resume(ResumeState.from_json(saved, secret=SECRET))

    assert answer == "Done: Bob emailed"
    assert fresh.sent == ["bob"]  # the approved call ran once, where the inner run paused
    assert len(server.requests) == 4  # no step was asked again: outer, inner, inner, outer
    inner_finish = server.requests[2]["messages"]
    assert inner_finish[-1] == {"role": "tool", "tool_call_id": "inner-1", "content": "sent to bob"}
    outer_finish = server.requests[3]["messages"]
    assert outer_finish[-1]["tool_call_id"] == "outer-1"
    assert "Bob emailed" in outer_finish[-1]["content"]

    # The same saved answer again: the outer call's outcome is replayed, nothing runs twice.
    server.enqueue(call("finish", {"answer": "Done again"}, "outer-3"))
    assert fresh.resume(ResumeState.from_json(saved, secret=SECRET)) == "Done again"
    assert fresh.sent == ["bob"]


@pytest.mark.parametrize(
    ("response", "told"),
    [
        ("no", "The user rejected this call to send_email; it was not run."),
        ("Write to Alice instead", "The user did not run this call to send_email and said"),
    ],
)
def test_a_rejection_goes_to_the_inner_run_whose_model_is_told(
    server: StandIn, make: Callable[..., Agents], response: Any, told: str
) -> None:
    server.enqueue(DELEGATE, SEND)
    agents = make()
    state = ResumeState(agents.pause(), response)
    server.enqueue(call("finish", {"result": "Bob was not emailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Not emailed"}, "outer-2"))

    assert agents.resume(state) == "Not emailed"
    assert agents.sent == []
    observation = server.requests[2]["messages"][-1]
    assert observation["tool_call_id"] == "inner-1" and observation["content"].startswith(told)
    assert "Bob was not emailed" in server.requests[3]["messages"][-1]["content"]


def test_edited_arguments_apply_to_the_inner_call_only(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    server.enqueue(DELEGATE, SEND)
    agents = make()
    state = ResumeState(agents.pause(), {"to": "alice"})
    server.enqueue(call("finish", {"result": "Alice emailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Done"}, "outer-2"))

    assert agents.resume(state) == "Done"
    assert agents.sent == ["alice"]
    outer_call = server.requests[3]["messages"][-2]["tool_calls"][0]["function"]
    assert json.loads(outer_call["arguments"]) == {"task": "email bob"}  # the outer call as made
    inner_call = server.requests[2]["messages"][-2]["tool_calls"][0]["function"]
    assert json.loads(inner_call["arguments"]) == {"to": "alice"}  # the inner one as it ran


def test_a_sub_agent_tool_that_asks_first_is_not_asked_again_when_its_agent_resumes(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # The delegate call's approval was used when it ran; run again for the inner answer, it
    # asked again, and that pause dropped the inner answer (the inner run started afresh).
    server.enqueue(DELEGATE)
    agents = make(shape="confirmed")
    first = agents.pause()
    assert first.tool_call["name"] == "delegate"
    server.enqueue(SEND)
    with pytest.raises(ConfirmationRequired) as info:
        agents.resume(ResumeState(first, "yes"))
    assert info.value.tool_call["name"] == "send_email"
    server.enqueue(call("finish", {"result": "Bob emailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Done"}, "outer-2"))

    assert agents.resume(ResumeState(info.value, "yes")) == "Done"
    assert agents.sent == ["bob"] and len(server.requests) == 4


def test_the_answer_reaches_the_paused_run_among_runs_over_one_signature(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # A tool running a researcher, then the mailer (both over Task): the researcher, first to
    # start on the re-run, took the mailer's answer and state; the email was never sent.
    server.enqueue(DELEGATE, call("finish", {"result": "found"}, "research-1"), SEND)
    agents = make(shape="two-agents")
    state = ResumeState(agents.pause(), "yes")
    server.enqueue(call("finish", {"result": "found again"}, "research-2"))  # it runs again
    server.enqueue(call("finish", {"result": "mailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Done"}, "outer-2"))

    assert agents.resume(state) == "Done"
    assert agents.sent == ["bob"]
    assert "found again / mailed" in server.requests[-1]["messages"][-1]["content"]


def test_a_state_whose_sub_agent_no_longer_runs_is_refused_not_dropped(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # A program changed since the pause (the sub-agent's signature renamed): its answer was
    # silently unused, the sub-agent started afresh and asked the person again.
    class Chore(ts.Signature):
        """Do the chore."""

        task: str = ts.InputField()
        result: str = ts.OutputField()

    server.enqueue(DELEGATE, SEND)
    state = ResumeState(make().pause(), "yes")
    server.enqueue(call("send_email", {"to": "bob"}, "inner-9"))
    changed = make(inner_signature=Chore)

    with pytest.raises(ts.ConfigurationError, match=r"a ReAct run over 'Task' .* inside delegate"):
        changed.resume(state)
    assert changed.sent == []


def test_edits_to_a_sub_agent_tool_that_asks_first_stand_when_its_agent_resumes(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # The edited call's agent paused inside it: the pause kept the call as the model made it,
    # and its re-run was approved (without asking) with the values the person had replaced.
    server.enqueue(DELEGATE)
    agents = make(shape="confirmed")
    first = agents.pause()
    server.enqueue(call("send_email", {"to": "carol"}, "inner-1"))
    with pytest.raises(ConfirmationRequired) as info:
        agents.resume(ResumeState(first, {"task": "email carol"}))
    server.enqueue(call("finish", {"result": "Carol emailed"}, "inner-2"))
    server.enqueue(call("finish", {"answer": "Done"}, "outer-2"))

    assert agents.resume(ResumeState(info.value, "yes")) == "Done"
    assert agents.sent == ["carol"] and len(server.requests) == 4
    inner_task = server.requests[2]["messages"][1]["content"]
    assert "email carol" in inner_task  # the sub-agent resumed with the edited inputs
    outer_call = server.requests[3]["messages"][-2]["tool_calls"][0]["function"]
    assert json.loads(outer_call["arguments"]) == {"task": "email carol"}


def test_a_call_failing_before_its_agent_resumes_is_a_failed_observation(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # A transient failure of the re-run was blamed on a changed program (ConfigurationError),
    # and the claimed pause could never be resumed after it.
    server.enqueue(DELEGATE, SEND)
    agents = make(shape="flaky")
    state = ResumeState(agents.pause(), "yes")
    server.enqueue(call("finish", {"answer": "Could not email Bob"}, "outer-2"))

    assert agents.resume(state) == "Could not email Bob"
    assert agents.sent == []
    assert "the upstream did not answer" in server.requests[-1]["messages"][-1]["content"]


def test_a_tool_raising_its_own_pause_is_resumed_at_the_models_call(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    # Without nesting the pause names the model's call id, whatever id the raiser set.
    class Custom(ts.Signature):
        """Ask first."""

        x: int = ts.InputField()
        ok: str = ts.OutputField()

    asked: list[int] = []

    def ask_first(x: int) -> str:
        """Ask a person first."""
        asked.append(x)
        if len(asked) == 1:
            raise ConfirmationRequired(
                "Go?", confirmation_id="c", tool_call={"name": "ask_first", "id": "mine"}
            )
        return "went"

    agents = make()
    agent = ReAct(Custom, tools=[tool(ask_first)], lm=agents.lm, max_iters=3, mode="tools")
    server.enqueue(call("ask_first", {"x": 1}, "model-1"))
    with pytest.raises(ConfirmationRequired) as info:
        agent(x=1)
    assert info.value.tool_call["id"] == "model-1"
    server.enqueue(call("finish", {"ok": "went"}, "model-2"))
    assert agent(x=1, resume_state=ResumeState(info.value, "yes")).ok == "went"


def test_replaying_an_answer_after_the_sub_agent_paused_again_says_so(
    server: StandIn, make: Callable[..., Agents]
) -> None:
    server.enqueue(DELEGATE, SEND)
    agents = make()
    first = ResumeState(agents.pause(), "yes")
    server.enqueue(call("send_email", {"to": "carol"}, "inner-2"))
    with pytest.raises(ConfirmationRequired) as again:
        agents.resume(first)
    assert agents.sent == ["bob"] and again.value.tool_call["arguments"] == {"to": "carol"}

    with pytest.raises(ts.errors.ResumeConflictError, match="a sub-agent in it paused again"):
        agents.resume(first)  # a retried request: the first answer was used
    assert agents.sent == ["bob"]
