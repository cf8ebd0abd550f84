"""History: the system prompt first whatever the order of calls; multi-turn Predict and ReAct."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx
from react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.testing import chat_completion


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def ok(answer: str) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps({"answer": answer})))


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


# -- ordering --------------------------------------------------------------------------------------


def test_system_prompt_is_first_even_when_added_last() -> None:
    history = ts.History()
    history.add_message("user", "Hi")
    history.add_message("assistant", "Hello.")
    history.add_message("system", "Be terse.")

    assert history.messages == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
    ]
    assert history.system_prompt == "Be terse."
    assert len(history) == 2
    assert list(history) == history.messages


def test_a_later_system_message_replaces_the_prompt_and_stays_first() -> None:
    history = ts.History(system_prompt="Be terse.")
    history.add_message("user", "Hi")
    history.add_message("system", "Be verbose.")
    history.add_message("assistant", "Hello there, friend.")

    roles = [m["role"] for m in history.messages]
    assert roles == ["system", "user", "assistant"]
    assert history.messages[0]["content"] == "Be verbose."


def test_system_message_in_the_middle_of_given_messages_moves_first() -> None:
    history = ts.History(
        messages=[
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Be terse."},
            {"role": "assistant", "content": "Hello."},
        ]
    )

    assert [m["role"] for m in history.messages] == ["system", "user", "assistant"]
    assert history.turns == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
    ]


def test_tool_turns_keep_their_extra_keys_in_order() -> None:
    history = ts.History(system_prompt="S")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    history.add_message("assistant", None, tool_calls=[call])
    history.add_message("tool", "42", tool_call_id="c1")

    assert history.messages[1:] == [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "42", "tool_call_id": "c1"},
    ]


def test_copy_is_independent() -> None:
    history = ts.History(system_prompt="Be terse.")
    history.add_message("assistant", None, tool_calls=[{"id": "c1"}])

    copied = history.copy()
    copied.add_message("user", "more")
    copied.add_message("system", "Other prompt.")
    copied.turns[0]["content"] = "changed"  # turns are copies too
    copied.turns[0]["tool_calls"][0]["id"] = "c2"  # nested values: the copy's own

    assert history.system_prompt == "Be terse."
    assert history.turns == [{"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}]
    assert len(copied) == 2
    assert copied.messages[0] == {"role": "system", "content": "Other prompt."}


def test_messages_are_copies_and_clear_keeps_the_system_prompt() -> None:
    history = ts.History(system_prompt="Be terse.")
    history.add_message("user", "Hi")
    history.messages[1]["content"] = "changed"

    assert history.turns == [{"role": "user", "content": "Hi"}]
    history.clear()
    assert history.messages == [{"role": "system", "content": "Be terse."}]


# -- Predict ---------------------------------------------------------------------------------------


def test_predict_sends_system_then_history_turns_then_the_inputs(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(side_effect=[ok("Paris"), ok("Lyon")])
    predict = ts.Predict(Answer, lm=make_lm(), mode="json_schema")
    history = ts.History()
    history.add_message("user", "We talk about France.")
    history.add_message("assistant", "Sure.")
    history.add_message("system", "Answer with a city.")  # added last, sent first

    first = predict(question="Capital?", history=history)
    history.add_message("user", "<question>\nCapital?\n</question>")
    history.add_message("assistant", json.dumps({"answer": first.answer}))
    second = predict(question="Second city?", history=history)

    one, two = bodies(route)
    assert [m["role"] for m in one["messages"]] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in two["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    for body in (one, two):
        messages = body["messages"]
        assert sum(m["role"] == "system" for m in messages) == 1
        assert messages[0]["content"].startswith("Answer the question.\n")
        assert messages[0]["content"].endswith("\n\nAnswer with a city.")
        assert messages[1:3] == [
            {"role": "user", "content": "We talk about France."},
            {"role": "assistant", "content": "Sure."},
        ]
    assert two["messages"][3:5] == [
        {"role": "user", "content": "<question>\nCapital?\n</question>"},
        {"role": "assistant", "content": '{"answer": "Paris"}'},
    ]
    assert two["messages"][-1] == {
        "role": "user",
        "content": "<question>\nSecond city?\n</question>",
    }
    assert (first.answer, second.answer) == ("Paris", "Lyon")


def test_plain_message_lists_with_a_system_message_send_one_system_message(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(return_value=ok("4"))
    turns = [
        {"role": "user", "content": "2+2?"},
        {"role": "system", "content": "Numbers only."},
        {"role": "assistant", "content": "4"},
    ]

    ts.Predict(Answer, lm=make_lm(), mode="json_schema")(question="Again?", history=turns)

    messages = bodies(route)[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].endswith("\n\nNumbers only.")


# -- ReAct -----------------------------------------------------------------------------------------


@ts.tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city name.
    """
    return f"{city} has 2.1 million inhabitants."


def test_react_sends_history_turns_before_the_inputs(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_1", "lookup", {"city": "Paris"})),
            finish_reply(answer="2.1 million"),
        ]
    )
    history = ts.History()
    history.add_message("user", "We talk about Paris.")
    history.add_message("assistant", "Sure.")
    agent = ts.ReAct(Answer, tools=[lookup], lm=make_lm())

    pred = agent(question="How many people live there?", history=history)

    first, second = bodies(route)
    for body in (first, second):
        assert body["messages"][0]["role"] == "system"
        assert body["messages"][1:4] == [
            {"role": "user", "content": "We talk about Paris."},
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "<question>\nHow many people live there?\n</question>"},
        ]
    assert second["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Paris has 2.1 million inhabitants.",
    }
    assert pred.answer == "2.1 million"
    assert len(history) == 2  # the run does not write into the caller's history


def test_react_sends_one_system_message_with_the_history_prompt(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(return_value=finish_reply(answer="yes"))
    history = ts.History(system_prompt="Answer in French.")
    history.add_message("user", "Bonjour")

    ts.ReAct(Answer, tools=[lookup], lm=make_lm())(question="Ready?", history=history)

    messages = bodies(route)[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert messages[0]["content"].endswith("\n\nAnswer in French.")


def test_react_union_mode_merges_the_history_prompt_into_one_system_message(
    router: respx.MockRouter,
) -> None:
    step = {"reasoning": "done", "next": {"_type": "finish", "answer": "oui"}}
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(json.dumps(step)))
    )
    history = ts.History(system_prompt="Answer in French.")
    history.add_message("user", "Bonjour")
    history.add_message("assistant", "Bonjour !")

    pred = ts.ReAct(Answer, tools=[lookup], lm=make_lm(), mode="union")(
        question="Ready?", history=history
    )

    messages = bodies(route)[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].endswith("\n\nAnswer in French.")
    assert messages[1:3] == [
        {"role": "user", "content": "Bonjour"},
        {"role": "assistant", "content": "Bonjour !"},
    ]
    assert pred.answer == "oui"
