"""One GEPA run: the adapter gepa's engine calls, its stop condition, what it found (ADR-081).

gepa's engine is synchronous: `Run.optimize` runs it in a worker thread, and every evaluation
and reflection it asks for runs as a coroutine on the compile's event loop, through the batch
machinery, under the compile's context (settings, budget, meters).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from typedspy.errors import BudgetExceededError, ConfigurationError, OutputError
from typedspy.evaluation import Example
from typedspy.modules import Module
from typedspy.optimize._base import fresh_copy, predictors
from typedspy.optimize._gepa_reflect import Evaluated, evaluate_candidate, propose, records
from typedspy.signature import SignatureTexts, texts_of, with_texts

if TYPE_CHECKING:
    from typedspy.optimize._gepa import GEPA, GEPAPlan

__all__ = ["GEPACandidate", "GEPAResult", "Run", "StopReason"]

logger = logging.getLogger("typedspy")

T = TypeVar("T")

StopReason = Literal["proposals", "metric_calls", "budget", "perfect_score"]
"""Why a GEPA run stopped: it made its proposals, its next one could not fit in the metric
calls left, the `Budget` refused a request, or a candidate scored perfectly on the valset."""


class GEPACandidate(BaseModel):
    """One candidate: the texts of every predictor of a program, by path; saves as JSON.

    Attributes:
        predictors: Each predictor's path (as `Module.named_predictors` names it) to its
            instruction, field descriptions and union members' docstrings.
    """

    model_config = ConfigDict(extra="forbid")

    predictors: dict[str, SignatureTexts]

    @classmethod
    def of(cls, program: Module) -> GEPACandidate:
        """The texts ``program``'s predictors say now."""
        return cls(predictors={path: texts_of(p.signature) for path, p in predictors(program)})

    def apply(self, program: Module) -> Module:
        """A copy of ``program`` whose predictors say these texts (new signature classes).

        Raises:
            ConfigurationError: A path or a name the program does not have.
        """
        compiled = fresh_copy(program)
        found = dict(predictors(compiled))
        unknown = sorted(set(self.predictors) - set(found))
        if unknown:
            raise ConfigurationError(
                f"GEPACandidate: the program has no predictor at {unknown} "
                f"(its predictors: {sorted(found)})"
            )
        for path, texts in self.predictors.items():
            found[path].signature = with_texts(found[path].signature, texts)
        return compiled


@dataclass
class GEPAResult:
    """What a GEPA run did.

    Attributes:
        candidates: Every candidate kept, the seed (the program's own texts) first.
        scores: Each candidate's mean valset score.
        parents: Each candidate's parents (indices into ``candidates``; None for the seed).
        frontier: The Pareto frontier: the candidates best on at least one valset example,
            with their scores.
        best: The index of the candidate the compiled program says (highest score; the
            earliest on ties).
        proposals: Proposals made (texts the reflection model wrote and the run tried).
        accepted: Proposals that beat their parent on a minibatch and joined the candidates.
        metric_calls: Program runs scored.
        calls / tokens: LM requests the run sent (reflection included) and their tokens.
        stop_reason: Why it stopped (`StopReason`).
    """

    candidates: list[GEPACandidate] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    parents: list[list[int | None]] = field(default_factory=list)
    frontier: dict[int, float] = field(default_factory=dict)
    best: int = 0
    proposals: int = 0
    accepted: int = 0
    metric_calls: int = 0
    calls: int = 0
    tokens: int = 0
    stop_reason: StopReason = "proposals"

    @property
    def best_candidate(self) -> GEPACandidate:
        """The texts of the compiled program."""
        return self.candidates[self.best]

    @property
    def seed_score(self) -> float:
        """The program's own valset score, before any proposal."""
        return self.scores[0] if self.scores else 0.0

    @property
    def best_score(self) -> float:
        """The compiled program's valset score."""
        return self.scores[self.best] if self.scores else 0.0


class _Halted(Exception):
    """Ends gepa's iteration: the run is stopping (gepa logs it; the stopper ends the loop)."""


class Run:
    """One compile's gepa run: the adapter gepa calls, its stop condition, its counts.

    gepa calls `evaluate`, `make_reflective_dataset`, `propose_new_texts` and the stopper from
    its worker thread; each coroutine they need runs on the compile's event loop.
    """

    def __init__(
        self, gepa: GEPA, program: Module, plan: GEPAPlan, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.gepa = gepa
        self.program = program
        self.plan = plan
        self.loop = loop
        self.programs: dict[tuple[tuple[str, str], ...], Module] = {}
        self.proposals = 0
        self.accepted = 0
        self.stop_reason: StopReason | None = None
        self.error: BaseException | None = None
        self.minibatch = gepa.minibatch_size
        self.val = 0

    # -- gepa's adapter protocol --

    def evaluate(
        self, batch: list[Example], candidate: dict[str, str], capture_traces: bool = False
    ) -> Any:
        from gepa.core.adapter import EvaluationBatch

        results = self._on_loop(self._evaluate(batch, candidate))
        return EvaluationBatch(
            outputs=[r.outputs for r in results],
            scores=[r.score for r in results],
            trajectories=list(results) if capture_traces else None,
        )

    def make_reflective_dataset(
        self, candidate: dict[str, str], eval_batch: Any, components_to_update: list[str]
    ) -> dict[str, list[dict[str, Any]]]:
        traces: list[Evaluated] = list(eval_batch.trajectories or [])
        return {path: records(path, traces) for path in components_to_update}

    def propose_new_texts(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:
        new: dict[str, str] = {}
        for path in components_to_update:
            texts = self._on_loop(self._propose(path, candidate[path], reflective_dataset[path]))
            if texts is not None:
                new[path] = texts.model_dump_json()
        if new:
            self.proposals += 1
        return new

    # -- gepa's callbacks and stop condition --

    def on_candidate_accepted(self, event: Any) -> None:
        self.accepted += 1

    def __call__(self, gepa_state: Any) -> bool:
        """The stop condition gepa asks before each iteration."""
        if self.stop_reason is None:
            scores = gepa_state.program_full_scores_val_set
            next_one = 2 * self.minibatch + self.val  # the most the next proposal can take
            if self.proposals >= self.plan.proposals:
                self.stop_reason = "proposals"
            elif gepa_state.total_num_evals + next_one > self.plan.metric_calls:
                self.stop_reason = "metric_calls"
            elif scores and max(scores) >= self.gepa.perfect_score:
                self.stop_reason = "perfect_score"
        return self.stop_reason is not None

    # -- the work, on the compile's loop --

    def _on_loop(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.stop_reason is not None:
            coro.close()
            raise _Halted(self.stop_reason)
        try:
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result()
        except BudgetExceededError as exc:
            self.stop_reason = "budget"
            raise _Halted("budget") from exc
        except Exception as exc:  # a bug or a misconfiguration: stop, and raise it after
            self.error = self.error or exc
            self.stop_reason = self.stop_reason or "budget"  # ends the loop; the error is raised
            raise _Halted("error") from exc

    async def _evaluate(self, batch: list[Example], candidate: dict[str, str]) -> list[Evaluated]:
        key = tuple(sorted(candidate.items()))
        program = self.programs.get(key)
        if program is None:
            program = self.programs[key] = _candidate(candidate).apply(self.program)
        results = await evaluate_candidate(
            program,
            batch,
            self.gepa.metric,
            concurrency=self.gepa.concurrency,
            progress=self.gepa.progress,
        )
        refused = [r.error for r in results if isinstance(r.error, BudgetExceededError)]
        if refused:
            raise refused[0]
        return results

    async def _propose(
        self, path: str, current: str, dataset: Sequence[Mapping[str, Any]]
    ) -> SignatureTexts | None:
        predictor = dict(predictors(self.program))[path]
        lm = self.gepa.reflection_lm or getattr(predictor, "lm", None)
        try:
            return await propose(
                predictor.signature, SignatureTexts.model_validate_json(current), dataset, lm
            )
        except OutputError as exc:  # no usable rewrite: this proposal is skipped
            logger.warning("GEPA: the reflection model gave no usable texts for %s: %s", path, exc)
            return None

    # -- running gepa --

    def optimize(self, items: list[Example], val: list[Example]) -> Any:
        from gepa.api import optimize

        seed = {
            path: texts.model_dump_json()
            for path, texts in GEPACandidate.of(self.program).predictors.items()
        }
        self.minibatch = min(self.gepa.minibatch_size, len(items))
        self.val = len(val)
        try:
            return optimize(
                seed_candidate=seed,
                trainset=items,
                valset=val,
                adapter=self,  # type: ignore[arg-type]
                candidate_selection_strategy=self.gepa.candidate_selection,
                reflection_minibatch_size=self.minibatch,
                perfect_score=self.gepa.perfect_score,
                skip_perfect_score=True,
                module_selector="round_robin",
                stop_callbacks=[self],
                logger=_GepaLog(),
                callbacks=[self],  # type: ignore[list-item]
                seed=self.gepa.seed,
                raise_on_exception=False,
                track_best_outputs=False,
            )
        except _Halted:  # the seed's own evaluation was cut short
            return None

    def result(self, state: Any, calls: int, tokens: int) -> GEPAResult:
        """What the run found, from gepa's result (None: the seed's evaluation was cut short)."""
        if state is None:
            seed = GEPACandidate.of(self.program)
            return GEPAResult(
                candidates=[seed],
                scores=[0.0],
                parents=[[None]],
                frontier={0: 0.0},
                calls=calls,
                tokens=tokens,
                stop_reason=self.stop_reason or "budget",
            )
        scores = list(state.val_aggregate_scores)
        frontier = sorted(
            {i for ids in state.per_val_instance_best_candidates.values() for i in ids}
        )
        return GEPAResult(
            candidates=[_candidate(c) for c in state.candidates],
            scores=scores,
            parents=[list(p) for p in state.parents],
            frontier={i: scores[i] for i in frontier},
            best=state.best_idx,
            proposals=self.proposals,
            accepted=self.accepted,
            metric_calls=int(state.total_metric_calls or 0),
            calls=calls,
            tokens=tokens,
            stop_reason=self.stop_reason or "proposals",
        )


def _candidate(candidate: Mapping[str, str]) -> GEPACandidate:
    return GEPACandidate(
        predictors={k: SignatureTexts.model_validate_json(v) for k, v in candidate.items()}
    )


class _GepaLog:
    """gepa's log lines, at debug level on the ``typedspy`` logger (gepa prints by default)."""

    def log(self, message: str) -> None:
        logger.debug("gepa: %s", message)
