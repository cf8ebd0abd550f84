"""Evaluation: typed examples and datasets, metrics, and `evaluate` with its report."""

from __future__ import annotations

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.evaluation._compare import (
    Comparer as Comparer,
)
from typedspy.evaluation._compare import (
    exact as exact,
)
from typedspy.evaluation._compare import (
    f1 as f1,
)
from typedspy.evaluation._compare import (
    normalize_text as normalize_text,
)
from typedspy.evaluation._compare import (
    normalized as normalized,
)
from typedspy.evaluation._compare import (
    type_match as type_match,
)
from typedspy.evaluation._dataset import load_dataset
from typedspy.evaluation._evaluate import Evaluate, aevaluate, evaluate
from typedspy.evaluation._evaluate import (
    run_scored as run_scored,
)
from typedspy.evaluation._example import Example
from typedspy.evaluation._judge import LLMJudge
from typedspy.evaluation._metric import FieldMetric, Metric, composite
from typedspy.evaluation._metric import (
    score as score,
)
from typedspy.evaluation._metric import (
    union_accuracy as union_accuracy,
)
from typedspy.evaluation._observe import (
    Outcome as Outcome,
)
from typedspy.evaluation._observe import (
    TraceStep as TraceStep,
)
from typedspy.evaluation._observe import (
    run_observed as run_observed,
)
from typedspy.evaluation._report import EvaluationReport, FailureKind, ItemResult
from typedspy.evaluation._report import (
    failure_kind as failure_kind,
)

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
