"""Issue 10's last bound: the HTTP requests of one ReAct run, transport retries included."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import httpx
import openai
import pytest
import respx
from react_wire import BASE_URL, calls_reply

import typedspy as ts
from typedspy.react import ReAct
from typedspy.testing import chat_completion


class Lookup(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def search(query: str) -> str:
    """Search."""
    return f"nothing about {query}"


def flaky() -> httpx.Response:
    # A 500 the SDK retries at once (retry-after-ms).
    return httpx.Response(500, headers={"retry-after-ms": "1"}, json={"error": {"message": "x"}})


def steps() -> Iterator[httpx.Response]:
    """Every request after a 500: a search call (the model never finishes)."""
    n = 0
    while True:
        n += 1
        yield flaky()
        yield calls_reply((f"c{n}", "search", {"query": str(n)}))


def make_lm(transport_retries: int = 2) -> ts.LM:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=transport_retries,
        http_client=cast(Any, httpx.AsyncClient()),
    )
    return ts.LM("gpt-test", client=client)


def run(agent: ReAct[Lookup]) -> tuple[BaseException | ts.Prediction[Lookup], int]:
    with respx.mock(base_url=BASE_URL) as mock:
        route = mock.post("/chat/completions").mock(side_effect=steps())
        try:
            outcome: BaseException | ts.Prediction[Lookup] = agent(question="q")
        except ts.TypedspyError as exc:
            outcome = exc
        return outcome, len(route.calls)


def test_without_a_bound_a_run_sends_every_step_twice() -> None:
    with ts.context(max_requests=None):
        outcome, requests = run(ReAct(Lookup, tools=[search], max_iters=4, lm=make_lm()))
    # 4 steps x 2 transport attempts, then 2 extraction attempts x 2: a tool call is no output,
    # and the same empty output again ends the extraction (repeated_reply)
    assert isinstance(outcome, ts.OutputError)
    assert requests == 12


def test_the_default_bound_is_twice_the_model_calls_of_a_run() -> None:
    agent = ReAct(Lookup, tools=[search], max_iters=4, lm=make_lm())
    assert agent.max_requests == "auto"
    outcome, requests = run(agent)
    assert isinstance(outcome, ts.errors.RequestLimitError)
    assert (outcome.limit, outcome.allowed, outcome.requests) == ("max_requests", 10, 10)
    assert requests == 10  # 2 * (max_iters + 1)
    assert "ReAct(Lookup): max_requests=10" in str(outcome)
    assert "ReAct(max_requests=...)" in str(outcome)


@pytest.mark.parametrize("bound", [1, 4, 7])
def test_a_run_never_sends_more_than_its_bound(bound: int) -> None:
    outcome, requests = run(
        ReAct(Lookup, tools=[search], max_iters=4, lm=make_lm(), max_requests=bound)
    )
    assert isinstance(outcome, (ts.errors.RequestLimitError, ts.errors.LMStatusError))
    assert requests == bound


def test_none_turns_the_run_bound_off_and_the_extraction_keeps_its_own() -> None:
    outcome, requests = run(
        ReAct(Lookup, tools=[search], max_iters=4, lm=make_lm(), max_requests=None)
    )
    assert isinstance(outcome, ts.OutputError)  # the extraction's attempts fit its bound of 6
    assert requests == 12  # its second empty reply repeats the first: repeated_reply ends it


def test_union_steps_and_the_extraction_count_on_the_run_bound() -> None:
    wrong = httpx.Response(200, json=chat_completion('{"reasoning": "r", "next": 3}'))
    with respx.mock(base_url=BASE_URL) as mock:
        route = mock.post("/chat/completions").mock(side_effect=[wrong] * 20)
        agent = ReAct(
            Lookup, tools=[search], max_iters=3, mode="union", lm=make_lm(0), max_requests=5
        )
        with pytest.raises(ts.errors.RequestLimitError) as caught:
            agent(question="q")
    # The first union step's three attempts fail validation (a note, the run goes on); the
    # second step's third attempt is past the run's bound, though its own call bound (6) is not.
    assert len(route.calls) == 5
    assert caught.value.allowed == 5


def test_a_bad_bound_is_a_configuration_error() -> None:
    for bad in (0, -1, True, "many"):
        with pytest.raises(ts.ConfigurationError, match="max_requests"):
            ReAct(Lookup, tools=[search], max_requests=bad)  # type: ignore[arg-type]
