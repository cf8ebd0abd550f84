"""Evaluation: typed examples and datasets, metrics, and `evaluate` with its report."""

from __future__ import annotations

from typedspy.evaluate._dataset import load_dataset
from typedspy.evaluate._evaluate import Evaluate, aevaluate, evaluate
from typedspy.evaluate._example import Example
from typedspy.evaluate._judge import LLMJudge
from typedspy.evaluate._metric import FieldMetric, Metric, composite
from typedspy.evaluate._report import EvaluationReport, FailureKind, ItemResult

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
