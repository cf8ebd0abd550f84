"""`LabeledFewShot`: k labelled training examples become every predictor's demos."""

from __future__ import annotations

import random
from collections.abc import Sequence

from typedspy.errors import ConfigurationError
from typedspy.evaluation import Example
from typedspy.modules import Module
from typedspy.optimize._base import Optimizer, Plan, demo_for, fresh_copy, predictors

__all__ = ["LabeledFewShot"]


class LabeledFewShot(Optimizer):
    """Give every predictor ``k`` training examples as demos; no LM calls at all.

    Each predictor gets the fields of the example its signature has (an example that shows
    none of its outputs is skipped for it).

    Example:
        ```python
        fewshot = ts.optimize.LabeledFewShot(k=4, seed=0).compile(program, trainset)
        ```

    Args:
        k: Demos per predictor.
        sample: Pick ``k`` at random (seeded) instead of the first ``k``.
        seed: The random seed; the same seed picks the same demos.
        verbose: Print the plan before compiling.
    """

    def __init__(self, k: int = 16, *, sample: bool = True, seed: int = 0, verbose: bool = True):
        if k < 0:
            raise ConfigurationError("LabeledFewShot: k must be >= 0")
        self.k, self.sample, self.seed, self.verbose = k, sample, seed, verbose

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """The plan: which examples become demos; no LM calls."""
        how = f"a seeded sample (seed {self.seed})" if self.sample else "the first"
        return Plan(
            f"LabeledFewShot(k={self.k})",
            [
                f"take {how} {min(self.k, len(items))} of {len(items)} training "
                "examples as every predictor's demos"
            ],
        )

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        return with_labeled(program, self.pick(items))

    def pick(self, items: list[Example]) -> list[Example]:
        """The examples chosen from ``items`` (reproducible for a seed)."""
        k = min(self.k, len(items))
        return random.Random(self.seed).sample(items, k) if self.sample else items[:k]


def with_labeled(program: Module, examples: Sequence[Example]) -> Module:
    """A copy of ``program`` with ``examples`` as the demos of each predictor they fit."""
    compiled = fresh_copy(program)
    for _, predictor in predictors(compiled):
        demos = [demo_for(predictor.signature, ex) for ex in examples]
        predictor.demos = [d for d in demos if d is not None]
    return compiled
