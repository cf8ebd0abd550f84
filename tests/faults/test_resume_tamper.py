"""Issue 21, D10: a saved ResumeState is signed; a state edited after signing is refused.

A person approved "Delete report.pdf?". Before signing, editing the saved JSON (the paused
call's arguments and the public SHA-256 ``confirmation_id``) made the approved call run on
/etc/passwd, and a new (or removed) ``pause_id`` ran an approval already used a second time.
Here every such edit is refused by ``ResumeState.from_json`` with `ResumeStateError` before any
of the state is used: the tool never runs and the stand-in server (real HTTP on 127.0.0.1)
gets no request. An untampered state still resumes, once. Each case ends within seconds.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.errors import ResumeStateError
from typedspy.testing import Reply, StandIn
from typedspy.tools import ConfirmationRequired, ResumeState, confirm_first, confirmation_id, tool

SECRET = "an-application-secret-of-32-bytes-or-more"
ATTACKER = "a-guessed-secret-that-is-long-enough-too"
RUNS: list[str] = []

State = dict[str, Any]


@confirm_first(question="Delete {path}?")
@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    RUNS.append(path)
    return f"deleted {path}"


class Clean(ts.Signature):
    """Clean up the workspace."""

    task: str = ts.InputField()
    done: str = ts.OutputField()


def call(name: str, arguments: dict[str, Any]) -> Reply:
    return Reply(tool_calls=[{"name": name, "arguments": arguments}], finish_reason="tool_calls")


@pytest.fixture
def server() -> Iterator[StandIn]:
    RUNS.clear()
    with StandIn() as standin:
        yield standin


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    model = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
    yield model
    model.close()


def agent(lm: ts.LM) -> ts.ReAct[Clean]:
    """A new agent each time, as each web request builds one (the process's resume store)."""
    return ts.ReAct(Clean, tools=[delete_file], lm=lm)


@pytest.fixture
def saved(server: StandIn, lm: ts.LM) -> State:
    """The signed JSON of "Delete report.pdf?" answered "yes", as a web app stores it."""
    server.enqueue(call("delete_file", {"path": "report.pdf"}))
    with pytest.raises(ConfirmationRequired) as info:
        agent(lm)(task="clean up")
    data: State = json.loads(ResumeState(info.value, "yes").to_json(secret=SECRET))
    return data


def react(state: State) -> State:
    run: State = state["context"]["react"]
    return run


def set_arguments(state: State, arguments: dict[str, Any]) -> None:
    """What the reproducer did: the paused call's arguments, everywhere they are saved."""
    text = json.dumps(arguments)
    for step in react(state)["trajectory"]:
        for made in step["calls"]:
            made["arguments"] = text
    react(state)["pending_call"]["arguments"] = text
    state["tool_call"]["arguments"] = arguments
    state["confirmation_id"] = confirmation_id(state["tool_call"]["name"], arguments)


def retargeted(state: State) -> None:
    set_arguments(state, {"path": "/etc/passwd"})
    react(state)["pause_id"] = "e" * 32


def renamed(state: State) -> None:
    state["tool_call"]["name"] = react(state)["pending_call"]["name"] = "format_disk"


def edited_question(state: State) -> None:
    state["question"] += " "


def new_pause_id(state: State) -> None:
    react(state)["pause_id"] = "f" * 32


def removed_pause_id(state: State) -> None:
    del react(state)["pause_id"]


def answered_otherwise(state: State) -> None:
    state["response"] = {"path": "/etc/passwd"}


def unsigned(state: State) -> None:
    del state["signature"]


def signature_of_another_state(state: State) -> None:
    new_pause_id(state)
    state["signature"] = "0" * 64


def signature_not_hex(state: State) -> None:
    state["signature"] = "Z" * 64


TAMPERINGS: dict[str, tuple[Callable[[State], None], str]] = {
    "arguments, confirmation_id and pause_id": (retargeted, "signature does not match"),
    "tool name": (renamed, "signature does not match"),
    "question edited by one space": (edited_question, "signature does not match"),
    "new pause_id": (new_pause_id, "signature does not match"),
    "pause_id removed": (removed_pause_id, "signature does not match"),
    "answer changed": (answered_otherwise, "signature does not match"),
    "signature stripped": (unsigned, "state is not signed"),
    "signature replaced": (signature_of_another_state, "signature does not match"),
    "signature not hex": (signature_not_hex, "signature does not match"),
}


def refused(text: str | State, server: StandIn, lm: ts.LM) -> ResumeStateError:
    """Resume from ``text`` as a web app would: the error, after checking nothing ran."""
    before = len(server.requests)
    started = time.monotonic()
    with pytest.raises(ResumeStateError) as info:
        agent(lm)(resume_state=ResumeState.from_json(text, secret=SECRET))
    assert time.monotonic() - started < 10
    assert RUNS == [] or RUNS == ["report.pdf"]  # never a second run, never another path
    assert len(server.requests) == before  # refused before anything was sent
    return info.value


@pytest.mark.parametrize("name", list(TAMPERINGS))
def test_a_tampered_state_is_refused_and_the_tool_never_runs(
    name: str, saved: State, server: StandIn, lm: ts.LM
) -> None:
    change, message = TAMPERINGS[name]
    state = copy.deepcopy(saved)
    change(state)
    error = refused(json.dumps(state), server, lm)
    assert message in str(error)
    assert error.path == "signature"
    assert RUNS == []


@pytest.mark.parametrize("name", ["new pause_id", "pause_id removed", "signature replaced"])
def test_a_used_approval_is_not_run_again_under_another_pause_id(
    name: str, saved: State, server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(call("finish", {"done": "ok"}))
    pred = agent(lm)(resume_state=ResumeState.from_json(saved, secret=SECRET))
    assert (pred.done, RUNS) == ("ok", ["report.pdf"])

    change, message = TAMPERINGS[name]
    replayed = copy.deepcopy(saved)
    change(replayed)
    assert message in str(refused(replayed, server, lm))
    assert RUNS == ["report.pdf"]


def test_a_state_signed_with_another_secret_is_refused(
    saved: State, server: StandIn, lm: ts.LM
) -> None:
    # An attacker who edits the state and signs it with a secret of their own.
    del saved["signature"]
    retargeted(saved)
    forged = ResumeState.model_validate(saved).to_json(secret=ATTACKER)
    assert "signature does not match" in str(refused(forged, server, lm))
    assert RUNS == []


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda text: text[: len(text) // 2], "not JSON"),
        (lambda text: text[:-1], "not JSON"),
        (lambda text: "\x00garbage" + text, "not JSON"),
        (lambda text: "[" * 100_000 + "]" * 100_000, "not JSON (JSON nested deeper than 256"),
        (lambda text: json.dumps([json.loads(text)]), "expected a JSON object, not list"),
    ],
    ids=["truncated", "last byte cut", "garbage before", "deep", "wrapped in a list"],
)
def test_text_that_is_not_a_saved_state_is_refused(
    cut: Callable[[str], str], message: str, saved: State, server: StandIn, lm: ts.LM
) -> None:
    error = refused(cut(json.dumps(saved)), server, lm)
    assert message in str(error)
    assert error.path == ""
    assert RUNS == []


def test_a_deep_mapping_is_refused_without_recursion(
    saved: State, server: StandIn, lm: ts.LM
) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5_000):
        node["d"] = {}
        node = node["d"]
    saved["context"]["deep"] = deep
    assert "nested deeper than 256" in str(refused(saved, server, lm))


def test_an_untampered_state_resumes_once(saved: State, server: StandIn, lm: ts.LM) -> None:
    server.enqueue(call("finish", {"done": "ok"}))
    text = json.dumps(saved)
    pred = agent(lm)(resume_state=ResumeState.from_json(text, secret=SECRET))

    assert (pred.done, pred.finished, RUNS) == ("ok", True, ["report.pdf"])
    sent = server.requests[-1]["messages"][-1]
    assert (sent["role"], sent["content"]) == ("tool", "deleted report.pdf")
