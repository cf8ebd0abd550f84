"""A model's call to a tool name no endpoint accepts is answered, not sent back as it was.

A model that called ``functions.lookup`` (or 10,000 characters with control characters in them)
got the observation "there is no tool named ...", but the next step's request carried the call
with that name in the assistant message, which OpenAI refuses with a 400 on
``messages[i].tool_calls[j].function.name`` (``^[a-zA-Z0-9_-]+$``, at most 64 characters;
mcp-use/mcp-use#90): the run ended on a model's slip it was meant to recover from. The request
now carries a valid name made from it; the trajectory and the observation keep the model's own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import respx
from react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.react import ReAct

VALID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.mark.parametrize(
    ("name", "sent"),
    [
        ("functions.lookup", "functions_lookup"),
        ("lookup<|channel|>commentary", "lookup_channel_commentary"),
        ("\x00\n" + "z" * 10_000, "z" * 64),
        ("", "unknown_tool"),
        ("<>", "unknown_tool"),
    ],
)
def test_the_next_request_carries_a_valid_name_and_the_model_is_told_its_own(
    router: respx.MockRouter, name: str, sent: str
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", name, {"key": "k"})), finish_reply(answer="a")]
    )
    pred = ReAct(Answer, tools=[lookup], lm=make_lm())(question="q")

    assert pred.answer == "a"
    assert pred.trajectory.calls[0].name == name  # the model's own, kept
    assistant, told = bodies(route)[1]["messages"][-2:]
    called = assistant["tool_calls"][0]["function"]["name"]
    assert VALID.match(called) and called == sent
    assert told["tool_call_id"] == "c1"
    shown = repr(name[:50])[:-1]  # the model's name, cut past 100 characters
    assert told["content"].startswith(f"Error: there is no tool named {shown}")


def test_a_valid_name_no_tool_has_is_sent_as_the_model_wrote_it(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("c1", "Search-Web", {"q": "k"})), finish_reply(answer="a")]
    )
    ReAct(Answer, tools=[lookup], lm=make_lm())(question="q")
    assistant = bodies(route)[1]["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "Search-Web"


def test_a_finish_after_a_call_that_failed_in_its_reply_is_not_the_answer(
    router: respx.MockRouter,
) -> None:
    # The model sends an email and, in the same reply, answers that it was sent. The person
    # rejected the email: main took that finish as the answer ("Sent."), a lie (ADR-101).
    sent: list[str] = []

    @ts.confirm_first
    @ts.tool
    def send_email(to: str) -> str:
        """Send an email."""
        sent.append(to)
        return "sent"

    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("c1", "send_email", {"to": "bob"}), ("c2", "finish", {"answer": "Sent."})),
            finish_reply(answer="Not sent: the user declined."),
        ]
    )
    agent = ReAct(Answer, tools=[send_email], lm=make_lm())
    with pytest.raises(ts.tools.ConfirmationRequired) as info:
        agent(question="Email Bob.")
    pred = agent(question="Email Bob.", resume_state=ts.tools.ResumeState(info.value, "no"))

    assert sent == []
    assert pred.answer == "Not sent: the user declined."
    rejected, blind = pred.trajectory[0].calls
    assert rejected.failed and blind.failed
    assert blind.observation is not None and blind.observation.startswith("Error: not accepted")
    told = bodies(route)[1]["messages"][-1]
    assert told["tool_call_id"] == "c2" and "call finish again" in told["content"]


def test_a_finish_after_calls_that_succeeded_in_its_reply_is_still_the_answer(
    router: respx.MockRouter,
) -> None:
    router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(
                ("c1", "lookup", {"key": "k"}),
                ("c2", "finish", {"answer": "done"}),
                ("c3", "lookup", {"key": "after"}),
            )
        ]
    )
    pred = ReAct(Answer, tools=[lookup], lm=make_lm())(question="q")
    assert pred.answer == "done"
    assert [c.failed for c in pred.trajectory.calls] == [False, False, False]
    assert pred.trajectory.calls[2].observation == "Not run: `finish` was called before it."
