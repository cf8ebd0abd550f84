"""Run programs on many inputs through the batch machinery, observing each run.

Runs go through `typedspy.batch.run_batch` (its worker pool, rate limit, budget, per-item
timeout, progress and usage meters). Each run also gets its own `Recorder` callback, scoped
with `ts.context` to the run's task, so concurrent runs never see each other's events: for the
predictors it watches, it keeps what each was called with and returned, the per-predictor
trace optimizers turn into demos.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typedspy._types import Usage
from typedspy.batch import run_batch
from typedspy.callbacks import BaseCallback
from typedspy.modules import Module
from typedspy.prediction import Prediction
from typedspy.settings import context, get_settings
from typedspy.signature import to_jsonable

__all__ = ["Outcome", "Recorder", "TraceStep", "run_observed"]


@dataclass(frozen=True)
class TraceStep:
    """One successful predictor call inside a run: which predictor, its inputs and outputs."""

    path: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]


class Recorder(BaseCallback):
    """Collects the calls of the predictors it watches, during one run."""

    def __init__(self, watched: Mapping[int, str]) -> None:
        self._watched = watched
        self._open: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.trace: list[TraceStep] = []

    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        path = self._watched.get(id(instance))
        if path is not None:
            self._open[call_id] = (path, dict(inputs))

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        opened = self._open.pop(call_id, None)
        if opened is not None and exception is None and isinstance(outputs, Prediction):
            self.trace.append(TraceStep(opened[0], opened[1], dict(outputs)))


@dataclass
class Outcome:
    """What one run produced (never an exception raised past it); usage from the batch meter."""

    result: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    cached: int = 0
    trace: list[TraceStep] = field(default_factory=list)
    scored: tuple[float, dict[str, float], str] | Exception | None = None

    def outputs(self) -> dict[str, Any]:
        """The result as JSON-ready outputs: a prediction's `to_dict`, else ``{"result": ...}``.

        A result JSON cannot hold (a numpy scalar, nesting past ``max_json_depth``) is shown
        by its ``repr``: the run and its score stand.
        """
        to_dict = getattr(self.result, "to_dict", None)
        try:
            return to_dict() if callable(to_dict) else {"result": to_jsonable(self.result)}
        except ValueError:  # PydanticSerializationError is one
            return {"result": repr(self.result)}


@dataclass
class _Jobs:
    """What `run_batch` runs: item ``job`` is one observed run of its own program."""

    jobs: Sequence[tuple[Module, Mapping[str, Any]]]
    trace: bool
    after: Callable[[int, Outcome], Awaitable[None]] | None

    async def acall(self, **inputs: Any) -> Outcome:
        """Run job ``inputs["job"]`` once with its own recorder; errors are returned, not raised."""
        job = int(inputs["job"])
        program, values = self.jobs[job]
        watched = {id(p): name for name, p in program.named_predictors()} if self.trace else {}
        recorder = Recorder(watched)
        outcome = Outcome()
        start = time.perf_counter()
        with context(callbacks=[*get_settings().callbacks, recorder]):
            try:
                outcome.result = await program.acall(**values)
            except Exception as exc:  # one bad item must not end the run: it is reported
                outcome.error = exc
        outcome.seconds = time.perf_counter() - start
        outcome.trace = recorder.trace
        if self.after is not None and outcome.error is None:
            await self.after(job, outcome)  # inside the item: its requests count for it
        return outcome


async def run_observed(
    jobs: Sequence[tuple[Module, Mapping[str, Any]]],
    *,
    trace: bool = False,
    after: Callable[[int, Outcome], Awaitable[None]] | None = None,
    **batch_options: Any,
) -> list[Outcome]:
    """Run each ``(program, inputs)`` job through `run_batch`; outcomes in job order.

    ``batch_options`` are `BatchOptions` (``concurrency``, ``budget``, ``rate_limit``,
    ``timeout``, ``max_errors``, ``progress``, ``on_progress``). With ``trace``, each outcome
    holds the calls of its program's predictors. ``after(job, outcome)`` runs inside the
    item once its program succeeded (evaluation scores there, so a judge's requests run
    under the batch's limits and count in the item's usage). An item the batch itself ended
    (timeout, ``max_errors``) becomes an outcome with that error.
    """
    results = await run_batch(
        _Jobs(jobs, trace, after), [{"job": i} for i in range(len(jobs))], **batch_options
    )
    outcomes: list[Outcome] = []
    for item in results.items:
        outcome = (
            item.result
            if isinstance(item.result, Outcome)
            else Outcome(error=item.error, seconds=item.seconds)
        )
        outcome.usage, outcome.calls, outcome.cached = item.usage, item.requests, item.cached
        outcomes.append(outcome)
    return outcomes
