"""ReAct's bounds: tool calls run per step, the run's token budget, `ts.limits.Budget` on steps."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
import respx
from react_wire import BASE_URL, Call, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.errors import BudgetExceededError, ConfigurationError, TokenBudgetExceededError
from typedspy.testing import chat_completion
from typedspy.tools import Tool, tool


class Ask(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


@pytest.fixture
def runs() -> Counter[str]:
    return Counter()


@pytest.fixture
def ping(runs: Counter[str]) -> Tool:
    @tool
    def ping(n: int) -> str:
        """Ping once."""
        runs["ping"] += 1
        return f"pong {n}"

    return ping


def _pings(count: int) -> list[Call]:
    return [(f"call_{n}", "ping", {"n": n}) for n in range(count)]


def test_one_message_with_many_calls_runs_at_most_the_default(
    router: respx.MockRouter, ping: Tool, runs: Counter[str]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(*_pings(50_000)), finish_reply(answer="done")]
    )
    pred = ts.ReAct(Ask, tools=[ping], lm=make_lm())(question="ping a lot")

    assert runs["ping"] == 8  # the default max_tool_calls
    # The calls past the bound are left out, said once: main sent back all 50,000 calls, each
    # answered "not run", in every later request (12 MB; ADR-101).
    assistant, *answered, told = bodies(route)[1]["messages"][2:]
    assert [c["id"] for c in assistant["tool_calls"]] == [f"call_{n}" for n in range(8)]
    assert [m["content"] for m in answered] == [f"pong {n}" for n in range(8)]
    assert told["role"] == "user"
    assert told["content"].endswith(
        "This reply made 50000 calls; 49992 of them were left out and not run (at most 8 tool "
        "calls and 8 finish calls are read per step). Make those still needed in later steps."
    )
    assert len(json.dumps(bodies(route)[1])) < 5_000
    assert pred.answer == "done"
    assert len(pred.trajectory.calls) == 9


def test_the_bound_is_configurable_and_finish_is_not_a_tool_run(
    router: respx.MockRouter, ping: Tool, runs: Counter[str]
) -> None:
    finishes = [
        ("call_f0", "finish", {"answer": 0}),  # invalid: the next finish is read
        ("call_f1", "finish", {"answer": "ok"}),
        ("call_f2", "finish", {"answer": "late"}),
    ]
    router.post("/chat/completions").mock(side_effect=[calls_reply(*_pings(3), *finishes)])
    pred = ts.ReAct(Ask, tools=[ping], lm=make_lm(), max_tool_calls=2)(question="?")

    assert runs["ping"] == 2
    # The first two calls of each kind are kept, in order.
    assert [c.id for c in pred.trajectory[0].calls] == ["call_0", "call_1", "call_f0", "call_f1"]
    assert pred.trajectory[0].note is not None
    assert "2 of them were left out" in pred.trajectory[0].note
    assert pred.answer == "ok"


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_a_bad_bound_is_refused(ping: Tool, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="max_tool_calls"):
        ts.ReAct(Ask, tools=[ping], lm=make_lm(), max_tool_calls=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="token_budget"):
        ts.ReAct(Ask, tools=[ping], lm=make_lm(), token_budget=bad)  # type: ignore[arg-type]


def _costly(call: Call) -> httpx.Response:
    body = chat_completion(
        None,
        tool_calls=[{"id": call[0], "name": call[1], "arguments": call[2]}],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 90, "completion_tokens": 10},
    )
    return httpx.Response(200, json=body)


def test_the_token_budget_ends_a_run_without_an_answer(
    router: respx.MockRouter, ping: Tool, runs: Counter[str]
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[_costly(("call_1", "ping", {"n": 1})), _costly(("call_2", "ping", {"n": 2}))]
    )
    agent = ts.ReAct(Ask, tools=[ping], lm=make_lm(), max_iters=10, token_budget=150)
    with pytest.raises(TokenBudgetExceededError, match="token budget of 150") as info:
        agent(question="?")

    assert len(route.calls) == 2  # 100 tokens, then 200: no third step, no extraction
    assert info.value.usage.total_tokens == 200
    assert runs["ping"] == 2


def test_the_token_budget_setting_applies_to_react(router: respx.MockRouter, ping: Tool) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[_costly(("call_1", "ping", {"n": 1}))]
    )
    with ts.context(token_budget=50), pytest.raises(TokenBudgetExceededError):
        ts.ReAct(Ask, tools=[ping], lm=make_lm())(question="?")
    assert len(route.calls) == 1


def test_a_budget_stops_react_steps_before_they_are_sent(
    router: respx.MockRouter, ping: Tool
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("call_1", "ping", {"n": 1})), calls_reply(*_pings(1))]
    )
    with ts.context(budget=ts.limits.Budget(requests=2)), pytest.raises(BudgetExceededError):
        ts.ReAct(Ask, tools=[ping], lm=make_lm())(question="?")
    assert len(route.calls) == 2  # the third step was refused, not sent
