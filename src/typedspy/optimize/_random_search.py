"""`BootstrapFewShotWithRandomSearch`: several demo sets, each scored on a validation set."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass

from typedspy.errors import check_int
from typedspy.evaluation import EvaluationReport, Example, FieldMetric, Metric, aevaluate
from typedspy.limits import Budget
from typedspy.modules import Module
from typedspy.optimize._base import (
    Optimizer,
    Plan,
    calls_per_run,
    estimate_tokens,
    fresh_copy,
    predictors,
)
from typedspy.optimize._bootstrap import BootstrapFewShot, check_bootstrap_options
from typedspy.optimize._labeled import LabeledFewShot
from typedspy.optimize._stratify import class_step

__all__ = ["BootstrapFewShotWithRandomSearch", "Candidate"]

logger = logging.getLogger("typedspy")


@dataclass(frozen=True)
class Candidate:
    """One candidate program's recipe and its validation score.

    Attributes:
        index: Its position in the search (0: no demos, 1: labelled only, 2: bootstrapped
            in order, then shuffled bootstraps).
        recipe: How its demos were chosen.
        score: Its validation score, 0.0 to 1.0.
    """

    index: int
    recipe: str
    score: float


class BootstrapFewShotWithRandomSearch(Optimizer):
    """Try several demo sets and keep the one that scores best on a validation set.

    The candidates are: no demos; labelled demos only; `BootstrapFewShot` over the training
    set in order; then ``num_candidate_programs`` bootstraps over shuffled copies of it, each
    with a random number (1 to ``max_bootstrapped_demos``) of bootstrapped demos. Every
    candidate is evaluated on ``valset`` (default: the training set); the best one is
    returned, the earliest on ties. The seed fixes every shuffle and sample.

    Example:
        ```python
        search = ts.optimize.BootstrapFewShotWithRandomSearch(num_candidate_programs=4, seed=1)
        best = search.compile(program, trainset, valset=devset)
        search.candidates  # each candidate's recipe and score
        ```

    Args:
        metric: Scores predictions, for bootstrapping and validation (default `FieldMetric()`).
        num_candidate_programs: Shuffled bootstraps to try (besides the three fixed ones).
        max_bootstrapped_demos / max_labeled_demos / max_rounds / metric_threshold: As for
            `BootstrapFewShot`.
        seed: The random seed.
        stratify: Spread every candidate's demos over the output classes (ADR-082), as
            `LabeledFewShot` and `BootstrapFewShot` do.
        concurrency: Runs at once.
        budget: A `ts.limits.Budget` for every request of the search (default: the ``budget``
            setting). When it runs out, the search stops and returns the best candidate
            evaluated in full so far.
        verbose: Print the plan before compiling.

    Attributes:
        candidates: The `Candidate` list of the last compile, in the order they were tried.
    """

    scores_valset = True  # the winner's validation score is its record (ADR-083)

    def __init__(
        self,
        metric: Metric | None = None,
        *,
        num_candidate_programs: int = 8,
        max_bootstrapped_demos: int = 4,
        max_labeled_demos: int = 16,
        max_rounds: int = 1,
        metric_threshold: float = 1.0,
        seed: int = 0,
        stratify: bool = True,
        concurrency: int = 8,
        budget: Budget | None = None,
        verbose: bool = True,
    ) -> None:
        owner = "BootstrapFewShotWithRandomSearch"
        check_int(
            owner, "num_candidate_programs", num_candidate_programs, minimum=0, optional=False
        )
        check_bootstrap_options(
            owner,
            metric_threshold=metric_threshold,
            max_bootstrapped_demos=max_bootstrapped_demos,
            max_labeled_demos=max_labeled_demos,
            max_rounds=max_rounds,
            concurrency=concurrency,
        )
        self.metric = metric if metric is not None else FieldMetric()
        self.num_candidate_programs = num_candidate_programs
        self.max_bootstrapped_demos = max_bootstrapped_demos
        self.max_labeled_demos = max_labeled_demos
        self.max_rounds = max_rounds
        self.metric_threshold = metric_threshold
        self.seed = seed
        self.stratify = stratify
        self.concurrency = concurrency
        self.budget = budget
        self.verbose = verbose
        self.candidates: list[Candidate] = []

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """The plan and budget for compiling ``program`` (validating on ``valset`` or items)."""
        val = valset if valset is not None else items
        per_run = calls_per_run(program)
        bootstraps = 1 + self.num_candidate_programs
        boot_calls = bootstraps * self.max_rounds * len(items) * per_run
        val_calls = (3 + self.num_candidate_programs) * len(val) * per_run
        calls = boot_calls + val_calls
        return Plan(
            f"BootstrapFewShotWithRandomSearch(num_candidate_programs="
            f"{self.num_candidate_programs}, max_bootstrapped_demos="
            f"{self.max_bootstrapped_demos}, seed={self.seed})",
            [
                "build candidates: no demos, labelled only, bootstrapped in order, and "
                f"{self.num_candidate_programs} bootstraps over shuffled training sets",
                f"evaluate each candidate on {len(val)} validation examples",
                "return the best candidate (the earliest on ties)",
                class_step(predictors(program), items, self.stratify),
            ],
            max_calls=calls,
            est_tokens=estimate_tokens(items, calls, self.max_labeled_demos),
        )

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        """Return the best-scoring candidate (a new program)."""
        val = valset if valset is not None else items
        rng = random.Random(self.seed)
        self.candidates = []
        best: tuple[EvaluationReport, Module] | None = None
        for index in range(3 + self.num_candidate_programs):
            recipe, candidate, spent = await self._candidate(index, program, items, rng)
            report = await aevaluate(
                candidate, val, self.metric, concurrency=self.concurrency, budget=self.budget
            )
            if spent or "budget" in report.failures:
                break  # a candidate cut short by the budget is not comparable
            self.candidates.append(Candidate(index, recipe, report.score))
            if best is None or report.score > best[0].score:
                best = (report, candidate)
        if best is None:  # the budget ran out before one candidate was evaluated in full
            logger.warning("random search: budget spent before any candidate; no demos added")
            return fresh_copy(program)
        if valset is not None:
            self._val_report = best[0]
        return best[1]

    async def _candidate(
        self, index: int, program: Module, items: list[Example], rng: random.Random
    ) -> tuple[str, Module, bool]:
        if index == 0:
            compiled = fresh_copy(program)
            for _, predictor in predictors(compiled):
                predictor.demos = []
            return "no demos", compiled, False
        if index == 1:
            labeled = LabeledFewShot(
                self.max_labeled_demos, seed=self.seed, stratify=self.stratify, verbose=False
            )
            compiled = await labeled.acompile(program, items)
            return f"{self.max_labeled_demos} labelled", compiled, False
        order = list(items)
        size = self.max_bootstrapped_demos
        if index > 2:
            rng.shuffle(order)
            size = rng.randint(1, max(1, self.max_bootstrapped_demos))
        bootstrap = BootstrapFewShot(
            self.metric,
            metric_threshold=self.metric_threshold,
            max_bootstrapped_demos=size,
            max_labeled_demos=self.max_labeled_demos,
            max_rounds=self.max_rounds,
            seed=self.seed + index,
            stratify=self.stratify,
            concurrency=self.concurrency,
            budget=self.budget,
            verbose=False,
        )
        compiled = await bootstrap.acompile(program, order)
        how = "in order" if index == 2 else "shuffled"
        recipe = f"bootstrap {size} ({how}), passed {len(bootstrap.result.passed)}"
        return recipe, compiled, bootstrap.result.budget_spent
