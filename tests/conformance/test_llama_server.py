"""typedspy against real llama.cpp-based servers and a real small model (opt-in: real_engine).

Every test runs once per engine (`llama.ENGINES`: llama-server and llama-cpp-python's server),
each through its built-in profile. Run with ``bash tests/conformance/real_engine.sh``; an
engine that is not there skips its tests with a one-line reason.
"""

from __future__ import annotations

import pytest
from llama import PROFILES, TIMEOUT, Engine
from tasks import REVIEWS, TEXTS, Classify, Company, Extract, Person

import typedspy as ts
from typedspy.testing import RouteTicket, support_tickets

pytestmark = pytest.mark.real_engine
CALLS = 40


def _cap(lm: ts.LM) -> int:
    cap = lm.profile.max_tokens
    assert cap is not None, f"the {lm.profile.name} profile caps structured calls"
    return cap


def test_union_outputs_are_typed_in_at_least_95_percent_of_calls(lm: ts.LM) -> None:
    # The profile's first mode: json_schema on llama-server, json_object (with the schema) on
    # llama-cpp-python, which refuses json_schema.
    predict = ts.Predict(Extract, lm=lm, mode=lm.profile.modes[0])
    typed = 0
    for i in range(CALLS):
        result = predict.try_call(text=TEXTS[i % len(TEXTS)])
        if isinstance(result, ts.Prediction):
            assert isinstance(result.entity, Person | Company)
            typed += 1
            attempts = result.attempts
        else:
            attempts = result.attempts
        for attempt in attempts:
            assert attempt.usage.completion_tokens <= _cap(lm)
    assert typed / CALLS >= 0.95, f"{typed}/{CALLS} typed"


def test_every_mode_the_profile_allows_returns_typed_values(lm: ts.LM) -> None:
    failed: dict[str, list[str]] = {}
    for mode in lm.profile.modes:
        for review in REVIEWS:
            result = ts.Predict(Classify, lm=lm, mode=mode).try_call(review=review)
            if not isinstance(result, ts.Prediction):
                failed.setdefault(mode, []).append(str(result))
    assert failed == {}


def test_chain_of_thought_returns_reasoning_and_a_typed_value(lm: ts.LM) -> None:
    pred = ts.ChainOfThought(Extract, lm=lm)(text=TEXTS[1])
    assert isinstance(pred.reasoning, str)
    assert isinstance(pred.entity, Person | Company)


def test_streaming_ends_with_a_typed_prediction(lm: ts.LM) -> None:
    final = None
    for event in ts.Predict(Extract, lm=lm).stream(text=TEXTS[0]):
        final = event
    assert isinstance(final, ts.Prediction)
    assert isinstance(final.entity, Person | Company)


def test_a_token_budget_counts_streamed_calls(lm: ts.LM) -> None:
    # llama-cpp-python's server sends no usage on streams: the budget counts an estimate then
    # (ADR-090), so a token limit still stops the calls.
    budget = ts.limits.Budget(total_tokens=1_000_000)
    with ts.context(budget=budget):
        for event in ts.Predict(Extract, lm=lm).stream(text=TEXTS[0]):
            final = event
    assert isinstance(final, ts.Prediction)
    assert budget.usage.prompt_tokens > 0
    assert budget.usage.completion_tokens > 0

    tight = ts.limits.Budget(total_tokens=budget.usage.total_tokens)
    with ts.context(budget=tight), pytest.raises(ts.BudgetExceededError):
        for _ in range(3):
            list(ts.Predict(Extract, lm=lm).stream(text=TEXTS[0]))


@ts.tool
def lookup_age(name: str) -> int:
    """Look up a person's age in years."""
    return {"ada": 36}.get(name.lower().split()[0], 40)


class Answer(ts.Signature):
    """Answer the question; look facts up with the tools."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


def test_react_returns_a_typed_answer(lm: ts.LM) -> None:
    agent = ts.ReAct(Answer, tools=[lookup_age], lm=lm, max_iters=4)
    pred = agent(question="How old was Ada?")
    assert isinstance(pred.answer, int)


def test_evaluate_and_labeled_few_shot_run_end_to_end(lm: ts.LM) -> None:
    train, dev = support_tickets()
    with ts.context(lm=lm):
        plain = ts.evaluate(ts.Predict(RouteTicket), dev[:4], concurrency=2, timeout=300)
        fewshot = ts.optimize.LabeledFewShot(k=3, verbose=False).compile(
            ts.Predict(RouteTicket), train
        )
        shown = ts.evaluate(fewshot, dev[:4], concurrency=2, timeout=300)
    for report in (plain, shown):
        assert len(report.items) == 4
        assert "transport" not in report.failures, report.table()
        assert report.calls >= 4
        for item in report.items:
            assert (item.outputs is None) == (item.failure is not None)


def test_the_server_is_identified_without_a_profile(engine: Engine, base_url: str) -> None:
    lm = ts.LM("smollm2", base_url=base_url, api_key="none", timeout=TIMEOUT)
    try:
        assert lm.identify().name == PROFILES[engine]
    finally:
        lm.close()


# What each engine's source says it does with each capability (docs/profiles.md, ADR-085);
# the probe must find the same on the real server.
PROBED: dict[Engine, dict[str, str]] = {
    "llama-server": {
        "json_schema": "enforced",
        "strict_rules": "ignored",
        "json_object": "enforced",
        "stream_usage": "enforced",
        "max_tokens": "enforced",
    },
    "llama-cpp-python": {
        "json_schema": "refused",
        "json_object": "enforced",
        "tools": "enforced",
        "stream_usage": "ignored",
        "max_tokens": "enforced",
    },
}


def test_the_probe_finds_what_the_engine_enforces(engine: Engine, base_url: str) -> None:
    lm = ts.LM("smollm2", base_url=base_url, api_key="none")
    try:
        report = lm.probe(timeout=TIMEOUT)
    finally:
        lm.close()
    found = {capability: report.verdict(capability) for capability in PROBED[engine]}
    assert found == PROBED[engine], str(report)
