"""GEPA's budget contract: what a run costs, the most proposals a budget allows (ADR-081).

Every cost is an upper bound taken from the program and the data before any request: a metric
call is one program run (`calls_per_run` requests, retries included), a proposal is one
reflection call (with its retries) plus at most two minibatch runs and one valset run. Tokens
are rough estimates (about four characters per token), and dollars come from them through
genai-prices when the model has a known price.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from typedspy._types import Usage
from typedspy.errors import ConfigurationError
from typedspy.evaluation import Example
from typedspy.limits import Budget, price_of
from typedspy.lm import BaseLM
from typedspy.modules import Module
from typedspy.optimize._base import Plan, calls_per_run, estimate_tokens, predictors
from typedspy.settings import get_settings

__all__ = ["Costs", "GEPAPlan"]


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
    lm: BaseLM | None

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
            lm=lm,
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
            return price_of(usage, getattr(self.lm, "model", ""), _endpoint(self.lm))
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
            if name == "requests":
                per = self.per_iteration * self.per_run + self.per_proposal
                caps[name] = _most(int(left), self.val * self.per_run, per)
            elif name == "cost":
                caps[name] = self._most_priced(Decimal(left))
            else:
                per = self.per_iteration * self.run_tokens + self.proposal_tokens
                caps[name] = _most(int(left), self.val * self.run_tokens, per)
        return caps

    def _most_priced(self, dollars: Decimal) -> int:
        """The most proposals ``dollars`` pay for (a cost limit needs prices: see `Budget`)."""
        zero, one = self.dollars(0), self.dollars(1)
        if zero is None or one is None:
            model = getattr(self.lm, "model", "")
            raise ConfigurationError(
                f"GEPA: a cost budget needs the model's price, and none is known for {model!r}"
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


def _endpoint(lm: BaseLM | None) -> str | None:
    endpoint = getattr(lm, "endpoint", None)
    return endpoint if isinstance(endpoint, str) else None
