"""`module.render(**inputs)` is the body the endpoint receives on the next call (issue 22).

Every module and mode against the stand-in over a real socket: render first (nothing is sent),
then call, and compare with the body the server received, after JSON normalisation.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.pipeline import last_exchanges
from typedspy.testing import StandIn


class Exact(BaseModel):
    value: float


class Estimate(BaseModel):
    low: float
    high: float


class Measure(ts.Signature):
    """Measure the quantity."""

    question: str = ts.InputField()
    result: Exact | Estimate = ts.OutputField()
    unit: str = ts.OutputField()


@ts.tool
def convert(value: float, unit: str) -> str:
    """Convert a value to metres."""
    return f"{value} {unit}"


class Pipeline(ts.Module):
    """A program of two predictors; its first request is the first predictor's."""

    def __init__(self) -> None:
        self.first = ts.Predict(Measure, temperature=0.2)
        self.second = ts.ChainOfThought("unit -> explanation")

    async def aforward(self, *, question: str) -> Any:
        measured = await self.first.acall(question=question)
        return await self.second.acall(unit=measured.unit)


def normal(body: dict[str, Any]) -> Any:
    return json.loads(json.dumps(body))


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as standin:
        yield standin


Make = Callable[[ts.LM], ts.Module]
MODULES: dict[str, tuple[str | None, Make]] = {
    "predict-json_schema": (None, lambda lm: ts.Predict(Measure, lm=lm)),
    "predict-json_object": (None, lambda lm: ts.Predict(Measure, lm=lm, mode="json_object")),
    "predict-prompt": (None, lambda lm: ts.Predict(Measure, lm=lm, mode="prompt")),
    "predict-tools": (None, lambda lm: ts.Predict(Measure, lm=lm, mode="tools")),
    "predict-demos": (
        None,
        lambda lm: ts.Predict(
            Measure,
            lm=lm,
            demos=[{"question": "q", "result": Exact(value=1), "unit": "m"}],
            max_tokens=50,
        ),
    ),
    "cot-llama.cpp": ("llama.cpp", lambda lm: ts.ChainOfThought(Measure, lm=lm)),
    "react-tools": (None, lambda lm: ts.ReAct(Measure, tools=[convert], lm=lm)),
    "react-tools-vllm": ("vllm", lambda lm: ts.ReAct(Measure, tools=[convert], lm=lm)),
    "react-union": (None, lambda lm: ts.ReAct(Measure, tools=[convert], lm=lm, mode="union")),
    "module": (None, lambda lm: _with_lm(Pipeline(), lm)),
}


def _with_lm(module: Pipeline, lm: ts.LM) -> Pipeline:
    module.first.lm = lm
    module.second.lm = lm
    return module


@pytest.mark.parametrize("name", MODULES)
def test_render_is_the_body_the_next_call_sends(name: str, server: StandIn) -> None:
    profile, make = MODULES[name]
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile, seed=7)
    module = make(lm)
    try:
        shown = module.render(question="How long is the bridge?")
        assert server.requests == []  # nothing was sent
        try:
            module(question="How long is the bridge?")
        except ts.TypedspyError:
            pass  # the stand-in's generated steps may not finish a run: the first request counts
    finally:
        lm.close()

    assert normal(shown) == server.requests[0]


def test_arender_is_the_same_from_async_code(server: StandIn) -> None:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
    predict = ts.Predict(Measure, lm=lm)

    async def both() -> tuple[dict[str, Any], Any]:
        return await predict.arender(question="q"), await predict.acall(question="q")

    try:
        shown, _ = asyncio.run(both())
    finally:
        lm.close()
    assert normal(shown) == server.requests[0]


def test_render_takes_no_part_in_callbacks_cache_budget_or_history(server: StandIn) -> None:
    seen: list[str] = []

    class Watch(ts.BaseCallback):
        def on_lm_start(self, call_id: str, instance: Any, request: Any) -> None:
            seen.append(call_id)

    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
    budget = ts.limits.Budget(requests=1)
    cache = ts.cache.MemoryCache()
    before = last_exchanges(50)
    try:
        with ts.context(callbacks=[Watch()], budget=budget, cache=cache, history_size=50):
            ts.Predict(Measure, lm=lm).render(question="q")
    finally:
        lm.close()
    assert seen == [] and budget.requests == 0 and len(cache) == 0
    assert last_exchanges(50) == before


def test_render_checks_inputs_and_refuses_a_module_that_sends_nothing() -> None:
    class Echo(ts.Module):
        async def aforward(self, *, text: str) -> str:
            return text

    with pytest.raises(ts.InputError):
        ts.Predict(Measure, lm=ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key="x")).render()
    with pytest.raises(ts.ConfigurationError, match="nothing to render"):
        Echo().render(text="hi")
