"""`GEPA`: a program's texts evolved by reflection, on the ``gepa`` package (ADR-081).

typedspy is the adapter to gepa's engine (``gepa.optimize`` with a ``GEPAAdapter``): gepa picks
candidates, minibatches and the Pareto frontier; typedspy runs each candidate program through
the batch machinery, reflects on its typed failures with a `Predict` call
(`typedspy.optimize._gepa_reflect`), and keeps the run inside a budget stated before it starts
(`typedspy.optimize._gepa_plan`). The run itself is `typedspy.optimize._gepa_run`.
"""

from __future__ import annotations

import asyncio
import importlib
from contextlib import nullcontext
from typing import Literal

from typedspy.errors import ConfigurationError
from typedspy.evaluation import Example, FieldMetric, Metric
from typedspy.limits import Budget
from typedspy.lm import BaseLM
from typedspy.modules import Module
from typedspy.optimize._base import Optimizer
from typedspy.optimize._gepa_plan import Costs, GEPAPlan
from typedspy.optimize._gepa_run import GEPACandidate, GEPAResult, Run
from typedspy.settings import context, get_settings

__all__ = ["GEPA"]


def _require_gepa() -> None:
    try:
        importlib.import_module("gepa")  # ADR-081: an extra, loaded only when used
    except ImportError as exc:
        raise ConfigurationError(
            'ts.optimize.GEPA needs the gepa package: pip install "typedspy[gepa]"'
        ) from exc


class GEPA(Optimizer):
    """Evolve every predictor's instruction, field descriptions and union members' docstrings.

    GEPA (reflective prompt evolution, on the ``gepa`` package: ``pip install
    "typedspy[gepa]"``) evaluates the program on the valset, then repeats: pick a candidate
    from the Pareto frontier, run it on a minibatch of training examples, show one predictor's
    typed failures (failure kind, field paths, validation messages, expected against got, and
    the metric's feedback when it returns ``(score, feedback)``) to a reflection model, which
    rewrites that predictor's texts; a rewrite that scores better on the minibatch is
    evaluated on the valset and joins the candidates. The compiled program says the best
    candidate's texts through new signature classes; yours are never changed, and demos are
    kept.

    Before any request it prints the plan (metric calls, LM calls, tokens, and dollars when
    the model has a price) and refuses, with a `ConfigurationError` naming the minimum, a
    budget that cannot evaluate the seed and make ``min_proposals`` proposals. The run never
    makes more calls than the plan: it stops before a proposal that might not fit, and a
    `ts.limits.Budget` is enforced throughout (``budget``, the ``budget`` setting, or one of
    exactly the plan's LM calls).

    Example:
        ```python
        gepa = ts.optimize.GEPA(metric, max_metric_calls=60, reflection_lm=strong_lm)
        compiled = gepa.compile(program, trainset, valset=devset)
        gepa.result.best_score, gepa.result.frontier, gepa.result.stop_reason
        ```

    Args:
        metric: Scores a prediction, ``float | bool`` or ``(score, feedback)``; default
            `FieldMetric()`.
        reflection_lm: The model that rewrites texts (default: each predictor's own, or the
            configured one).
        budget: A `ts.limits.Budget` for every request of the run (default: the ``budget``
            setting; without one, a budget of the plan's LM calls).
        max_metric_calls / max_proposals: Caps on program runs and on proposals.
        min_proposals: Proposals the budget must allow, or compiling is refused.
        minibatch_size: Training examples per reflection.
        candidate_selection: ``"pareto"`` (gepa's default) or ``"current_best"``.
        perfect_score: A minibatch at this score everywhere is not reflected on; a candidate
            at it on the whole valset ends the run.
        seed: Seeds gepa's candidate and minibatch choices.
        concurrency: Program runs at once.
        progress: A progress bar per evaluation (needs ``typedspy[progress]``).
        verbose: Print the plan before compiling.

    Raises:
        ConfigurationError: gepa is not installed, or an option is out of range.

    Attributes:
        result: The `GEPAResult` of the last compile.
    """

    scores_valset = True  # its run scores the valset; no second evaluation (ADR-083)

    def __init__(
        self,
        metric: Metric | None = None,
        *,
        reflection_lm: BaseLM | None = None,
        budget: Budget | None = None,
        max_metric_calls: int | None = None,
        max_proposals: int | None = None,
        min_proposals: int = 3,
        minibatch_size: int = 3,
        candidate_selection: Literal["pareto", "current_best"] = "pareto",
        perfect_score: float = 1.0,
        seed: int = 0,
        concurrency: int = 8,
        progress: bool = False,
        verbose: bool = True,
    ) -> None:
        _require_gepa()
        for name, value, low in (
            ("min_proposals", min_proposals, 1),
            ("minibatch_size", minibatch_size, 1),
            ("max_metric_calls", max_metric_calls, 1),
            ("max_proposals", max_proposals, 1),
        ):
            if value is not None and value < low:
                raise ConfigurationError(f"GEPA: {name} must be >= {low}, got {value}")
        self.metric: Metric = metric if metric is not None else FieldMetric()
        self.reflection_lm = reflection_lm
        self.budget = budget
        self.max_metric_calls = max_metric_calls
        self.max_proposals = max_proposals
        self.min_proposals = min_proposals
        self.minibatch_size = minibatch_size
        self.candidate_selection: Literal["pareto", "current_best"] = candidate_selection
        self.perfect_score = perfect_score
        self.seed = seed
        self.concurrency = concurrency
        self.progress = progress
        self.verbose = verbose
        self.result = GEPAResult()

    # -- the plan: what the budget allows, refused before any request --

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> GEPAPlan:
        """The plan for compiling ``program``: the most proposals the budget allows.

        Raises:
            ConfigurationError: No budget at all, or one too small for the seed's evaluation
                and ``min_proposals`` proposals; the message says the minimum.
        """
        cost = Costs.of(
            program,
            items,
            valset if valset is not None else items,
            minibatch_size=self.minibatch_size,
            texts=len(GEPACandidate.of(program).model_dump_json()),
            lm=self.reflection_lm or get_settings().lm,
        )
        budget = self.budget or get_settings().budget
        caps = cost.caps(budget, self.max_metric_calls, self.max_proposals)
        if not caps:
            raise ConfigurationError(
                "GEPA needs a budget: pass max_metric_calls=, max_proposals= or "
                f"budget=ts.limits.Budget(...); {self.min_proposals} proposals need "
                f"{cost.describe(self.min_proposals)}"
            )
        allowed = min(caps.values())
        if allowed < self.min_proposals:
            given = [
                f"{name}={value}"
                for name, value in (
                    ("max_metric_calls", self.max_metric_calls),
                    ("max_proposals", self.max_proposals),
                )
                if value is not None
            ]
            given += [f"{name} {left} left" for name, left in cost.limits_of(budget).items()]
            raise ConfigurationError(
                f"GEPA: the budget ({', '.join(given)}) cannot evaluate the seed on "
                f"{cost.val} examples and make {self.min_proposals} proposals: that needs at "
                f"least {cost.describe(self.min_proposals)} (it allows {max(allowed, 0)} "
                "proposal(s)); raise the budget, or lower min_proposals"
            )
        name = (
            f"GEPA(minibatch_size={cost.minibatch}, candidate_selection="
            f"{self.candidate_selection!r}, seed={self.seed})"
        )
        return cost.plan(allowed, name=name, min_proposals=self.min_proposals)

    # -- the run --

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> Module:
        plan = self.plan
        assert isinstance(plan, GEPAPlan)  # acompile made it with make_plan
        run = Run(self, program, plan, asyncio.get_running_loop())
        val = valset if valset is not None else items
        # acompile set `budget` in the context; without any, the plan's LM calls are the budget.
        budget = get_settings().budget
        own = Budget(requests=plan.max_calls) if budget is None else None
        counted = own or budget
        assert counted is not None
        requests, tokens = counted.requests, counted.usage.total_tokens
        with context(budget=own) if own else nullcontext():
            state = await asyncio.to_thread(run.optimize, items, val)
        if run.error is not None:
            raise run.error
        spent = (counted.requests - requests, counted.usage.total_tokens - tokens)
        self.result = run.result(state, *spent)
        return self.result.best_candidate.apply(program)
