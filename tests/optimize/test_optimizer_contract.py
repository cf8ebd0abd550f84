"""What every optimizer promises: its plan before any request, the budget, the original intact.

And random search's choice, proved at the wire: the program it returns sends the demos of the
candidate that scored best on the validation set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from wire_demos import demos_sent, query_of

import typedspy as ts
from served import nearest, served
from typedspy.testing import RouteTicket, StandIn, support_tickets

TRAIN, DEV = support_tickets()

OPTIMIZERS: dict[str, Callable[[], ts.optimize.Optimizer]] = {
    "labeled": lambda: ts.optimize.LabeledFewShot(k=3, seed=1),
    "bootstrap": lambda: ts.optimize.BootstrapFewShot(
        max_bootstrapped_demos=2, max_labeled_demos=3
    ),
    "random_search": lambda: ts.optimize.BootstrapFewShotWithRandomSearch(
        num_candidate_programs=1, max_bootstrapped_demos=2, max_labeled_demos=3
    ),
    "knn": lambda: ts.optimize.KNNFewShot(k=2),
}


class Recorded:
    """A text stream that notes how many requests the server had seen at each write."""

    def __init__(self, server: StandIn) -> None:
        self.server = server
        self.writes: list[tuple[str, int]] = []

    def write(self, text: str) -> int:
        self.writes.append((text, sent(self.server)))
        return len(text)

    def flush(self) -> None:
        pass


def sent(server: StandIn) -> int:
    return len(server.requests) + len(server.embedding_requests)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_each_optimizer_prints_its_plan_first_keeps_the_budget_and_the_original(
    name: str,
) -> None:
    program = ts.Predict(RouteTicket, max_retries=0)
    before = program.dump_state()
    budget = ts.limits.Budget(requests=5)
    with served(nearest()) as (server, _):
        optimizer = OPTIMIZERS[name]()
        out = Recorded(server)
        optimizer.out = out  # type: ignore[assignment]
        with ts.context(budget=budget):
            compiled = optimizer.compile(program, TRAIN, valset=DEV[:3])
        total = sent(server)
    first = next((i for i, (t, _) in enumerate(out.writes) if "demos cover" in t), None)
    plan = out.writes[:first]
    text = "".join(t for t, _ in plan)
    assert [n for _, n in plan] == [0] * len(plan)  # the plan is printed before any request
    covered = [t for t, _ in out.writes if "demos cover" in t]  # after compiling
    shown = any(p.demos for _, p in compiled.named_predictors())  # type: ignore[attr-defined]
    assert bool(covered) == shown  # none for a KNN program: it picks demos per call
    assert text.startswith(f"{type(optimizer).__name__}(") and "budget: at most" in text
    assert "capped by ts.limits.Budget(requests=5)" in text
    assert optimizer.plan is not None and optimizer.plan.budget is budget
    assert total <= 5 and budget.requests == total
    assert compiled is not program and program.dump_state() == before


def test_random_search_returns_the_program_whose_demos_scored_best_at_the_wire() -> None:
    optimizer = ts.optimize.BootstrapFewShotWithRandomSearch(
        num_candidate_programs=2,
        max_bootstrapped_demos=3,
        max_labeled_demos=3,
        seed=5,
        concurrency=4,
        verbose=False,
    )
    dev_tickets = {ex.ticket for ex in DEV}
    with served(nearest()) as (server, _):
        best = optimizer.compile(ts.Predict(RouteTicket), TRAIN, valset=DEV)
        during = [b for b in server.requests if query_of(b) in dev_tickets]
        del server.requests[:]
        best(**DEV[0].inputs())
        after = demos_sent(server.requests[0])
    # candidates are validated one after another: one block of len(DEV) requests each
    blocks = [during[i : i + len(DEV)] for i in range(0, len(during), len(DEV))]
    assert len(blocks) == len(optimizer.candidates) == 5
    per_candidate: list[Any] = []
    for block in blocks:
        shown = {repr(demos_sent(body)) for body in block}
        assert len(shown) == 1  # every validation request of a candidate carries its demos
        per_candidate.append(demos_sent(block[0]))
    scores = [c.score for c in optimizer.candidates]
    winner = scores.index(max(scores))  # the earliest of the best
    assert after == per_candidate[winner]
    assert len({repr(d) for d in per_candidate}) > 1  # the candidates really differ


def test_an_optimizer_subclass_without_its_optimize_step_cannot_be_made() -> None:
    # Was: made, and its compile printed a plan, then raised a bare NotImplementedError.
    class PlanOnly(ts.optimize.Optimizer):
        def make_plan(
            self, program: ts.Module, items: list[ts.Example], valset: Any = None
        ) -> ts.optimize.Plan:
            return ts.optimize.Plan("plan only", [])

    with pytest.raises(TypeError, match=r"abstract method '?_optimize"):
        PlanOnly()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="make_plan"):
        ts.optimize.Optimizer()  # type: ignore[abstract]
