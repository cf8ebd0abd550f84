"""`LabeledFewShot`: k labelled training examples become every predictor's demos."""

from __future__ import annotations

import random

from typedspy.errors import check_int
from typedspy.evaluation import Example, FieldMetric, Metric
from typedspy.modules import Module
from typedspy.optimize._base import Optimizer, Plan, fresh_copy, predictors
from typedspy.optimize._stratify import class_step, pick_demos

__all__ = ["LabeledFewShot"]


class LabeledFewShot(Optimizer):
    """Give every predictor ``k`` training examples as demos; no LM calls at all.

    Each predictor gets the fields of the example its signature has (an example that shows
    none of its outputs is skipped for it). By default the ``k`` are spread over the classes
    the training set shows for the predictor's outputs (a ``Literal``, an ``Enum``, a
    ``bool``, a union's members, nested ones too): round-robin over the classes, seeded
    (ADR-082).

    Example:
        ```python
        fewshot = ts.optimize.LabeledFewShot(k=4, seed=0).compile(program, trainset)
        ```

    Args:
        k: Demos per predictor.
        sample: Pick ``k`` at random (seeded) instead of the first ``k``.
        seed: The random seed; the same seed picks the same demos.
        stratify: Spread the demos over the output classes (False: sample as is).
        metric: Scores the result on a ``valset`` given to `compile` (its score record);
            default `FieldMetric()`.
        verbose: Print the plan before compiling.
    """

    def __init__(
        self,
        k: int = 16,
        *,
        sample: bool = True,
        seed: int = 0,
        stratify: bool = True,
        metric: Metric | None = None,
        verbose: bool = True,
    ):
        check_int("LabeledFewShot", "k", k, minimum=0, optional=False)
        self.k, self.sample, self.seed, self.verbose = k, sample, seed, verbose
        self.stratify = stratify
        self.metric = metric if metric is not None else FieldMetric()

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """The plan: which examples become demos; no LM calls."""
        how = f"a seeded sample (seed {self.seed})" if self.sample else "the first"
        return Plan(
            f"LabeledFewShot(k={self.k})",
            [
                f"take {how} {min(self.k, len(items))} of {len(items)} training "
                "examples as every predictor's demos",
                class_step(predictors(program), items, self.stratify),
            ],
        )

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        return self.with_demos(program, items)

    def with_demos(self, program: Module, items: list[Example]) -> Module:
        """A copy of ``program`` whose predictors have their demos picked from ``items``."""
        compiled = fresh_copy(program)
        for _, predictor in predictors(compiled):
            rng = random.Random(self.seed) if self.sample else None
            predictor.demos = pick_demos(
                predictor.signature, items, self.k, stratify=self.stratify, rng=rng
            )
        return compiled
