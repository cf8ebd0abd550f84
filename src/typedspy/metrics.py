"""Metrics for `evaluate` and the optimizers: comparers, per-field metrics, composites, judges.

A metric is any ``(example, prediction) -> float | bool``. The common cases need no code::

    from typedspy import metrics

    metrics.FieldMetric()                                  # every labelled field, exact
    metrics.FieldMetric({"label": metrics.type_match(),    # union member only
                         "tags": metrics.f1(),             # list overlap
                         "answer": metrics.normalized()},  # case/punctuation-insensitive
                        weights={"label": 2})
    metrics.union_accuracy("label")                        # `_type` accuracy
    metrics.composite({"fields": metrics.FieldMetric(), "judge": judge})
"""

from __future__ import annotations

from typedspy.evaluation import (
    Comparer,
    FieldMetric,
    LLMJudge,
    Metric,
    composite,
    exact,
    f1,
    normalize_text,
    normalized,
    type_match,
    union_accuracy,
)

__all__ = [
    "Comparer",
    "FieldMetric",
    "LLMJudge",
    "Metric",
    "composite",
    "exact",
    "f1",
    "normalize_text",
    "normalized",
    "type_match",
    "union_accuracy",
]
