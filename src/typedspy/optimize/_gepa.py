"""`GEPA`: a program's texts evolved by reflection, on the ``gepa`` package (ADR-081).

typedspy is the adapter to gepa's engine (``gepa.optimize`` with a ``GEPAAdapter``): gepa picks
candidates, minibatches and the Pareto frontier; typedspy runs each candidate program through
the batch machinery, reflects on its typed failures with a `Predict` call
(`typedspy.optimize._gepa_reflect`), and keeps the run inside a budget stated before it starts
(`Costs`, `GEPAPlan`). The run itself is `typedspy.optimize._gepa_run`.

The budget contract: every cost is an upper bound taken from the program and the data before any
request. A metric call is one program run (`calls_per_run` requests, retries included), a
proposal is one reflection call (with its retries) plus at most two minibatch runs and one
valset run. Tokens are rough estimates (about four characters per token), and dollars come from
them through genai-prices when the model has a known price.
"""

from __future__ import annotations

import asyncio
import importlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from typedspy._types import Usage
from typedspy.errors import ConfigurationError, check_finite, check_int
from typedspy.evaluation import Example, FieldMetric, Metric
from typedspy.limits import Budget, price_of
from typedspy.lm import BaseLM
from typedspy.modules import Module
from typedspy.optimize._base import Optimizer, Plan, calls_per_run, estimate_tokens, predictors
from typedspy.optimize._gepa_run import GEPACandidate, GEPAResult, Run
from typedspy.settings import context, get_settings

__all__ = ["GEPA", "GEPAPlan"]


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
        ConfigurationError: gepa is not installed, or an option is out of range (a NaN or
            text ``perfect_score``, an unknown ``candidate_selection``, ...).

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
        try:
            importlib.import_module("gepa")  # ADR-081: an extra, loaded only when used
        except ImportError as exc:
            raise ConfigurationError(
                'ts.optimize.GEPA needs the gepa package: pip install "typedspy[gepa]"'
            ) from exc
        check_int("GEPA", "min_proposals", min_proposals, optional=False)
        check_int("GEPA", "minibatch_size", minibatch_size, optional=False)
        check_int("GEPA", "max_metric_calls", max_metric_calls)
        check_int("GEPA", "max_proposals", max_proposals)
        check_int("GEPA", "concurrency", concurrency, optional=False)
        check_finite("GEPA", "perfect_score", perfect_score)
        if candidate_selection not in ("pareto", "current_best"):
            raise ConfigurationError(
                f"GEPA(candidate_selection={candidate_selection!r}): expected 'pareto' or "
                "'current_best'"
            )
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
        budget = get_settings().budget or Budget(requests=plan.max_calls)
        requests, tokens = budget.requests, budget.usage.total_tokens
        with context(budget=budget):
            state = await asyncio.to_thread(run.optimize, items, val)
        if run.error is not None:
            raise run.error
        spent = (budget.requests - requests, budget.usage.total_tokens - tokens)
        self.result = run.result(state, *spent)
        return self.result.best_candidate.apply(program)


# -- the budget contract: what a run costs, the most proposals a budget allows --


@dataclass
class GEPAPlan(Plan):
    """A `Plan` with what GEPA adds: metric calls, proposals and, with prices, dollars.

    Attributes:
        metric_calls: The most program runs it makes (each scored by the metric).
        proposals: The most proposals (reflection calls) it makes.
        min_proposals: The proposals the budget had to allow for the run to start.
        est_cost: US dollars ``est_tokens`` cost, when the model has a known price.
    """

    metric_calls: int = 0
    proposals: int = 0
    min_proposals: int = 0
    est_cost: Decimal | None = None

    def __str__(self) -> str:
        text = super().__str__()
        extra = (
            f"  at most {self.metric_calls} metric calls and {self.proposals} proposals "
            f"(at least {self.min_proposals} fit)"
        )
        if self.est_cost is not None:
            extra += f"; ~${self.est_cost:.4f} at the model's prices"
        return f"{text}\n{extra}"


@dataclass
class Costs:
    """What one metric call and one proposal cost, for the plan and the budget check."""

    val: int
    minibatch: int
    per_run: int
    per_proposal: int
    run_tokens: int
    proposal_tokens: int
    model: str  # the reflection model's name and endpoint, to price the tokens
    endpoint: str | None

    @classmethod
    def of(
        cls,
        program: Module,
        items: list[Example],
        val: list[Example],
        *,
        minibatch_size: int,
        texts: int,
        lm: BaseLM | None,
    ) -> Costs:
        """The costs of running ``program`` (whose texts are ``texts`` characters long)."""
        per_run = calls_per_run(program)
        demos = max((len(p.demos) for _, p in predictors(program)), default=0)
        minibatch = min(minibatch_size, len(items))
        example = estimate_tokens(items, 1, 1)  # ~ one example shown twice, with framing
        refl_calls = 1 + get_settings().max_retries  # the reflection call and its retries
        return cls(
            val=len(val),
            minibatch=minibatch,
            per_run=per_run,
            per_proposal=refl_calls,
            run_tokens=estimate_tokens(items, per_run, demos),
            proposal_tokens=refl_calls * (250 + texts // 2 + minibatch * example * 2),
            model=lm.model if lm is not None else "",
            endpoint=lm.endpoint if lm is not None else None,
        )

    @property
    def per_iteration(self) -> int:
        """Metric calls one proposal can take: parent and child on a minibatch, the valset."""
        return 2 * self.minibatch + self.val

    def metric_calls(self, proposals: int) -> int:
        return self.val + proposals * self.per_iteration

    def calls(self, proposals: int) -> int:
        return self.metric_calls(proposals) * self.per_run + proposals * self.per_proposal

    def tokens(self, proposals: int) -> int:
        return self.metric_calls(proposals) * self.run_tokens + proposals * self.proposal_tokens

    def dollars(self, proposals: int) -> Decimal | None:
        tokens = self.tokens(proposals)
        completion = tokens // 5  # a rough split, as the token count itself is rough
        usage = Usage(tokens - completion, completion, tokens)
        try:
            return price_of(usage, self.model, self.endpoint)
        except ConfigurationError:  # no prices installed, or none known for the model
            return None

    def describe(self, proposals: int) -> str:
        text = (
            f"{self.metric_calls(proposals)} metric calls, {self.calls(proposals)} LM requests, "
            f"~{self.tokens(proposals)} tokens"
        )
        dollars = self.dollars(proposals)
        return text + (f", ~${dollars:.4f}" if dollars is not None else "")

    @staticmethod
    def limits_of(budget: Budget | None) -> dict[str, int | Decimal]:
        if budget is None:
            return {}
        left = budget.remaining()
        return {
            k: v
            for k, v in left.items()
            if k in ("requests", "total_tokens", "input_tokens", "cost")
        }

    def caps(
        self, budget: Budget | None, max_metric_calls: int | None, max_proposals: int | None
    ) -> dict[str, int]:
        """The most proposals each limit allows (-1: not even the seed's evaluation)."""
        caps: dict[str, int] = {}
        if max_proposals is not None:
            caps["max_proposals"] = max_proposals
        if max_metric_calls is not None:
            caps["max_metric_calls"] = _most(max_metric_calls, self.val, self.per_iteration)
        for name, left in self.limits_of(budget).items():
            if name == "cost":
                caps[name] = self._most_priced(Decimal(left))
            else:  # requests or tokens: the seed's evaluation, then so much per proposal
                cost = self.calls if name == "requests" else self.tokens
                caps[name] = _most(int(left), cost(0), cost(1) - cost(0))
        return caps

    def _most_priced(self, dollars: Decimal) -> int:
        """The most proposals ``dollars`` pay for (a cost limit needs prices: see `Budget`)."""
        zero, one = self.dollars(0), self.dollars(1)
        if zero is None or one is None:
            raise ConfigurationError(
                f"GEPA: a cost budget needs the model's price, and none is known for {self.model!r}"
            )
        if zero > dollars:
            return -1
        step = one - zero
        return int((dollars - zero) / step) if step > 0 else 10**9

    def plan(self, proposals: int, *, name: str, min_proposals: int) -> GEPAPlan:
        """The plan of a run of at most ``proposals`` proposals."""
        return GEPAPlan(
            name,
            [
                f"evaluate the program's own texts (the seed) on {self.val} valset examples",
                f"per proposal: run a candidate on {self.minibatch} training examples, show one "
                "predictor's typed failures to the reflection model, run its rewrite on the "
                f"same examples, and evaluate a better one on the {self.val} valset examples",
                f"stop after {proposals} proposals, when the next might not fit the metric "
                "calls left, when the budget refuses a request, or at a perfect valset score",
                "return the program with the best candidate's texts",
            ],
            max_calls=self.calls(proposals),
            est_tokens=self.tokens(proposals),
            metric_calls=self.metric_calls(proposals),
            proposals=proposals,
            min_proposals=min_proposals,
            est_cost=self.dollars(proposals),
        )


def _most(limit: int, base: int, per: int) -> int:
    """The most ``n`` with ``base + n * per <= limit`` (-1 when even ``base`` does not fit)."""
    return -1 if base > limit else (limit - base) // max(per, 1)
