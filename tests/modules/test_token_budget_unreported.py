"""A per-call ``token_budget`` counts a reply that reported no usage at its estimate (ADR-091).

llama-cpp-python's server sends no usage on streams and other servers leave ``usage`` out: the
budget of a `Predict`, `ChainOfThought`, ``think_then_format`` call and of a `ReAct` run (native
steps, union steps, extraction) trips on the estimate, as `ts.limits.Budget` does (ADR-090),
while ``usage`` on the error stays what the endpoint reported.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import respx

import typedspy as ts
from typedspy.errors import TokenBudgetExceededError
from typedspy.testing import chat_completion, sse_body
from typedspy.testing._payloads import completion_chunks
from wire import BASE_URL, make_lm

ESTIMATED = "replies that reported no usage at an estimate"


class Double(ts.Signature):
    """Double the number."""

    number: int = ts.InputField()
    doubled: int = ts.OutputField()


class Ask(ts.Signature):
    """Answer the question, using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def reply(
    content: str | None = None,
    *,
    calls: list[dict[str, Any]] | None = None,
    stream: bool = False,
    usage: dict[str, int] | None = None,
) -> httpx.Response:
    """A completion without ``usage`` (unless given), plain or streamed."""
    reason = "tool_calls" if calls else "stop"
    body = chat_completion(content, tool_calls=calls, finish_reason=reason, usage=usage)
    if usage is None:
        del body["usage"]
    if not stream:
        return httpx.Response(200, json=body)
    content_ = sse_body(completion_chunks(body, include_usage=usage is not None))
    return httpx.Response(200, content=content_, headers={"content-type": "text/event-stream"})


def final(module: ts.Module, stream: bool, **inputs: Any) -> object:
    if stream:
        events: list[object] = list(module.stream(**inputs))
        return events[-1]  # the prediction (when no error was raised)
    return module(**inputs)


def always(response: Callable[[], httpx.Response]) -> Callable[[httpx.Request], httpx.Response]:
    """A side effect answering every request with a new ``response()``."""

    def answer(request: httpx.Request) -> httpx.Response:
        del request
        return response()

    return answer


def lookup_call(n: int = 1) -> dict[str, Any]:
    return {"id": f"call_{n}", "name": "lookup", "arguments": {"query": "x"}}


MODULES: dict[str, Callable[[], ts.Module]] = {
    "predict": lambda: ts.Predict(Double, lm=make_lm(), max_retries=5, token_budget=1),
    "cot": lambda: ts.ChainOfThought(Double, lm=make_lm(), max_retries=5, token_budget=1),
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("name", list(MODULES))
def test_a_call_budget_counts_a_reply_without_usage_at_its_estimate(
    llm: respx.MockRouter, name: str, stream: bool
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=always(lambda: reply("{}", stream=stream))
    )
    with pytest.raises(TokenBudgetExceededError, match=ESTIMATED) as info:
        final(MODULES[name](), stream, number=2)
    assert route.call_count == 1  # not max_retries more: the estimate spent the budget
    assert info.value.usage == ts.prediction.Usage()  # what the endpoint reported


def test_a_think_then_format_draft_without_usage_counts_on_the_call_budget(
    llm: respx.MockRouter,
) -> None:
    invalid = reply("{}", usage={"prompt_tokens": 1, "completion_tokens": 0})
    route = llm.post("/chat/completions").mock(
        side_effect=[reply("It is four."), invalid, invalid, invalid]
    )
    predict = ts.Predict(
        Double, lm=make_lm(), mode="think_then_format", max_retries=2, token_budget=10
    )
    with pytest.raises(TokenBudgetExceededError, match=ESTIMATED) as info:
        predict(number=2)
    # The draft's prompt alone is over 10 tokens: the first failed format attempt ends it.
    assert route.call_count == 2
    assert info.value.usage.total_tokens == 1


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_native_react_run_counts_steps_without_usage_at_their_estimate(
    llm: respx.MockRouter, stream: bool
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=always(lambda: reply(calls=[lookup_call()], stream=stream))
    )
    agent = ts.ReAct(Ask, tools=[lookup], lm=make_lm(), max_iters=5, token_budget=1)
    with pytest.raises(TokenBudgetExceededError, match=ESTIMATED) as info:
        final(agent, stream, question="?")
    assert route.call_count == 1  # no second step, no extraction
    assert info.value.usage == ts.prediction.Usage()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_union_react_run_counts_steps_without_usage_at_their_estimate(
    llm: respx.MockRouter, stream: bool
) -> None:
    step = json.dumps({"reasoning": "look", "next": {"_type": "lookup", "query": "x"}})
    route = llm.post("/chat/completions").mock(
        side_effect=always(lambda: reply(step, stream=stream))
    )
    agent = ts.ReAct(Ask, tools=[lookup], lm=make_lm(), mode="union", max_iters=5, token_budget=1)
    with pytest.raises(TokenBudgetExceededError, match=ESTIMATED) as info:
        final(agent, stream, question="?")
    assert route.call_count == 1  # each step valid: only the run's count can stop it
    assert info.value.usage == ts.prediction.Usage()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_react_extraction_without_usage_counts_on_the_run_budget(
    llm: respx.MockRouter, stream: bool
) -> None:
    step = reply(calls=[lookup_call()], stream=stream, usage={"prompt_tokens": 1})
    invalid = [reply("{}", stream=stream) for _ in range(4)]
    route = llm.post("/chat/completions").mock(side_effect=[step, *invalid])
    agent = ts.ReAct(Ask, tools=[lookup], lm=make_lm(), max_iters=1, token_budget=3)
    with pytest.raises(TokenBudgetExceededError, match=ESTIMATED) as info:
        final(agent, stream, question="?")
    assert route.call_count == 2  # the step (1 token), one extraction attempt (its estimate)
    assert str(info.value).startswith("AskExtract: token budget of 2 ")  # what the run left
    assert info.value.usage == ts.prediction.Usage()  # the extraction's, as reported
