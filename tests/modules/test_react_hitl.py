"""ReAct with a tool that needs a person's confirmation: pause, answer, resume."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from react_wire import BASE_URL, assistant, bodies, calls_reply, make_lm, tool_message, tool_names
from react_wire import finish_reply as finish_with

import typedspy as ts
from typedspy.errors import ConfigurationError, ResumeStateError
from typedspy.react import ReAct
from typedspy.tools import ConfirmationRequired, ResumeState, Tool, confirm_first, resume, tool

QUESTION = "Tell Bob the launch moved."
SEARCH = ("call_s", "search", {"query": "launch date"})
EMAIL = ("call_e", "send_email", {"to": "bob@example.com", "body": "The launch moved."})
EMAIL_ARGS = {"to": "bob@example.com", "body": "The launch moved."}
SECRET = "test-secret-for-signing-resume-states"  # at least 32 bytes


class Notify(ts.Signature):
    """Notify people about changes."""

    question: str = ts.InputField()
    summary: str = ts.OutputField()


def finish_reply(summary: str = "Bob was told.") -> httpx.Response:
    return finish_with("call_f", summary=summary)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.fixture
def counts() -> Counter[str]:
    return Counter()


@pytest.fixture
def sent() -> list[tuple[str, str]]:
    return []


@pytest.fixture
def tools(counts: Counter[str], sent: list[tuple[str, str]]) -> list[Tool]:
    @tool
    def search(query: str) -> str:
        """Search the calendar."""
        counts["search"] += 1
        return "The launch is on Friday."

    @confirm_first(question="Send an email to {to}?")
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        counts["send_email"] += 1
        sent.append((to, body))
        return f"sent to {to}"

    return [search, send_email]


def paused(agent: ReAct[Notify]) -> ConfirmationRequired:
    with pytest.raises(ConfirmationRequired) as info:
        agent(question=QUESTION)
    return info.value


def test_the_pause_carries_the_run_state(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    router.post("/chat/completions").mock(side_effect=[calls_reply(SEARCH), calls_reply(EMAIL)])
    exc = paused(ReAct(Notify, tools=tools, lm=make_lm()))

    assert exc.question == "Send an email to bob@example.com?"
    assert exc.tool_call == {"name": "send_email", "arguments": EMAIL_ARGS, "id": "call_e"}
    state = exc.context["react"]  # a typed model (issue 22): ReAct validates it on resumption
    assert isinstance(state, ts.react.PausedRun)
    assert (state.step, state.call, state.mode) == (1, 0, "tools")
    assert state.inputs == {"question": QUESTION}
    assert state.pending_call is not None and state.pending_call.name == "send_email"
    assert state.trajectory[0].calls[0].observation == "The launch is on Friday."
    assert state.trajectory[1].calls[0].observation is None
    assert state.tools == ["search", "send_email"]
    saved = ResumeState(exc, "yes").to_dict(secret=SECRET)["context"]["react"]
    assert saved == state.model_dump(mode="json")  # signed as Pydantic dumps it, no `_type`
    assert counts == Counter(search=1)


def test_approved_call_runs_once_and_earlier_calls_are_not_repeated(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str], sent: list[Any]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply()]
    )
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    exc = paused(agent)
    pred = agent(question=QUESTION, resume_state=ResumeState(exc, "yes"))

    assert pred.summary == "Bob was told."
    assert counts == Counter(search=1, send_email=1)
    assert sent == [("bob@example.com", "The launch moved.")]
    requests = bodies(route)
    assert len(requests) == 3
    assert requests[2]["messages"][2:] == [
        assistant(SEARCH),
        tool_message("call_s", "The launch is on Friday."),
        assistant(EMAIL),
        tool_message("call_e", "sent to bob@example.com"),
    ]
    assert pred.steps == 3


def test_rejected_call_is_not_run_and_the_model_is_told(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply("Not sent.")]
    )
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    pred = agent(question=QUESTION, resume_state=ResumeState(paused(agent), "no"))

    assert pred.summary == "Not sent."
    assert counts == Counter(search=1)
    assert bodies(route)[2]["messages"][-1] == tool_message(
        "call_e", "The user rejected this call to send_email; it was not run."
    )


def test_edited_arguments_run_and_the_model_sees_the_call_as_made(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply()]
    )
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    state = ResumeState(paused(agent), {"to": "carol@example.com"})
    agent(question=QUESTION, resume_state=state)

    assert sent == [("carol@example.com", "The launch moved.")]
    edited = ("call_e", "send_email", {"to": "carol@example.com", "body": "The launch moved."})
    assert bodies(route)[2]["messages"][-2:] == [
        assistant(edited),
        tool_message(
            "call_e",
            "(The user edited the arguments before approving the call.) sent to carol@example.com",
        ),
    ]


def test_feedback_becomes_the_observation(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply()]
    )
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    agent(question=QUESTION, resume_state=ResumeState(paused(agent), "Wait until Monday"))

    assert counts["send_email"] == 0
    assert bodies(route)[2]["messages"][-1]["content"] == (
        "The user did not run this call to send_email and said: Wait until Monday"
    )


def test_resume_from_json_in_a_fresh_agent(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply()]
    )
    pause = paused(ReAct(Notify, tools=tools, lm=make_lm()))
    saved = ResumeState(pause, "approve").to_json(secret=SECRET)

    fresh = ReAct(Notify, tools=tools, lm=make_lm())  # as a new process would build it
    state = ResumeState.from_json(saved, secret=SECRET)
    pred = fresh(resume_state=state)  # the saved inputs are used

    assert pred.summary == "Bob was told."
    assert counts == Counter(search=1, send_email=1)
    requests = bodies(route)
    assert len(requests) == 3
    assert requests[2]["messages"][1]["content"] == f"<question>\n{QUESTION}\n</question>"
    spent = sum(json.loads(c.response.content)["usage"]["total_tokens"] for c in route.calls)
    assert pred.usage.total_tokens == spent


def test_parallel_calls_resume_after_the_paused_one(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    again = ("call_s2", "search", {"query": "venue"})
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH, EMAIL, again), finish_reply()]
    )
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    exc = paused(agent)
    assert exc.context["react"].call == 1
    assert counts == Counter(search=1)
    agent(question=QUESTION, resume_state=ResumeState(exc, True))

    assert counts == Counter(search=2, send_email=1)
    assert bodies(route)[1]["messages"][2:] == [
        assistant(SEARCH, EMAIL, again),
        tool_message("call_s", "The launch is on Friday."),
        tool_message("call_e", "sent to bob@example.com"),
        tool_message("call_s2", "The launch is on Friday."),
    ]


def test_an_approval_covers_the_paused_call_only(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    repeat = ("call_e2", "send_email", EMAIL_ARGS)
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL), calls_reply(repeat)])
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    first = paused(agent)
    with pytest.raises(ConfirmationRequired) as info:
        agent(question=QUESTION, resume_state=ResumeState(first, "yes"))

    assert counts == Counter(send_email=1)
    assert info.value.confirmation_id == first.confirmation_id
    assert info.value.context["react"].step == 1
    assert info.value.tool_call["id"] == "call_e2"


def test_concurrent_runs_do_not_share_approvals(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    def model(request: httpx.Request) -> httpx.Response:
        last = json.loads(request.content)["messages"][-1]
        return finish_reply() if last["role"] == "tool" else calls_reply(EMAIL)

    router.post("/chat/completions").mock(side_effect=model)
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    approved = ResumeState(paused(agent), "yes")

    async def both() -> tuple[Any, ...]:
        return await asyncio.gather(
            agent.acall(question=QUESTION, resume_state=approved),
            agent.acall(question=QUESTION),
            return_exceptions=True,
        )

    resumed, fresh = asyncio.run(both())
    assert resumed.summary == "Bob was told."
    assert isinstance(fresh, ConfirmationRequired)
    assert counts == Counter(send_email=1)


def test_a_resume_state_from_elsewhere_is_refused(tools: list[Tool]) -> None:
    foreign = ConfirmationRequired("Run it?", confirmation_id="abc", tool_call={"name": "x"})
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    with pytest.raises(ConfigurationError, match="not raised by a ReAct run"):
        agent(question=QUESTION, resume_state=ResumeState(foreign, "yes"))
    other: ReAct[ts.Signature] = ReAct("question -> answer", tools=tools, lm=make_lm())
    state = {"signature": "Notify", "trajectory": []}
    mismatched = ConfirmationRequired("Run?", confirmation_id="abc", context={"react": state})
    with pytest.raises(ConfigurationError, match="'Notify'"):
        other(question="q", resume_state=ResumeState(mismatched, "yes"))


def test_a_malformed_saved_state_is_a_configuration_error(tools: list[Tool]) -> None:
    state = {"signature": "Notify", "trajectory": [{"calls": "nope"}], "step": 0, "call": 0}
    broken = ConfirmationRequired("Run?", confirmation_id="abc", context={"react": state})
    with pytest.raises(ConfigurationError, match="malformed"):
        ReAct(Notify, tools=tools, lm=make_lm())(resume_state=ResumeState(broken, "yes"))


def test_resuming_twice_from_one_saved_state_runs_the_side_effect_once(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(EMAIL), finish_reply(), finish_reply()]
    )
    with ts.context(resume_secret=SECRET):  # the setting instead of secret=
        saved = ResumeState(paused(ReAct(Notify, tools=tools, lm=make_lm())), "yes").to_json()
        first = ReAct(Notify, tools=tools, lm=make_lm())(resume_state=ResumeState.from_json(saved))
        again = ReAct(Notify, tools=tools, lm=make_lm())(resume_state=ResumeState.from_json(saved))

    assert sent == [("bob@example.com", "The launch moved.")]  # the email went out once
    assert first.summary == again.summary == "Bob was told."
    requests = bodies(route)
    assert requests[2]["messages"][-1] == tool_message("call_e", "sent to bob@example.com")


def test_a_pause_answered_one_way_refuses_another_answer(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL), finish_reply()])
    store = ts.react.MemoryResumeStore()
    agent = ReAct(Notify, tools=tools, lm=make_lm(), resume_store=store)
    exc = paused(agent)
    agent(resume_state=ResumeState(exc, "no"))

    with pytest.raises(
        ts.errors.ResumeConflictError, match="already answered with 'reject'"
    ) as info:
        agent(resume_state=ResumeState(exc, "yes"))
    assert info.value.action == "reject"
    assert counts["send_email"] == 0
    assert len(store) == 1


def test_an_unfinished_resumption_is_not_run_again(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL)])
    store = ts.react.MemoryResumeStore()
    agent = ReAct(Notify, tools=tools, lm=make_lm(), resume_store=store)
    exc = paused(agent)
    asyncio.run(store.claim(exc.context["react"].pause_id, "approve"))  # a run elsewhere

    with pytest.raises(ts.errors.ResumeConflictError, match="being resumed elsewhere"):
        agent(resume_state=ResumeState(exc, "yes"))
    assert counts["send_email"] == 0


def test_each_pause_has_its_own_id(router: respx.MockRouter, tools: list[Tool]) -> None:
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL), calls_reply(EMAIL)])
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    ids = {paused(agent).context["react"].pause_id for _ in range(2)}
    assert len(ids) == 2  # two identical runs pausing alike are still two pauses


def test_the_memory_store_is_bounded() -> None:
    store = ts.react.MemoryResumeStore(max_entries=2)
    for key in ("a", "b", "c"):
        assert asyncio.run(store.claim(key, "approve")) is None
    assert len(store) == 2
    assert asyncio.run(store.claim("a", "approve")) is None  # the oldest was forgotten
    with pytest.raises(ConfigurationError):
        ts.react.MemoryResumeStore(max_entries=0)


def test_a_state_without_a_pause_id_is_refused(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any]
) -> None:
    # Before signing, a state without a pause id (the format before pause ids) was keyed by a
    # hash of its content, so removing the id from a used state ran its approval again (D10).
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL)])
    pause = paused(ReAct(Notify, tools=tools, lm=make_lm()))
    saved = ResumeState(pause, "yes").to_dict(secret=SECRET)
    del saved["context"]["react"]["pause_id"]
    with pytest.raises(ResumeStateError, match="signature does not match"):
        ResumeState.from_json(saved, secret=SECRET)

    del saved["signature"]  # signed again by the app itself: the id is still required
    resigned = ResumeState.model_validate(saved).to_dict(secret=SECRET)
    state = ResumeState.from_json(resigned, secret=SECRET)
    with pytest.raises(ConfigurationError, match="malformed ReAct state at pause_id"):
        ReAct(Notify, tools=tools, lm=make_lm())(resume_state=state)
    assert sent == []


def test_a_state_for_another_call_of_the_run_is_refused(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any]
) -> None:
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL)])
    pause = paused(ReAct(Notify, tools=tools, lm=make_lm()))
    other = ConfirmationRequired(
        pause.question,
        confirmation_id=pause.confirmation_id,
        tool_call={**pause.tool_call, "id": "call_other"},
        context=pause.context,
    )
    with pytest.raises(ConfigurationError, match="paused at a call to 'send_email' \\(id 'call_e'"):
        ReAct(Notify, tools=tools, lm=make_lm())(resume_state=ResumeState(other, "yes"))
    assert sent == []


@pytest.mark.parametrize("form", ["json", "dict", "pause", "word"])
def test_a_resume_state_that_is_no_resume_state_is_refused(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any], form: str
) -> None:
    # The saved JSON, its dict, or the pause itself, passed where `ResumeState` goes.
    route = router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL)])
    pause = paused(ReAct(Notify, tools=tools, lm=make_lm()))
    saved = ResumeState(pause, "yes").to_json(secret=SECRET)
    given = {"json": saved, "dict": json.loads(saved), "pause": pause, "word": "yes"}[form]
    with pytest.raises(ConfigurationError, match=r"resume_state=.*expected a ResumeState"):
        ReAct(Notify, tools=tools, lm=make_lm())(resume_state=given)
    assert sent == [] and len(route.calls) == 1


def _contains_itself() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    ("edited", "why"),
    [
        (_contains_itself(), "contains itself"),
        (object(), "object"),
        (10**5000, "digits"),
        (b"\xff", "not UTF-8"),
    ],
    ids=["cyclic", "object", "huge-int", "bytes"],
)
def test_an_edit_json_cannot_write_is_refused_and_the_pause_stays_open(
    router: respx.MockRouter, tools: list[Tool], sent: list[Any], edited: object, why: str
) -> None:
    # It was a bare ValueError after the tool refused it, with the pause claimed for good.
    router.post("/chat/completions").mock(side_effect=[calls_reply(EMAIL), finish_reply()])
    agent = ReAct(Notify, tools=tools, lm=make_lm())
    pause = paused(agent)
    with pytest.raises(ConfigurationError, match=f"edited argument 'to' cannot be sent: .*{why}"):
        ResumeState(pause, {"to": edited})
    pred = agent(question=QUESTION, resume_state=ResumeState(pause, "yes"))
    assert pred.summary == "Bob was told."
    assert sent == [("bob@example.com", "The launch moved.")]


def test_calls_after_finish_in_the_same_step_are_not_run(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    router.post("/chat/completions").mock(
        side_effect=[calls_reply(("call_f", "finish", {"summary": "Done."}), SEARCH)]
    )
    pred = ReAct(Notify, tools=tools, lm=make_lm())(question=QUESTION)

    assert pred.summary == "Done."
    assert counts == Counter()  # search came after finish: not run
    (step,) = pred.trajectory
    assert [c.observation for c in step.calls][1] == "Not run: `finish` was called before it."
    assert repr(pred.trajectory) == "Trajectory(1 steps, calls=['finish', 'search'])"


def test_a_rejection_answered_around_the_agent_is_the_observation_of_its_call(
    router: respx.MockRouter, tools: list[Tool], counts: Counter[str]
) -> None:
    # The call paused outside the agent; the person's "no" is in force when the agent makes it.
    with pytest.raises(ConfirmationRequired) as info:
        tools[1](**EMAIL_ARGS)
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(EMAIL), finish_reply("Not sent.")]
    )
    with resume(ResumeState(info.value, "no")):
        pred = ReAct(Notify, tools=tools, lm=make_lm())(question=QUESTION)

    assert pred.summary == "Not sent."
    assert counts == Counter()
    told = bodies(route)[1]["messages"][-1]
    assert told["tool_call_id"] == "call_e"
    assert told["content"].startswith("The user rejected this call to send_email; it was not run.")


def test_a_resumed_run_offers_the_paused_runs_tools_and_names_those_it_lacks(
    router: respx.MockRouter,
    tools: list[Tool],
    counts: Counter[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(SEARCH), calls_reply(EMAIL), finish_reply()]
    )
    exc = paused(ReAct(Notify, tools=tools, lm=make_lm()))

    @tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return "sunny"

    other = ReAct(Notify, tools=[tools[1], weather], lm=make_lm())  # no search; a new tool
    with caplog.at_level("WARNING", logger="typedspy"):
        pred = other(question=QUESTION, resume_state=ResumeState(exc, "yes"))

    assert pred.summary == "Bob was told."
    assert counts == Counter(search=1, send_email=1)
    assert tool_names(bodies(route)[2]) == ["send_email", "finish"]  # not weather
    (warned,) = [r.getMessage() for r in caplog.records if "resuming" in r.getMessage()]
    # The old text said "added during the paused run": search was in the agent from the start.
    assert warned == "resuming Notify without tools the paused run had: search"
