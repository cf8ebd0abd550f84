"""One road (issue 22): a `Predict` attempt and a ReAct native step run the same attempt loop.

The same wire scripts, over respx with the real openai client, go to both: a runaway reply gets
the same one re-ask (its note, its parameters), a second runaway of the kind the same typed
truncation, a refused feature the same step-down, a `ts.limits.Budget` the same refusal, and
callbacks
the same attempt events.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import respx
from react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm

import typedspy as ts
from typedspy.engine import MAX_STEP_DOWNS, stepping_down
from typedspy.errors import LMUnsupportedFeatureError
from typedspy.profiles import builtin
from typedspy.testing import StandIn, chat_completion, error_body


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


REPEATING = '{"answer": "' + "and so on, " * 40


def _predict_cut() -> httpx.Response:
    return httpx.Response(200, json=chat_completion(REPEATING, finish_reason="length"))


def _predict_ok() -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps({"answer": "shipped"})))


def _react_cut() -> httpx.Response:
    call = {"id": "call_cut", "name": "finish", "arguments": REPEATING}
    return httpx.Response(
        200, json=chat_completion(None, tool_calls=[call], finish_reason="length")
    )


def _react_ok() -> httpx.Response:
    return finish_reply(answer="shipped")


Module = Callable[[ts.LM], Any]
DRIVERS: dict[str, tuple[Module, Callable[[], httpx.Response], Callable[[], httpx.Response]]] = {
    "predict": (lambda lm: ts.Predict(Ask, lm=lm), _predict_cut, _predict_ok),
    "react": (lambda lm: ts.ReAct(Ask, tools=[lookup], lm=lm), _react_cut, _react_ok),
}


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


class Attempts(ts.BaseCallback):
    def __init__(self) -> None:
        self.started: list[int] = []
        self.kinds: list[str | None] = []

    def on_attempt_start(self, call_id: str, instance: Any, number: int) -> None:
        self.started.append(number)

    def on_attempt_end(self, call_id: str, attempt: Any, exception: Any) -> None:
        self.kinds.append(attempt.kind if attempt is not None else None)


@pytest.mark.parametrize("name", DRIVERS)
def test_a_runaway_reply_gets_the_same_one_re_ask(name: str, router: respx.MockRouter) -> None:
    make, cut, ok = DRIVERS[name]
    route = router.post("/chat/completions").mock(side_effect=[cut(), ok()])
    seen = Attempts()

    with ts.context(callbacks=[seen]):
        pred = make(make_lm("vllm"))(question="where is order 7?")

    assert pred.answer == "shipped"
    first, again = bodies(route)
    assert "frequency_penalty" not in first and again["frequency_penalty"] == 1.0
    assert again["messages"][: len(first["messages"])] == first["messages"]
    (note,) = again["messages"][len(first["messages"]) :]  # the runaway reply is not sent back
    assert note["role"] == "user" and "repeated itself" in note["content"]
    assert seen.started == [1, 2]
    assert seen.kinds == ["repetition_loop", None]


@pytest.mark.parametrize("name", DRIVERS)
def test_a_second_runaway_is_the_same_typed_truncation(name: str, router: respx.MockRouter) -> None:
    make, cut, _ = DRIVERS[name]
    route = router.post("/chat/completions").mock(side_effect=[cut(), cut()])

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        make(make_lm("vllm"))(question="where is order 7?")

    assert route.call_count == 2
    assert caught.value.kind == "repetition_loop"
    assert [a.kind for a in caught.value.attempts] == ["repetition_loop", "repetition_loop"]
    assert caught.value.raw == REPEATING


@pytest.mark.parametrize("name", DRIVERS)
def test_a_budget_refuses_the_re_ask_the_same_way(name: str, router: respx.MockRouter) -> None:
    make, cut, ok = DRIVERS[name]
    route = router.post("/chat/completions").mock(side_effect=[cut(), ok()])
    budget = ts.limits.Budget(requests=1)

    with ts.context(budget=budget), pytest.raises(ts.BudgetExceededError):
        make(make_lm("vllm"))(question="where is order 7?")

    assert route.call_count == 1  # the re-ask was refused before it was sent


def test_a_refused_feature_steps_down_in_both(router: respx.MockRouter) -> None:
    no_schema = httpx.Response(
        400, json=error_body("response_format json_schema is not supported by this model")
    )
    no_tools = httpx.Response(
        400,
        json=error_body(
            "This model does not support tools.", param="tools", code="unsupported_parameter"
        ),
    )
    step = {"reasoning": "known", "next": {"_type": "finish", "answer": "shipped"}}
    route = router.post("/chat/completions").mock(
        side_effect=[
            no_schema,
            _predict_ok(),
            no_tools,
            httpx.Response(200, json=chat_completion(json.dumps(step))),
        ]
    )

    assert ts.Predict(Ask, lm=make_lm("openai"))(question="q").answer == "shipped"
    assert ts.ReAct(Ask, tools=[lookup], lm=make_lm("openai"))(question="q").answer == "shipped"

    sent = bodies(route)
    assert sent[0]["response_format"]["type"] == "json_schema"
    assert sent[1].get("response_format", {}).get("type") != "json_schema"  # stepped down
    assert "tools" in sent[2] and "tools" not in sent[3]  # the union step


def test_a_tool_step_and_its_calls_count_as_one_attempt_each(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[calls_reply(("call_1", "lookup", {"order": "7"})), _react_ok()]
    )
    seen = Attempts()

    with ts.context(callbacks=[seen]):
        pred = ts.ReAct(Ask, tools=[lookup], lm=make_lm("openai"))(question="order 7?")

    assert pred.answer == "shipped" and route.call_count == 2
    assert seen.started == [1, 1]  # each step is a first attempt: nothing was re-asked


def test_stepping_down_is_bounded() -> None:
    runs = 0

    async def refused() -> AsyncIterator[None]:
        nonlocal runs
        runs += 1
        raise LMUnsupportedFeatureError("no", feature="tools")
        yield  # an async generator

    async def drain() -> None:
        async for _ in stepping_down(refused, lambda exc: True):  # always "steps down"
            pass

    with pytest.raises(LMUnsupportedFeatureError):
        asyncio.run(drain())
    assert runs == MAX_STEP_DOWNS + 1


def test_a_mode_asked_for_by_name_is_not_stepped_down_from() -> None:
    with StandIn(supports_json_schema=False) as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0)
        try:
            with pytest.raises(LMUnsupportedFeatureError) as caught:
                ts.Predict(Ask, lm=lm, mode="json_schema")(question="Where is order 7?")
        finally:
            lm.close()
    assert caught.value.feature == "response_format"
    assert len(server.requests) == 1  # refused once, not retried in another mode


def test_a_refusal_in_the_profiles_last_mode_is_raised_not_stepped_past_then_or_later() -> None:
    only_schema = builtin("openai").derive(name="only-schema", modes=("json_schema",))
    with StandIn(supports_json_schema=False) as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile=only_schema)
        try:
            with pytest.raises(LMUnsupportedFeatureError) as caught:
                ts.Predict(Ask, lm=lm)(question="Where is order 7?")
            assert lm.profile.rejects("json_schema")  # remembered
            # The next call stays within the profile's modes (it does not fall to prompt mode)
            with pytest.raises(LMUnsupportedFeatureError):
                ts.Predict(Ask, lm=lm)(question="Where is order 8?")
        finally:
            lm.close()
    assert caught.value.feature == "response_format"
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema"] * 2
