"""Run a program on many inputs, observing each run: result or error, time, usage, trace.

Each run gets its own `Recorder` callback, scoped with `ts.context` to the run's task, so
concurrent runs never see each other's events. The recorder keeps the LM usage of the run
and, for the predictors it watches, what each was called with and returned: the per-predictor
trace optimizers turn into demos.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typedspy._types import Usage
from typedspy.callbacks import BaseCallback
from typedspy.lm._base import BaseLM, LMRequest, LMResponse
from typedspy.modules import Module
from typedspy.prediction import Prediction
from typedspy.settings import context, get_settings

__all__ = ["Outcome", "Recorder", "TraceStep", "run_observed"]


@dataclass(frozen=True)
class TraceStep:
    """One successful predictor call inside a run: which predictor, its inputs and outputs."""

    path: str
    inputs: Mapping[str, Any]
    outputs: Mapping[str, Any]


class Recorder(BaseCallback):
    """Collects one run's LM usage and the calls of the predictors it watches."""

    def __init__(self, watched: Mapping[int, str]) -> None:
        self._watched = watched
        self._open: dict[str, tuple[str, Mapping[str, Any]]] = {}
        self.trace: list[TraceStep] = []
        self.usage = Usage()
        self.calls = 0

    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        path = self._watched.get(id(instance))
        if path is not None:
            self._open[call_id] = (path, dict(inputs))

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        opened = self._open.pop(call_id, None)
        if opened is not None and exception is None and isinstance(outputs, Prediction):
            self.trace.append(TraceStep(opened[0], opened[1], dict(outputs)))

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        self.calls += 1

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        if response is not None:
            self.usage = self.usage + response.usage


@dataclass
class Outcome:
    """What one run produced (never an exception raised past it)."""

    result: Any = None
    error: BaseException | None = None
    seconds: float = 0.0
    usage: Usage = field(default_factory=Usage)
    calls: int = 0
    trace: list[TraceStep] = field(default_factory=list)


async def observe(
    program: Module, inputs: Mapping[str, Any], watched: Mapping[int, str]
) -> Outcome:
    """Run ``program`` once with its own recorder; errors are returned, not raised."""
    recorder = Recorder(watched)
    outcome = Outcome()
    start = time.perf_counter()
    with context(callbacks=[*get_settings().callbacks, recorder]):
        try:
            outcome.result = await program.acall(**inputs)
        except Exception as exc:  # one bad item must not end the run: it is reported
            outcome.error = exc
    outcome.seconds = time.perf_counter() - start
    outcome.usage, outcome.calls, outcome.trace = recorder.usage, recorder.calls, recorder.trace
    return outcome


def watch(program: Module) -> dict[int, str]:
    """The predictors of ``program`` by identity, mapped to their paths."""
    return {id(p): name for name, p in program.named_predictors()}


async def run_observed(
    jobs: Sequence[tuple[Module, Mapping[str, Any]]],
    *,
    concurrency: int,
    trace: bool = False,
) -> list[Outcome]:
    """Run each ``(program, inputs)`` job, at most ``concurrency`` at a time, results in order.

    This is the one place evaluation and optimizers fan out; it is where the batch machinery
    plugs in. With ``trace``, each outcome holds the calls of the job's program's predictors.
    """
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(program: Module, inputs: Mapping[str, Any]) -> Outcome:
        async with gate:
            return await observe(program, inputs, watch(program) if trace else {})

    return list(await asyncio.gather(*(one(program, inputs) for program, inputs in jobs)))
