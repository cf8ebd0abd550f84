from __future__ import annotations

import json
from typing import Any

import pytest
from wire_demos import demos_sent, query_of

import typedspy as ts
from served import nearest, served
from typedspy.testing import RouteTicket, support_tickets

TRAIN, DEV = support_tickets()
FALLBACK_CLASS = {"_type": "Bug", "component": "app"}  # what the model answers unhelped


def quiet(**options: Any) -> ts.optimize.BootstrapFewShot:
    return ts.optimize.BootstrapFewShot(verbose=False, **options)


def test_only_passing_traces_become_demos_and_they_are_what_is_sent() -> None:
    # No labelled demos: the teacher answers its fallback, so exactly the training examples
    # labelled with the fallback class pass, and only they may be sent as demos.
    program = ts.Predict(RouteTicket)
    optimizer = quiet(max_bootstrapped_demos=4, max_labeled_demos=0)
    with served(nearest()) as (server, _):
        compiled = optimizer.compile(program, TRAIN)
        teacher_requests = list(server.requests)
        compiled(ticket=DEV[0].ticket)
    passing = [i for i, ex in enumerate(TRAIN) if ex.to_dict()["route"] == FALLBACK_CLASS]
    assert passing == [2, 8]
    assert optimizer.result.passed == passing
    assert optimizer.result.failed == [i for i in range(12) if i not in passing]
    assert all(demos_sent(body) == [] for body in teacher_requests)
    assert demos_sent(server.requests[-1]) == [
        (TRAIN[i].ticket, {"route": FALLBACK_CLASS}) for i in passing
    ]
    assert program.demos == []  # the original is untouched


def test_the_teacher_never_sees_the_example_it_is_running_on_among_its_demos() -> None:
    optimizer = quiet(max_bootstrapped_demos=12, max_labeled_demos=12)
    with served(nearest()) as (server, _):
        optimizer.compile(ts.Predict(RouteTicket), TRAIN)
    assert len(server.requests) == 12
    for body in server.requests:
        tickets = [ticket for ticket, _ in demos_sent(body)]
        assert len(tickets) == 11
        assert query_of(body) not in tickets


def test_labelled_demos_fill_up_after_bootstrapped_ones_reproducibly() -> None:
    def compile_once() -> tuple[list[int], list[dict[str, Any]]]:
        with served(nearest()):
            optimizer = quiet(max_bootstrapped_demos=2, max_labeled_demos=5, seed=3)
            compiled = optimizer.compile(ts.Predict(RouteTicket), TRAIN)
        state: list[dict[str, Any]] = compiled.dump_state()["predictors"]["self"]["demos"]
        return optimizer.result.passed, state

    passed, first = compile_once()
    assert (passed, first) == compile_once()
    assert len(passed) == 2
    assert len(first) == 5
    boot = {TRAIN[i].ticket for i in passed}
    assert [d["ticket"] for d in first[:2]] == [TRAIN[i].ticket for i in passed]
    assert not {d["ticket"] for d in first[2:]} & boot


def test_chain_of_thought_demos_carry_the_teachers_reasoning() -> None:
    optimizer = quiet(max_bootstrapped_demos=2, max_labeled_demos=0)
    with served(nearest()) as (server, _):
        compiled = optimizer.compile(ts.ChainOfThought(RouteTicket), TRAIN)
        compiled(ticket=DEV[0].ticket)
    assert isinstance(compiled, ts.ChainOfThought)
    assert [set(d) for d in compiled.demos] == [{"ticket", "reasoning", "route"}] * 2
    sent = [json.loads(m["content"]) for m in server.requests[-1]["messages"][2::2][:2]]
    assert all("reasoning" in s and s["route"] == FALLBACK_CLASS for s in sent)


class Explain(ts.Signature):
    """Explain why the ticket goes to that team."""

    ticket: str = ts.InputField()
    team: str = ts.InputField()
    note: str = ts.OutputField()


class Pipeline(ts.Module):
    def __init__(self) -> None:
        self.route = ts.Predict(RouteTicket)
        self.explain = ts.ChainOfThought(Explain)

    async def aforward(self, ticket: str) -> ts.Prediction[RouteTicket]:
        pred = await self.route.acall(ticket=ticket)
        await self.explain.acall(ticket=ticket, team=type(pred.route).__name__)
        return pred


def test_every_predictor_inside_a_module_gets_its_own_traced_demos() -> None:
    optimizer = quiet(max_bootstrapped_demos=2, max_labeled_demos=0)
    with served(nearest()) as (server, _):
        compiled = optimizer.compile(Pipeline(), TRAIN)
        before = len(server.requests)
        compiled(ticket=DEV[0].ticket)
        route_req, explain_req = server.requests[before:]
    assert isinstance(compiled, Pipeline)
    assert optimizer.result.passed == [2, 8]
    assert [d["ticket"] for d in compiled.route.demos] == [TRAIN[2].ticket, TRAIN[8].ticket]
    assert [(d["ticket"], d["team"]) for d in compiled.explain.demos] == [
        (TRAIN[2].ticket, "Bug"),
        (TRAIN[8].ticket, "Bug"),
    ]
    assert all(set(d) == {"ticket", "team", "reasoning", "note"} for d in compiled.explain.demos)
    assert len(demos_sent(route_req)) == 2
    assert "<team>\nBug\n</team>" in explain_req["messages"][1]["content"]


def test_later_rounds_retry_failures_warmer_and_the_plan_states_the_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    optimizer = ts.optimize.BootstrapFewShot(
        max_bootstrapped_demos=3, max_labeled_demos=0, max_rounds=2
    )
    with served(nearest()) as (server, _):
        optimizer.compile(ts.Predict(RouteTicket, max_retries=0), TRAIN)
    out = capsys.readouterr().out
    assert "BootstrapFewShot(max_bootstrapped_demos=3, max_labeled_demos=0, max_rounds=2)" in out
    assert "budget: at most 24 LM calls" in out  # 2 rounds x 12 examples x 1 attempt
    first, second = server.requests[:12], server.requests[12:]
    assert len(second) == 10  # the ten that failed in round one
    assert all("temperature" not in b for b in first)
    assert all(b["temperature"] == pytest.approx(0.701) for b in second)
    assert optimizer.result.calls == 22


def test_the_plan_counts_retries_and_agent_steps() -> None:
    agent = ts.ReAct(RouteTicket, tools=[lookup_customer], max_iters=3)
    plan = quiet(max_rounds=1).make_plan(agent, TRAIN[:2])
    assert plan.max_calls == 2 * (3 + 3)  # 3 steps + the extraction's 1 + 2 retries, twice
    plan = quiet().make_plan(ts.Predict(RouteTicket, max_retries=1), TRAIN)
    assert plan.max_calls == 24


def test_bootstrap_raises_the_score_through_its_demos_alone() -> None:
    program = ts.Predict(RouteTicket)
    with served(nearest()):
        before = ts.evaluate(program, DEV)
        compiled = quiet(max_bootstrapped_demos=12, max_labeled_demos=12).compile(program, TRAIN)
        after = ts.evaluate(compiled, DEV)
        no_demos = compiled.__class__(RouteTicket)  # same program, demos dropped
        again = ts.evaluate(no_demos, DEV)
    assert before.percent == again.percent == 16.67
    assert after.percent == 100.0


def test_a_budget_caps_the_teacher_and_the_plan_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    budget = ts.limits.Budget(requests=5)
    optimizer = ts.optimize.BootstrapFewShot(
        max_bootstrapped_demos=12, max_labeled_demos=0, concurrency=1, budget=budget
    )
    with served(nearest()) as (server, _):
        compiled = optimizer.compile(ts.Predict(RouteTicket, max_retries=0), TRAIN)
    assert "capped by ts.limits.Budget(requests=5)" in capsys.readouterr().out
    assert len(server.requests) == 5
    assert optimizer.result.budget_spent
    assert optimizer.result.passed == [2]  # the one fallback-class example among the first 5
    assert optimizer.result.failed == [0, 1, 3, 4]
    assert [d["ticket"] for d in compiled.demos] == [TRAIN[2].ticket]


def test_the_budget_setting_is_honoured_too() -> None:
    optimizer = quiet(max_bootstrapped_demos=12, max_labeled_demos=0, concurrency=1)
    with served(nearest()) as (server, _), ts.context(budget=ts.limits.Budget(requests=3)):
        optimizer.compile(ts.Predict(RouteTicket, max_retries=0), TRAIN)
    assert len(server.requests) == 3
    assert optimizer.result.budget_spent


def lookup_customer(ticket: str) -> str:
    """Look the customer up."""
    return "a customer"


def test_react_extraction_calls_are_traced_into_demos_for_its_extract_predictor() -> None:
    agent = ts.ReAct(RouteTicket, tools=[lookup_customer], max_iters=1)
    optimizer = quiet(max_bootstrapped_demos=2, max_labeled_demos=0)
    # Steps must call a tool (no response_format beside tools), so the run reaches extraction.
    tools_only = ts.Profile.named("openai").derive(response_format_with_tools=False)
    with served(nearest()) as (server, _):
        lm = ts.LM(
            "standin-1", base_url=server.base_url, api_key="k", max_retries=0, profile=tools_only
        )
        try:
            with ts.context(lm=lm):
                compiled = optimizer.compile(agent, TRAIN)
                before = len(server.requests)
                compiled(ticket=DEV[0].ticket)
        finally:
            lm.close()
    assert isinstance(compiled, ts.ReAct)
    assert optimizer.result.passed == [2, 8]
    assert [d["ticket"] for d in compiled.extract.demos] == [TRAIN[2].ticket, TRAIN[8].ticket]
    assert all("trajectory" in d and d["route"] for d in compiled.extract.demos)
    assert agent.extract.demos == []
    extraction = server.requests[-1]
    assert len(server.requests) - before == 2  # one step, then the extraction
    assert [t for t, _ in demos_sent(extraction)] == [TRAIN[2].ticket, TRAIN[8].ticket]


def test_a_teacher_run_that_fails_is_no_demo_and_is_listed_failed() -> None:
    broken = {ex.ticket for ex in TRAIN[:3]}
    labels = {ex.ticket: ex.to_dict()["route"] for ex in TRAIN}

    def teacher(body: dict[str, Any]) -> str:
        ticket = query_of(body)
        return "not json at all" if ticket in broken else json.dumps({"route": labels[ticket]})

    optimizer = quiet(max_bootstrapped_demos=12, max_labeled_demos=0)
    with served(teacher):
        optimizer.compile(ts.Predict(RouteTicket, max_retries=0), TRAIN)
    assert optimizer.result.failed == [0, 1, 2]
    assert optimizer.result.passed == list(range(3, 12))
