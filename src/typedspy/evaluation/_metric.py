"""Metrics: per-field scores with no code for the common case, composites, plain functions."""

from __future__ import annotations

import inspect
import math
import reprlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from typedspy.errors import ConfigurationError
from typedspy.evaluation._compare import Comparer, exact, type_match
from typedspy.evaluation._example import Example

__all__ = ["FieldMetric", "Metric", "composite", "score"]

Metric = Callable[
    [Example[Any], Any],
    "float | bool | tuple[float | bool, str] | Awaitable[float | bool | tuple[float | bool, str]]",
]
"""A metric: ``(example, prediction) -> float | bool`` (``True`` is 1.0), sync or async.

It may also return ``(score, feedback)``: the feedback is text on what was wrong, which
`ts.optimize.GEPA` shows its reflection model; everywhere else the score alone counts.
"""


@runtime_checkable
class _PerField(Protocol):
    def per_field(self, example: Example, prediction: Any) -> dict[str, float]: ...


class FieldMetric:
    """Scores each labelled output field with a comparer; the score is their weighted mean.

    With no arguments it compares every output field the example has a label for: numbers
    with a small tolerance, union fields by member and value, everything else by equality
    (`exact`). Give comparers for some fields to change how they score, ``only`` to score a
    subset, and ``weights`` for a composite score.

    Example:
        ```python
        metric = FieldMetric({"label": type_match(), "tags": f1()}, weights={"label": 2})
        metric(example, prediction)            # 0.0..1.0
        metric.per_field(example, prediction)  # {"label": 1.0, "tags": 0.5}
        ```

    Args:
        comparers: Field name to comparer (`exact`, `normalized`, `type_match`, `f1`, or
            any ``(expected, predicted) -> float``).
        default: The comparer for labelled fields not in ``comparers``.
        only: Score only these fields (default: every labelled output field).
        weights: Field name to weight (default 1.0 each); a weight of 0 leaves a field out.

    Raises:
        ConfigurationError: A weight that is no finite number >= 0, ``only=[]``, weights
            naming a field outside ``only``, or every field of ``only`` weighing 0. Scoring
            raises it too when every field an example scores weighs 0 (no weighted mean).
    """

    def __init__(
        self,
        comparers: Mapping[str, Comparer] | None = None,
        *,
        default: Comparer | None = None,
        only: list[str] | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.comparers = dict(comparers or {})
        self.default = default or exact(rel_tol=1e-6)
        self.only = list(only) if only is not None else None
        self.weights = checked_weights("FieldMetric", weights or {})
        if self.only is not None:
            if not self.only:
                raise ConfigurationError("FieldMetric: only=[] scores no field; name one")
            unknown = sorted(set(self.weights) - set(self.only))
            if unknown:
                raise ConfigurationError(
                    f"FieldMetric: weights name {unknown}, which are not among only={self.only}"
                )
            self._check_some_weight(self.only)

    def per_field(self, example: Example, prediction: Any) -> dict[str, float]:
        """Each scored field's score (a field missing from the prediction scores 0.0)."""
        labels = example.labels()
        names = self.only if self.only is not None else list(labels)
        scores: dict[str, float] = {}
        for name in names:
            if name not in labels:
                continue
            try:
                predicted = prediction[name]
            except (KeyError, TypeError):
                scores[name] = 0.0
                continue
            compare = self.comparers.get(name, self.default)
            scores[name] = float(compare(labels[name], predicted))
        return scores

    def __call__(self, example: Example, prediction: Any) -> float:
        scores = self.per_field(example, prediction)
        if not scores:
            return 0.0
        self._check_some_weight(scores)
        total = sum(self.weights.get(n, 1.0) for n in scores)
        return sum(s * self.weights.get(n, 1.0) for n, s in scores.items()) / total

    def _check_some_weight(self, names: Iterable[str]) -> None:
        """Refuse fields that all weigh 0: their weighted mean is no number (it read as 0.0).

        Raises:
            ConfigurationError: Naming the fields and their weights.
        """
        names = list(names)
        if all(self.weights.get(n, 1.0) == 0 for n in names):
            raise ConfigurationError(
                f"FieldMetric: every field scored ({', '.join(names)}) has weight 0 (weights="
                f"{self.weights}), so there is no weighted mean; give one a weight > 0"
            )

    def __repr__(self) -> str:
        parts = [f"{k}={getattr(v, '__qualname__', repr(v))}" for k, v in self.comparers.items()]
        if self.only is not None:
            parts.append(f"only={self.only}")
        if self.weights:
            parts.append(f"weights={self.weights}")
        return f"FieldMetric({', '.join(parts) or 'exact'})"


def union_accuracy(*fields: str) -> FieldMetric:
    """`_type` accuracy on union fields: is the predicted member the expected one?"""
    return FieldMetric({f: type_match() for f in fields}, only=list(fields))


def checked_weights(owner: str, weights: Mapping[str, object]) -> dict[str, float]:
    """``weights`` as floats, each a finite number >= 0.

    Raises:
        ConfigurationError: Naming ``owner`` and the weight (a NaN weight made every score NaN).
    """
    checked: dict[str, float] = {}
    for name, weight in weights.items():
        if (
            isinstance(weight, bool)
            or not isinstance(weight, (int, float))
            or not math.isfinite(weight)
            or weight < 0
        ):
            raise ConfigurationError(
                f"{owner}: weights[{name!r}]={reprlib.repr(weight)}: expected a finite number >= 0"
            )
        checked[name] = float(weight)
    return checked


class _Composite:
    def __init__(self, metrics: Mapping[str, Metric], weights: Mapping[str, float]) -> None:
        self.metrics = dict(metrics)
        given = checked_weights("composite", weights)
        unknown = sorted(set(given) - set(self.metrics))
        if unknown:
            raise ConfigurationError(
                f"composite: weights name {unknown}, which are not among the metrics "
                f"{sorted(self.metrics)}"
            )
        self.weights = {n: given.get(n, 1.0) for n in self.metrics}
        if not any(self.weights.values()):
            raise ConfigurationError(
                f"composite: every metric has weight 0 (weights={self.weights}), so there is no "
                "weighted mean; give one a weight > 0"
            )

    def combine(self, parts: Mapping[str, float]) -> float:
        total = sum(self.weights.values())  # > 0: checked when built
        return sum(parts[n] * self.weights[n] for n in parts) / total

    async def ascore(self, example: Example, prediction: Any) -> float:
        return self.combine(await self.aper_field(example, prediction))

    async def aper_field(self, example: Example, prediction: Any) -> dict[str, float]:
        return {n: (await score(m, example, prediction))[0] for n, m in self.metrics.items()}

    def __call__(self, example: Example, prediction: Any) -> float:
        from typedspy._runtime import run_sync

        return run_sync(lambda: self.ascore(example, prediction), async_name="composite.ascore")


def composite(
    metrics: Mapping[str, Metric], *, weights: Mapping[str, float] | None = None
) -> Metric:
    """A weighted mean of named metrics (fields, functions, judges); each shows as a column.

    Args:
        metrics: Name to metric.
        weights: Name to weight (default 1.0 each).

    Raises:
        ConfigurationError: No metric, a weight that is no finite number >= 0 or names no
            metric, or every metric weighing 0.
    """
    if not metrics:
        raise ConfigurationError("composite needs at least one metric")
    return _Composite(metrics, weights or {})


async def score(
    metric: Metric, example: Example, prediction: Any
) -> tuple[float, dict[str, float], str]:
    """Run any metric: its score as a float, its per-field scores, its text feedback.

    Per-field scores are empty for a metric without them; the feedback is "" unless the
    metric returned ``(score, feedback)``.
    """
    if isinstance(metric, _Composite):
        parts = await metric.aper_field(example, prediction)
        return _value(metric, metric.combine(parts)), parts, ""
    ascore = getattr(metric, "ascore", None)
    result: Any = await ascore(example, prediction) if ascore else metric(example, prediction)
    if inspect.isawaitable(result):
        result = await result
    feedback = ""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], str):
        result, feedback = result
    value = _value(metric, result)
    per_field: dict[str, float] = {}
    if isinstance(metric, _PerField):
        per_field = metric.per_field(example, prediction)
    return value, per_field, feedback


def _value(metric: object, result: object) -> float:
    """A metric's result as a finite float (``True`` is 1.0).

    Raises:
        ConfigurationError: Anything else: NaN, infinity, an int past a float, ``None``, ...
    """
    if isinstance(result, bool):
        return 1.0 if result else 0.0
    if isinstance(result, (int, float)):
        try:
            value = float(result)
        except OverflowError:  # an int of 400 digits
            value = math.inf
        if math.isfinite(value):
            return value
    got = reprlib.repr(result) if isinstance(result, (int, float)) else type(result).__name__
    raise ConfigurationError(
        f"metric {metric!r} returned {got}; return a finite float or a bool, or (score, feedback)"
    )
