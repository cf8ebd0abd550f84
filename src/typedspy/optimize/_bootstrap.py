"""`BootstrapFewShot`: a teacher runs on the train set; its passing traces become demos."""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from typing import Any

from typedspy.errors import BudgetExceededError, check_finite, check_int
from typedspy.evaluation import (
    Example,
    FieldMetric,
    Metric,
    Outcome,
    TraceStep,
    run_observed,
    score,
)
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
from typedspy.optimize._labeled import LabeledFewShot
from typedspy.optimize._stratify import class_step, demo_class, demo_for, pick_demos

__all__ = ["BootstrapFewShot", "BootstrapResult"]

logger = logging.getLogger("typedspy")


@dataclass
class BootstrapResult:
    """What a bootstrap found.

    Attributes:
        demos: Predictor path to its bootstrapped demos, in training-set order.
        passed: Indices (in the trainset) of the examples whose traces became demos.
        failed: Indices of the examples tried that did not pass (or raised).
        calls / tokens: LM requests and tokens the teacher used.
        budget_spent: A `ts.limits.Budget` ran out; the bootstrap stopped with what it had.
    """

    demos: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    passed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    calls: int = 0
    tokens: int = 0
    budget_spent: bool = False


class BootstrapFewShot(Optimizer):
    """Demos from the program's own successful runs, for every predictor inside it.

    A teacher (a copy of the program, or ``teacher``) runs on training examples in order.
    While it runs on an example, that example is removed from the teacher's demos. When its
    prediction passes the metric, every call that a predictor of the program made during that
    run (a `ChainOfThought`'s reasoning included, the predictors inside your modules too) becomes
    a demo for that predictor. It stops after ``max_bootstrapped_demos`` passing examples, or,
    with ``stratify`` (the default, ADR-082), once every output class the training set shows
    for a predictor has a passing demo (or ``max_bootstrapped_demos`` classes have): past the
    first ``max_bootstrapped_demos`` passes it runs only examples of classes still missing, so
    it never runs more than ``max_rounds`` passes over the training set. ``max_rounds`` tries
    the failing ones again (at a higher temperature). Each predictor then gets its
    bootstrapped demos (round-robin over their classes) followed by labelled examples (spread
    over the classes shown least) up to ``max_labeled_demos``.

    Example:
        ```python
        optimizer = ts.optimize.BootstrapFewShot(max_bootstrapped_demos=4, max_labeled_demos=4)
        compiled = optimizer.compile(program, trainset)
        optimizer.result.passed  # which training examples became demos
        ```

    Args:
        metric: Scores a teacher's prediction; default `FieldMetric()`.
        metric_threshold: The score a prediction needs to pass (``True`` counts as 1.0).
        teacher: The program that runs on the train set (default: a copy of the student,
            given ``max_labeled_demos`` labelled demos when it has none).
        max_bootstrapped_demos: Passing examples to collect.
        max_labeled_demos: Demos per predictor in total, bootstrapped ones first.
        max_rounds: Passes over the failing examples (at least 1).
        seed: Seeds the labelled demos' sampling.
        stratify: Spread demos over the output classes and bootstrap until each class has
            a passing demo (False: the first passes, a plain sample).
        concurrency: Teacher runs at once.
        budget: A `ts.limits.Budget` for the teacher's requests (default: the ``budget`` setting,
            which counts them too). When it runs out, bootstrapping stops and the demos
            found so far are used.
        verbose: Print the plan before compiling.

    Attributes:
        result: The `BootstrapResult` of the last compile.
    """

    def __init__(
        self,
        metric: Metric | None = None,
        *,
        metric_threshold: float = 1.0,
        teacher: Module | None = None,
        max_bootstrapped_demos: int = 4,
        max_labeled_demos: int = 16,
        max_rounds: int = 1,
        seed: int = 0,
        stratify: bool = True,
        concurrency: int = 8,
        budget: Budget | None = None,
        verbose: bool = True,
    ) -> None:
        check_bootstrap_options(
            "BootstrapFewShot",
            metric_threshold=metric_threshold,
            max_bootstrapped_demos=max_bootstrapped_demos,
            max_labeled_demos=max_labeled_demos,
            max_rounds=max_rounds,
            concurrency=concurrency,
        )
        self.metric = metric if metric is not None else FieldMetric()
        self.metric_threshold = metric_threshold
        self.teacher = teacher
        self.max_bootstrapped_demos = max_bootstrapped_demos
        self.max_labeled_demos = max_labeled_demos
        self.max_rounds = max_rounds
        self.seed = seed
        self.stratify = stratify
        self.concurrency = concurrency
        self.budget = budget
        self.verbose = verbose
        self.result = BootstrapResult()
        self._metric_warned = False

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """The plan and budget for compiling ``program`` on ``items``."""
        per_run = calls_per_run(program)
        calls = self.max_rounds * len(items) * per_run
        return Plan(
            f"BootstrapFewShot(max_bootstrapped_demos={self.max_bootstrapped_demos}, "
            f"max_labeled_demos={self.max_labeled_demos}, max_rounds={self.max_rounds})",
            [
                f"run the teacher on up to {len(items)} training examples, in order, "
                f"{self.concurrency} at a time, until {self.max_bootstrapped_demos} pass "
                f"the metric (threshold {self.metric_threshold})"
                + (
                    ", then only on examples of classes with no passing demo yet"
                    if self.stratify
                    else ""
                ),
                f"retry failing examples for up to {self.max_rounds - 1} more round(s)",
                "give each predictor its bootstrapped demos, then labelled examples "
                f"up to {self.max_labeled_demos}",
                class_step(predictors(program), items, self.stratify),
            ],
            max_calls=calls,
            est_tokens=estimate_tokens(items, calls, self.max_labeled_demos),
        )

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        teacher = self._teacher(program, items)
        self.result = await self.bootstrap(teacher, items)
        return self.assemble(program, items, self.result)

    def _teacher(self, program: Module, items: list[Example]) -> Module:
        teacher = fresh_copy(self.teacher or program)
        has_demos = any(p.demos for _, p in predictors(teacher))
        if self.max_labeled_demos and not has_demos:
            labeled = LabeledFewShot(
                self.max_labeled_demos, seed=self.seed, stratify=self.stratify, verbose=False
            )
            teacher = labeled.with_demos(teacher, items)
        return teacher

    async def bootstrap(self, teacher: Module, items: list[Example]) -> BootstrapResult:
        """Run ``teacher`` over ``items`` (in order, in rounds) and collect passing traces."""
        result = BootstrapResult()
        self._metric_warned = False
        classes = _Classes(teacher, items, self.max_bootstrapped_demos if self.stratify else 0)
        tried: set[int] = set()
        pending = list(range(len(items)))
        size = max(1, self.concurrency)
        for round_ in range(self.max_rounds):
            failing: list[int] = []
            queue = list(pending)
            while queue and not self._enough(result, classes):
                if len(result.passed) >= self.max_bootstrapped_demos:
                    queue = [i for i in queue if classes.fills_gap(i)]
                chunk, queue = queue[:size], queue[size:]
                jobs = [(_without(teacher, items[i], round_), items[i].inputs()) for i in chunk]
                outcomes = await run_observed(
                    jobs, trace=True, concurrency=self.concurrency, budget=self.budget
                )
                for i, outcome in zip(chunk, outcomes, strict=True):
                    if isinstance(outcome.error, BudgetExceededError):
                        result.budget_spent = True
                        continue  # not tried: the budget refused its request
                    tried.add(i)
                    result.calls += outcome.calls
                    result.tokens += outcome.usage.total_tokens
                    wanted = len(result.passed) < self.max_bootstrapped_demos
                    if not wanted and not classes.fills_gap(i):
                        continue  # ran in the same chunk as the last one needed
                    if await self._passes(items[i], outcome):
                        result.passed.append(i)
                        for step in outcome.trace:
                            demo = {**step.inputs, **step.outputs}
                            result.demos.setdefault(step.path, []).append(demo)
                        classes.cover(outcome.trace)
                    else:
                        failing.append(i)
            pending = failing
            if not pending or self._enough(result, classes):
                break
        result.failed = sorted(tried - set(result.passed))
        return result

    def _enough(self, result: BootstrapResult, classes: _Classes) -> bool:
        if result.budget_spent:
            return True
        return len(result.passed) >= self.max_bootstrapped_demos and not classes.gaps()

    async def _passes(self, example: Example, outcome: Outcome) -> bool:
        if outcome.error is not None or outcome.result is None:
            return False
        try:
            value, _, _ = await score(self.metric, example, outcome.result)
        except Exception as exc:  # a metric that fails on one prediction rejects that prediction
            if not self._metric_warned:  # said once: a metric that returns None fails them all
                self._metric_warned = True
                logger.warning(
                    "%s: the metric failed on a training example (%s: %s); a prediction it "
                    "fails on does not pass",
                    type(self).__name__,
                    type(exc).__name__,
                    exc,
                )
            return False
        return value >= self.metric_threshold

    def assemble(self, program: Module, items: list[Example], result: BootstrapResult) -> Module:
        """A copy of ``program``: bootstrapped demos first, then labelled ones (seeded)."""
        compiled = fresh_copy(program)
        rest = [ex for i, ex in enumerate(items) if i not in set(result.passed)]
        rng = random.Random(self.seed)
        for path, predictor in predictors(compiled):
            sig = predictor.signature
            boot = [d for d in result.demos.get(path, []) if demo_for(sig, d)]
            chosen = pick_demos(sig, boot, self.max_bootstrapped_demos, stratify=self.stratify)
            room = max(0, self.max_labeled_demos - len(chosen))
            labeled = pick_demos(sig, rest, room, stratify=self.stratify, rng=rng, after=chosen)
            predictor.demos = chosen + labeled
        return compiled


class _Classes:
    """Which output classes each predictor's passing demos show, and which are still missing.

    ``wanted`` caps the classes sought per predictor (``max_bootstrapped_demos``; 0: none
    sought, as with ``stratify=False``).
    """

    def __init__(self, teacher: Module, items: list[Example], wanted: int) -> None:
        self.wanted = wanted
        self.signatures = {path: p.signature for path, p in predictors(teacher)}
        self.of: dict[str, list[str | None]] = {
            path: [demo_class(sig, ex) if demo_for(sig, ex) else None for ex in items]
            for path, sig in self.signatures.items()
        }
        self.covered: dict[str, set[str]] = {path: set() for path in self.signatures}

    def missing(self, path: str) -> set[str]:
        if len(self.covered[path]) >= self.wanted:
            return set()
        return {c for c in self.of[path] if c is not None} - self.covered[path]

    def gaps(self) -> bool:
        """Whether some predictor still lacks a passing demo of a class the train set has."""
        return any(self.missing(path) for path in self.signatures)

    def fills_gap(self, index: int) -> bool:
        """Whether the example at ``index`` shows a class some predictor still lacks."""
        return any(self.of[path][index] in self.missing(path) for path in self.signatures)

    def cover(self, trace: list[TraceStep]) -> None:
        for step in trace:
            sig = self.signatures.get(step.path)
            shown = demo_class(sig, step.outputs) if sig is not None else None
            if shown is not None:
                self.covered[step.path].add(shown)


def _without(teacher: Module, example: Example, round_: int) -> Module:
    """The teacher for one example: that example out of its demos; warmer after round 0."""
    copy = fresh_copy(teacher)
    inputs = example.inputs()
    for _, predictor in predictors(copy):
        predictor.demos = [
            d for d in predictor.demos if not all(k in d and d[k] == v for k, v in inputs.items())
        ]
        if round_ > 0:
            predictor.lm_kwargs = {**predictor.lm_kwargs, "temperature": 0.7 + 0.001 * round_}
    return copy


def check_bootstrap_options(
    owner: str,
    *,
    metric_threshold: object,
    max_bootstrapped_demos: object,
    max_labeled_demos: object,
    max_rounds: object,
    concurrency: object,
) -> None:
    """Refuse bootstrap options of the wrong type or range when the optimizer is made.

    Raises:
        ConfigurationError: Naming the option (a NaN threshold passed no demo, silently; a
            concurrency of 1.5 was a TypeError mid-compile).
    """
    check_finite(owner, "metric_threshold", metric_threshold)
    check_int(owner, "max_bootstrapped_demos", max_bootstrapped_demos, minimum=0, optional=False)
    check_int(owner, "max_labeled_demos", max_labeled_demos, minimum=0, optional=False)
    check_int(owner, "max_rounds", max_rounds, optional=False)
    check_int(owner, "concurrency", concurrency, optional=False)
