"""Issue 23: DSPy habits that failed quietly now work or fail loudly, at the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import Reply, StandIn


class Ask(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


@pytest.mark.parametrize(
    "build",
    [
        lambda: ts.Predict(Ask, n=2),
        lambda: ts.ChainOfThought(Ask, n=3),
        lambda: ts.ReAct(Ask, tools=[], n=2),
        lambda: ts.LM("gpt-4o-mini", n=2),
    ],
)
def test_n_above_one_is_refused_where_it_is_given(build: Any) -> None:
    # One completion is read per request: the others would be paid for and dropped.
    with pytest.raises(ts.ConfigurationError, match=r"n=\d asks for several completions"):
        build()


def test_a_litellm_openai_prefix_is_understood_and_another_provider_refused() -> None:
    assert ts.LM("openai/gpt-4o-mini").model == "gpt-4o-mini"
    with pytest.raises(ts.ConfigurationError, match="LiteLLM-style provider prefix"):
        ts.LM("anthropic/claude-3-5-sonnet")
    # At a server of the user's, a slash is part of the name (vLLM, a LiteLLM proxy's routes).
    with StandIn() as server:
        lm = ts.LM("meta-llama/Llama-3.1-8B", base_url=server.base_url, api_key="sk-x")
        try:
            ts.Predict(Ask, lm=lm)(question="q")
        finally:
            lm.close()
    assert server.requests[0]["model"] == "meta-llama/Llama-3.1-8B"


class Pipeline(ts.Module):
    def __init__(self) -> None:
        self.ask = ts.Predict(Ask, max_retries=0)

    async def aforward(self, *, question: str) -> ts.Prediction[Ask]:
        return await self.ask.acall(question=question)


@pytest.mark.parametrize(
    "make",
    [lambda: ts.ReAct(Ask, tools=[], max_iters=1, max_requests=None), lambda: Pipeline()],
    ids=["react", "module"],
)
def test_try_call_returns_an_output_failure_on_every_module(make: Any) -> None:
    bad = json.dumps({"answer": "not a number"})
    with StandIn() as server:
        server.enqueue(*[Reply(content=bad)] * 8)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="llama.cpp")
        try:
            with ts.context(lm=lm):
                result = make().try_call(question="q")
        finally:
            lm.close()
    assert isinstance(result, ts.errors.OutputValidationError)
