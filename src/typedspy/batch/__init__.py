"""Running a module over many inputs: `run_batch`, its options, results and progress."""

from typedspy.batch._result import BatchItem, BatchResult, failure_kind
from typedspy.batch._runner import BatchOptions, BatchProgress, ProgressBar, run_batch

__all__ = [
    "BatchItem",
    "BatchOptions",
    "BatchProgress",
    "BatchResult",
    "ProgressBar",
    "failure_kind",
    "run_batch",
]
