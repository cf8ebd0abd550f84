"""A paused ReAct run's saved state: Pydantic models, the signed JSON format, errors with paths."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import pytest
import respx
from react_wire import BASE_URL, bodies, finish_reply, make_lm, tool_message

import typedspy as ts
from typedspy.errors import ConfigurationError, ResumeStateError
from typedspy.react import ReAct
from typedspy.tools import ConfirmationRequired, ResumeState, Tool, confirm_first, tool
from typedspy.tools import confirmation_id as make_confirmation_id

QUESTION = "Tell Bob the launch moved."
EMAIL_ARGS = {"to": "bob@example.com", "body": "The launch moved."}
SECRET = "test-secret-for-signing-resume-states"


class Notify(ts.Signature):
    """Notify people about changes."""

    question: str = ts.InputField()
    summary: str = ts.OutputField()


@pytest.fixture
def sent() -> list[tuple[str, str]]:
    return []


@pytest.fixture
def tools(sent: list[tuple[str, str]]) -> list[Tool]:
    @confirm_first(question="Send an email to {to}?")
    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        sent.append((to, body))
        return f"sent to {to}"

    return [send_email]


def signed(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with its signature, computed by hand as ADR-052 specifies it."""
    payload = json.dumps(state, sort_keys=True, separators=(",", ":")).encode()
    message = b"typedspy.ResumeState\n" + payload
    return {**state, "signature": hmac.new(SECRET.encode(), message, hashlib.sha256).hexdigest()}


def saved_state(**react: Any) -> dict[str, Any]:
    """A ResumeState as the JSON format of version 2 has it (written out by hand, signed)."""
    pending = {
        "id": "call_e",
        "name": "send_email",
        "arguments": json.dumps(EMAIL_ARGS, separators=(",", ":")),
        "observation": None,
    }
    state = {
        "version": 1,
        "pause_id": "literal-pause",
        "signature": "Notify",
        "inputs": {"question": QUESTION},
        "trajectory": [{"reasoning": None, "calls": [pending], "note": None}],
        "step": 0,
        "call": 0,
        "pending_call": pending,
        "mode": "tools",
        "tools": ["send_email"],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return signed(
        {
            "version": 2,
            "question": "Send an email to bob@example.com?",
            "confirmation_id": make_confirmation_id("send_email", EMAIL_ARGS),
            "tool_call": {"name": "send_email", "arguments": EMAIL_ARGS, "id": "call_e"},
            "context": {"react": {**state, **react}},
            "response": "yes",
        }
    )


def resume(tools: list[Tool], data: dict[str, Any] | str) -> Any:
    state = ResumeState.from_json(data, secret=SECRET)
    return ReAct(Notify, tools=tools, lm=make_lm())(resume_state=state)


def test_a_state_in_the_saved_json_format_resumes(
    tools: list[Tool], sent: list[tuple[str, str]]
) -> None:
    with respx.mock(base_url=BASE_URL) as mock:
        route = mock.post("/chat/completions").mock(side_effect=[finish_reply(summary="Done.")])
        pred = resume(tools, json.dumps(saved_state()))

    assert pred.summary == "Done."
    assert sent == [("bob@example.com", "The launch moved.")]
    assert bodies(route)[0]["messages"][-1] == tool_message("call_e", "sent to bob@example.com")
    finish_tokens = json.loads(route.calls[0].response.content)["usage"]["total_tokens"]
    assert pred.usage.total_tokens == 15 + finish_tokens  # the saved usage carried on


def test_the_saved_state_is_dumped_in_the_same_format(tools: list[Tool]) -> None:
    from react_wire import calls_reply

    with respx.mock(base_url=BASE_URL) as mock:
        mock.post("/chat/completions").mock(
            side_effect=[calls_reply(("call_e", "send_email", EMAIL_ARGS))]
        )
        with pytest.raises(ConfirmationRequired) as info:
            ReAct(Notify, tools=tools, lm=make_lm())(question=QUESTION)

    state = ResumeState(info.value, "yes").to_dict(secret=SECRET)
    expected = saved_state()
    assert state.keys() == expected.keys()
    assert state["context"]["react"].keys() == expected["context"]["react"].keys()
    react = state["context"]["react"]
    # A call's `failed` was added (ADR-101): a state without it reads as not failed, and a
    # reader before it ignores it.
    pending = {**expected["context"]["react"]["pending_call"], "failed": False}
    assert react["trajectory"] == [{"reasoning": None, "calls": [pending], "note": None}]
    assert react["pending_call"] == pending
    assert react["usage"].keys() == {"prompt_tokens", "completion_tokens", "total_tokens"}


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            {"trajectory": [{"calls": [{"name": "send_email", "arguments": "{}"}]}]},
            "trajectory[0].calls[0].id",
        ),
        ({"step": 3}, "no pending call at trajectory[3].calls[0]"),
        ({"step": -1}, "step: Input should be greater than or equal to 0"),
        ({"mode": "telepathy"}, "mode: Input should be 'tools' or 'union'"),
        (
            {"usage": {"total_tokens": "many"}},
            "usage.total_tokens: Input should be a valid integer",
        ),
    ],
)
def test_a_malformed_saved_state_names_the_path(
    tools: list[Tool], change: dict[str, Any], path: str
) -> None:
    with pytest.raises(ConfigurationError, match="malformed ReAct state") as info:
        resume(tools, saved_state(**change))
    assert path in str(info.value)


def test_a_malformed_resume_state_names_the_field() -> None:
    data = saved_state()
    del data["signature"]
    data = signed({**data, "tool_call": "send_email"})  # signed, but malformed
    with pytest.raises(ResumeStateError, match="not a saved ResumeState: tool_call: ") as info:
        ResumeState.from_json(data, secret=SECRET)
    assert info.value.path == "tool_call"
