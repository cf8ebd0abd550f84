"""Predict and ReAct end a call the same way: one finish-reason policy (the call engine)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import respx
from react_wire import BASE_URL, make_lm

import typedspy as ts
from typedspy.testing import chat_completion


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def look_up(term: str) -> str:
    """Look a term up."""
    return term


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def modules() -> list[ts.Module]:
    return [ts.Predict(Ask, lm=make_lm()), ts.ReAct(Ask, tools=[look_up], lm=make_lm())]


@pytest.mark.parametrize("index", [0, 1], ids=["Predict", "ReAct"])
def test_a_repetition_loop_at_the_token_limit_is_truncation_of_that_kind(
    router: respx.MockRouter, index: int
) -> None:
    looped = '{"answer": "' + "so so so so " * 40
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(looped, finish_reason="length"))
    )

    with pytest.raises(
        ts.errors.TruncatedOutputError, match=r"hit the token limit .*\(repetition_loop\)"
    ):
        modules()[index](question="q")


@pytest.mark.parametrize("index", [0, 1], ids=["Predict", "ReAct"])
def test_a_content_filter_and_a_refusal_end_the_call_unretried(
    router: respx.MockRouter, index: int
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=chat_completion("", finish_reason="content_filter")),
            httpx.Response(200, json=chat_completion(None, refusal="No.")),
        ]
    )

    with pytest.raises(ts.errors.ContentFilterError, match="content filter stopped"):
        modules()[index](question="q")
    with pytest.raises(ts.errors.RefusalError, match=r"the model refused: No\."):
        modules()[index](question="q")
    assert route.call_count == 2


@pytest.mark.parametrize("index", [0, 1], ids=["Predict", "ReAct"])
def test_inputs_are_checked_before_any_request(index: int) -> None:
    with pytest.raises(ts.InputError, match=r"Ask: missing input\(s\) question"):
        modules()[index](topic="q")
