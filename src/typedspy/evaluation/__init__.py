"""Evaluation: typed examples and datasets, metrics, and `evaluate` with its report."""

from __future__ import annotations

from typedspy.evaluation._dataset import load_dataset
from typedspy.evaluation._evaluate import Evaluate, aevaluate, evaluate
from typedspy.evaluation._example import Example
from typedspy.evaluation._judge import LLMJudge
from typedspy.evaluation._metric import FieldMetric, Metric, composite
from typedspy.evaluation._report import EvaluationReport, FailureKind, ItemResult

__all__ = [
    "Evaluate",
    "EvaluationReport",
    "Example",
    "FailureKind",
    "FieldMetric",
    "ItemResult",
    "LLMJudge",
    "Metric",
    "aevaluate",
    "composite",
    "evaluate",
    "load_dataset",
]
