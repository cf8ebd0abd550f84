"""What every optimizer shares: a plan printed before it starts, seeds, demos per predictor."""

from __future__ import annotations

import copy
import logging
import sys
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from typedspy._runtime import run_sync
from typedspy.errors import ConfigurationError
from typedspy.evaluation import EvaluationReport, Example, FieldMetric, Metric, aevaluate
from typedspy.limits import Budget
from typedspy.modules import Module
from typedspy.optimize._stratify import Coverage, coverage
from typedspy.optimize._verify import score_record
from typedspy.program import ScoreRecord
from typedspy.settings import context, get_settings

__all__ = ["Optimizer", "Plan", "calls_per_run", "fresh_copy"]

logger = logging.getLogger("typedspy")

_CHARS_PER_TOKEN = 4  # a rough estimate, stated as such in the plan


@dataclass
class Plan:
    """What an optimizer will do and the most it will spend, shown before it starts.

    Attributes:
        optimizer: Its name and settings.
        steps: What it does, in order.
        max_calls: The most LM requests it can make (retries included).
        est_tokens: A rough estimate of the tokens those requests use (about four
            characters per token, from the training examples and demo counts).
        budget: The `ts.limits.Budget` that bounds the run, when one is set.
    """

    optimizer: str
    steps: list[str] = field(default_factory=list)
    max_calls: int = 0
    est_tokens: int = 0
    budget: Budget | None = None

    def __str__(self) -> str:
        lines = [f"{self.optimizer}: plan"]
        lines += [f"  {i}. {s}" for i, s in enumerate(self.steps, start=1)]
        lines.append(f"  budget: at most {self.max_calls} LM calls, ~{self.est_tokens} tokens")
        if self.budget is not None:
            limits = ", ".join(f"{k}={v}" for k, v in self.budget.limits.items())
            lines.append(
                f"  capped by ts.limits.Budget({limits}); it stops early when that runs out"
            )
        return "\n".join(lines)


class Optimizer(ABC):
    """Base class: ``compile`` returns a NEW program; the one passed in is never changed.

    `acompile` checks the data, prints the plan (`make_plan`) with the budget that caps the
    run, then optimizes (`_optimize`) under that budget: ``budget`` when the optimizer has
    one, else the ``budget`` setting. With a ``valset`` the compiled program is scored on it
    and keeps the score as its `score_record` (ADR-083); an optimizer that scores on the
    valset itself sets ``scores_valset`` (no second evaluation, nothing added to its plan) and
    leaves its result's evaluation in ``_val_report`` (none: no record). After compiling it
    prints how each predictor's demos cover the training set's classes (ADR-082), when the
    compiled program holds demos.
    Subclasses implement `make_plan` and `_optimize` (abstract: a subclass without them cannot
    be made).

    Attributes:
        plan: The plan of the last compile (None before the first).
        verbose: Print the plan before compiling.
        out: Where the plan is printed (default: standard output).
        budget: A `ts.limits.Budget` for every request the optimizer makes (None: the setting).
        coverage: Predictor path to how its demos cover the classes of the training set,
            after a compile (ADR-082).
        metric: Scores the result on a ``valset``.
        concurrency: Runs at once when scoring it.
    """

    verbose: bool = True
    out: TextIO | None = None
    plan: Plan | None = None
    budget: Budget | None = None
    coverage: dict[str, Coverage] | None = None
    metric: Metric = FieldMetric()
    concurrency: int = 8
    scores_valset: bool = False
    _val_report: EvaluationReport | None = None

    async def acompile(
        self,
        program: Module,
        trainset: Sequence[Example[Any]],
        *,
        valset: Sequence[Example[Any]] | None = None,
    ) -> Module:
        """Optimize ``program`` on ``trainset``; return the optimized copy.

        Raises:
            ConfigurationError: An empty trainset, or an item that is not an `Example`.
        """
        name = type(self).__name__
        items = check_trainset(trainset, name)
        val = check_trainset(valset, f"{name} valset") if valset is not None else None
        plan = self.make_plan(program, items, val)
        if val is not None and not self.scores_valset:
            plan.steps.append(f"score the result on the {len(val)} valset examples (its record)")
            plan.max_calls += len(val) * calls_per_run(program)
        plan.budget = self.budget or get_settings().budget
        self.plan = plan
        self._print(plan)
        self._val_report = None
        with context(budget=self.budget) if self.budget is not None else context():
            compiled = await self._optimize(program, items, val)
            compiled.score_record = None if val is None else await self._scored(compiled, val)
        found = predictors(compiled)
        self.coverage = coverage(found, items) if any(p.demos for _, p in found) else {}
        for path, covered in self.coverage.items():
            self._print(f"{name}: {path}: {covered}")
        return compiled

    def _print(self, text: object) -> None:
        if self.verbose:
            print(text, file=self.out or sys.stdout, flush=True)

    async def _scored(self, compiled: Module, val: list[Example]) -> ScoreRecord | None:
        report = self._val_report
        if report is None and self.scores_valset:
            return None
        if report is None:
            report = await aevaluate(compiled, val, self.metric, concurrency=self.concurrency)
        if "budget" in report.failures:
            logger.warning("the budget ran out while scoring the valset: no score recorded")
            return None
        return score_record(report, val)

    def compile(
        self,
        program: Module,
        trainset: Sequence[Example[Any]],
        *,
        valset: Sequence[Example[Any]] | None = None,
    ) -> Module:
        """Synchronous `acompile`."""
        return run_sync(
            lambda: self.acompile(program, trainset, valset=valset),
            async_name=f"{type(self).__name__}.acompile",
        )

    @abstractmethod
    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """What compiling ``program`` on ``items`` will do and the most it can spend."""

    @abstractmethod
    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        """The optimized copy of ``program``, under the budget `acompile` set."""


def check_trainset(trainset: Sequence[Example[Any]], who: str) -> list[Example]:
    """The trainset as a list of examples that know their inputs.

    Raises:
        ConfigurationError: Empty, or an item that is not an `Example` with inputs.
    """
    items = list(trainset)
    if not items:
        raise ConfigurationError(f"{who}: the trainset is empty")
    for i, ex in enumerate(items):
        if not isinstance(ex, Example):
            raise ConfigurationError(
                f"{who}: trainset item {i} is a {type(ex).__name__}, not a ts.Example "
                "(load files with ts.evaluation.load_dataset)"
            )
        ex.inputs()  # raises when the example does not know its inputs
    return items


def fresh_copy(program: Module) -> Module:
    """A deep copy of ``program`` (LMs are shared handles, ADR-013)."""
    return copy.deepcopy(program)


def predictors(program: Module) -> list[tuple[str, Any]]:
    """``program``'s predictors with their paths (`Module.named_predictors`)."""
    return list(program.named_predictors())


def calls_per_run(program: Module) -> int:
    """The most LM requests one run of ``program`` makes.

    Each predictor counts once plus its retries; a `ReAct` inside adds one request per step
    (``max_iters``).
    """
    retries = get_settings().max_retries
    calls = 0
    for _, predictor in predictors(program):
        own = getattr(predictor, "max_retries", None)
        calls += 1 + (own if isinstance(own, int) else retries)
    for _, module in program.named_modules():
        steps = getattr(module, "max_iters", None)
        if isinstance(steps, int) and not isinstance(steps, bool):
            calls += steps
    return max(1, calls)


def estimate_tokens(trainset: Sequence[Example], calls: int, demos: int) -> int:
    """Rough tokens for ``calls`` requests carrying ``demos`` demos each."""
    sizes = [len(str(ex.to_dict())) for ex in trainset] or [0]
    mean = sum(sizes) / len(sizes)
    per_call = 200 + mean * (demos + 1)  # ~200 characters of instructions and framing
    return int(calls * per_call / _CHARS_PER_TOKEN)
