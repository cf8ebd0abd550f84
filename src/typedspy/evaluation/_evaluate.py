"""`evaluate` / `Evaluate`: run a program over a dataset and score it, never raising per item."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from typing_extensions import Unpack

from typedspy._runtime import run_sync
from typedspy.batch import BatchOptions
from typedspy.errors import ConfigurationError, check_finite
from typedspy.evaluation._example import Example
from typedspy.evaluation._metric import FieldMetric, Metric, score
from typedspy.evaluation._observe import Outcome, run_observed
from typedspy.evaluation._report import EvaluationReport, ItemResult, failure_kind, writable
from typedspy.modules import Module
from typedspy.signature import to_jsonable

__all__ = ["Evaluate", "aevaluate", "evaluate", "run_scored"]


async def aevaluate(
    program: Module,
    devset: Sequence[Example[Any]],
    metric: Metric | None = None,
    *,
    failure_score: float = 0.0,
    **options: Unpack[BatchOptions],
) -> EvaluationReport:
    """Async `evaluate`."""
    if not devset:
        raise ConfigurationError("evaluate: the dataset is empty")
    check_finite("evaluate", "failure_score", failure_score)
    chosen: Metric = metric if metric is not None else FieldMetric()
    start = time.perf_counter()
    outcomes = await run_scored(program, devset, chosen, **options)
    items = [
        _item(i, ex, out, failure_score)
        for i, (ex, out) in enumerate(zip(devset, outcomes, strict=True))
    ]
    return _report(program, chosen, items, time.perf_counter() - start)


async def run_scored(
    program: Module, devset: Sequence[Example[Any]], metric: Metric, **options: Any
) -> list[Outcome]:
    """Run ``program`` on each example through `run_observed`; score each prediction.

    The metric runs inside its item (`Outcome.scored`: score, per-field scores, feedback; the
    exception when the metric raised), so a judge's requests count in the item's usage.
    ``options`` are `run_observed`'s (``trace``) and `BatchOptions`.
    """

    async def scored(job: int, outcome: Outcome) -> None:
        try:
            outcome.scored = await score(metric, devset[job], outcome.result)
        except Exception as exc:  # a metric bug on one item is reported, not raised
            outcome.scored = exc

    return await run_observed([(program, ex.inputs()) for ex in devset], after=scored, **options)


def evaluate(
    program: Module,
    devset: Sequence[Example[Any]],
    metric: Metric | None = None,
    *,
    failure_score: float = 0.0,
    **options: Unpack[BatchOptions],
) -> EvaluationReport:
    """Run ``program`` on every example of ``devset`` and score its predictions.

    The items run through the batch machinery (`Module.abatch`'s worker pool, rate limit,
    budget, per-item timeout, progress bar; the response cache when one is configured). One
    item that fails (a decode or validation failure after retries, truncation, a refusal, a
    transport error, a timeout, a spent budget, an exception from the program or the metric)
    scores ``failure_score`` and is reported by kind; the evaluation goes on.

    Example:
        ```python
        report = ts.evaluate(program, devset)          # per-field exact match by default
        print(report)                                  # a table
        report.score, report.field_scores, report.failures
        report.to_csv("dev.csv")
        ```

    Args:
        program: Any module (a `Predict`, a `ChainOfThought`, your own `Module`).
        devset: Typed examples (see `load_dataset`).
        metric: ``(example, prediction) -> float | bool``, a `FieldMetric`, `composite`, or
            `LLMJudge`; default `FieldMetric()` (every labelled output field, exact match
            with numeric tolerance, union members by class and value).
        failure_score: The score of an item whose run or metric failed.
        **options: `BatchOptions`: ``concurrency`` (default 8), ``rate_limit``, ``budget``,
            ``timeout``, ``max_errors``, ``progress``, ``on_progress``.

    Returns:
        An `EvaluationReport`.

    Raises:
        ConfigurationError: An empty dataset, or an example without known inputs.
    """
    return run_sync(
        lambda: aevaluate(program, devset, metric, failure_score=failure_score, **options),
        async_name="aevaluate",
    )


class Evaluate:
    """A reusable evaluation (DSPy style): the dataset and metric now, the program later.

    Example:
        ```python
        dev = ts.evaluation.Evaluate(devset, metric=my_metric, concurrency=4)
        report = dev(program)
        ```

    Args:
        devset / metric / failure_score / options: As for `evaluate`.
    """

    def __init__(
        self,
        devset: Sequence[Example[Any]],
        metric: Metric | None = None,
        *,
        failure_score: float = 0.0,
        **options: Unpack[BatchOptions],
    ) -> None:
        self.devset = list(devset)
        self.metric = metric
        self.failure_score = failure_score
        self.options = options

    async def acall(self, program: Module) -> EvaluationReport:
        """Evaluate ``program`` in the current event loop."""
        return await aevaluate(
            program, self.devset, self.metric, failure_score=self.failure_score, **self.options
        )

    def __call__(self, program: Module) -> EvaluationReport:
        return run_sync(lambda: self.acall(program), async_name="Evaluate.acall")


def _item(index: int, example: Example, outcome: Outcome, failure_score: float) -> ItemResult:
    values = writable(_values(example))
    item = ItemResult(
        index=index,
        inputs={k: values[k] for k in example.inputs()},
        expected={k: values[k] for k in example.labels()},
        score=failure_score,
        seconds=outcome.seconds,
        calls=outcome.calls,
        cached=outcome.cached,
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
    )
    if outcome.error is not None:
        item.failure, item.error = failure_kind(outcome.error), writable(_message(outcome.error))
        return item
    item.outputs = writable(outcome.outputs())
    if isinstance(outcome.scored, Exception):
        item.failure, item.error = "metric", writable(_message(outcome.scored))
    elif outcome.scored is not None:
        item.score, item.field_scores, _ = outcome.scored
    return item


def _report(
    program: Module, metric: Metric, items: list[ItemResult], seconds: float
) -> EvaluationReport:
    ran = [i for i in items if i.failure is None]
    names = list(dict.fromkeys(n for i in ran for n in i.field_scores))
    field_scores = {n: sum(i.field_scores.get(n, 0.0) for i in ran) / len(ran) for n in names}
    failures = dict(Counter(i.failure for i in items if i.failure is not None))
    return EvaluationReport(
        program=repr(program),
        metric=repr(metric)
        if not callable(metric) or hasattr(metric, "per_field")
        else getattr(metric, "__qualname__", repr(metric)),
        score=sum(i.score for i in items) / len(items),
        field_scores=field_scores,
        failures=failures,
        items=items,
        calls=sum(i.calls for i in items),
        cached=sum(i.cached for i in items),
        prompt_tokens=sum(i.prompt_tokens for i in items),
        completion_tokens=sum(i.completion_tokens for i in items),
        seconds=seconds,
    )


def _message(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


def _values(example: Example) -> dict[str, Any]:
    """The example's values as JSON-ready data, one JSON cannot hold (bytes) by its ``repr``.

    As a result's is (`Outcome.outputs`): the run and its score stand.
    """
    try:
        return example.to_dict()
    except ValueError:  # UnicodeDecodeError and PydanticSerializationError are ones
        shown: dict[str, Any] = {}
        for key, value in example.items():
            try:
                shown[key] = to_jsonable(value)
            except ValueError:
                shown[key] = repr(value)
        return shown
