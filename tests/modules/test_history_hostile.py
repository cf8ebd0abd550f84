"""A history that cannot be sent is the `ts.InputError` naming the message, before any request.

``history="hello"`` or ``ts.History(messages=[42])`` raised a bare ``AttributeError``; a message
whose content contains itself a bare `RecursionError` when the body was encoded, one holding an
``object()`` a bare ``TypeError``; a message with no ``role`` reached the endpoint.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import StandIn


def cyclic() -> object:
    content: dict[str, Any] = {"type": "text", "text": "hi"}
    content["self"] = content
    return {"role": "user", "content": [content]}


MESSAGES: dict[str, tuple[Callable[[], object], str]] = {
    "not a mapping": (lambda: 42, "a mapping such as .*not int"),
    "no role": (lambda: {"content": "hi"}, "needs a string 'role'"),
    "content that contains itself": (cyclic, "contains itself"),
    "an object() in it": (lambda: {"role": "user", "content": object()}, "not JSON: content: "),
    "a NaN in it": (
        lambda: {"role": "user", "content": [{"type": "text", "text": "hi", "x": math.nan}]},
        r"not JSON: content\[0\]\.x: JSON has no such number",
    ),
}


@pytest.mark.parametrize("case", list(MESSAGES))
def test_a_message_that_cannot_be_sent_is_the_input_error_naming_it(
    standin: tuple[StandIn, ts.LM], case: str
) -> None:
    server, lm = standin
    make, cause = MESSAGES[case]
    turns = [{"role": "user", "content": "earlier"}, make()]
    predict = ts.Predict("question -> answer", lm=lm)
    with pytest.raises(ts.InputError, match=rf"history message 1: .*{cause}"):
        predict(question="q", history=turns)
    with pytest.raises(ts.InputError, match=rf"history message 1: .*{cause}"):
        ts.History(messages=turns)  # type: ignore[arg-type]  # what a user may hand it
    assert server.requests == []


@pytest.mark.parametrize("content", [cyclic, object])
def test_an_added_message_that_cannot_be_sent_is_refused_at_the_call(
    standin: tuple[StandIn, ts.LM], content: Callable[[], object]
) -> None:
    server, lm = standin
    history = ts.History(system_prompt="Be terse.")
    history.add_message("user", "earlier")
    history.add_message("assistant", "x", metadata=content())
    with pytest.raises(ts.InputError, match="history message 2: "):
        ts.Predict("question -> answer", lm=lm)(question="q", history=history)
    assert server.requests == []


@pytest.mark.parametrize("history", ["hello", 42, {"role": "user"}])
def test_a_history_that_is_no_list_of_messages_is_the_input_error(
    standin: tuple[StandIn, ts.LM], history: object
) -> None:
    server, lm = standin
    with pytest.raises(ts.InputError, match=r"history must be a ts\.History or a list"):
        ts.Predict("question -> answer", lm=lm)(question="q", history=history)
    assert server.requests == []
