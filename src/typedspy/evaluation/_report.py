"""`EvaluationReport`: scores, failures by kind, slowest and worst items; JSON, CSV, a table."""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from typedspy._files import write_atomically
from typedspy._text import encodable
from typedspy.errors import (
    BatchStoppedError,
    BudgetExceededError,
    CacheError,
    ContentFilterError,
    InputError,
    ItemTimeoutError,
    LMError,
    OutputDecodeError,
    OutputValidationError,
    RefusalError,
    TokenBudgetExceededError,
    TruncatedOutputError,
)

__all__ = ["EvaluationReport", "FailureKind", "ItemResult", "failure_kind", "writable"]

FailureKind = Literal[
    "decode",
    "validation",
    "truncation",
    "refusal",
    "transport",
    "budget",
    "timeout",
    "stopped",
    "cache",
    "input",
    "metric",
    "error",
]
_KINDS: tuple[tuple[type[BaseException], FailureKind], ...] = (
    (OutputDecodeError, "decode"),
    (OutputValidationError, "validation"),
    (TruncatedOutputError, "truncation"),
    (RefusalError, "refusal"),
    (ContentFilterError, "refusal"),
    (TokenBudgetExceededError, "budget"),
    (BudgetExceededError, "budget"),
    (ItemTimeoutError, "timeout"),
    (BatchStoppedError, "stopped"),
    (CacheError, "cache"),
    (LMError, "transport"),
    (InputError, "input"),
)


def failure_kind(exc: BaseException) -> FailureKind:
    """The report's name for what went wrong (``"error"`` for anything else a program raised)."""
    for cls, kind in _KINDS:
        if isinstance(exc, cls):
            return kind
    return "error"


class ItemResult(BaseModel):
    """One dataset item's run.

    Attributes:
        index: Its position in the dataset, from 0.
        inputs / expected / outputs: JSON-ready values (``outputs`` is None on failure).
        score: The metric's score (the failure score when the run or the metric failed).
        field_scores: Per-field scores, for metrics that have them.
        failure / error: The failure kind and message, when it failed.
        seconds: Wall time of the run. calls / tokens: requests it sent to the endpoint and
            the tokens they used; cached: requests answered from the response cache.
    """

    index: int
    inputs: dict[str, Any]
    expected: dict[str, Any]
    outputs: dict[str, Any] | None = None
    score: float
    field_scores: dict[str, float] = Field(default_factory=dict)
    failure: FailureKind | None = None
    error: str | None = None
    seconds: float = 0.0
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EvaluationReport(BaseModel):
    """The result of `evaluate`: ``print(report)`` shows a table.

    Attributes:
        score: Mean item score, 0.0 to 1.0 (``percent`` is the same times 100).
        field_scores: Mean per-field scores over the items that ran.
        failures: Failure kind to count.
        items: Every item, in dataset order.
        calls / prompt_tokens / completion_tokens: Totals over all items.
        seconds: Wall time of the whole evaluation.
    """

    model_config = ConfigDict(ser_json_inf_nan="constants")  # a NaN label stays NaN, as in to_csv

    program: str
    metric: str
    score: float
    field_scores: dict[str, float]
    failures: dict[str, int]
    items: list[ItemResult]
    calls: int
    cached: int = 0
    prompt_tokens: int
    completion_tokens: int
    seconds: float

    @property
    def percent(self) -> float:
        """The score as a percentage, rounded to two decimals."""
        return round(self.score * 100, 2)

    def slowest(self, n: int = 3) -> list[ItemResult]:
        """The ``n`` items that took longest."""
        return sorted(self.items, key=lambda i: (-i.seconds, i.index))[:n]

    def worst(self, n: int = 3) -> list[ItemResult]:
        """The ``n`` lowest-scoring items (failures first, then by score)."""
        return sorted(self.items, key=lambda i: (i.failure is None, i.score, i.index))[:n]

    def to_json(self, path: str | os.PathLike[str] | None = None) -> str:
        """The whole report as JSON; also written to ``path`` when given."""
        text = self.model_dump_json(indent=2)
        if path is not None:
            write_atomically(path, text)
        return text

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """One row per item (values as JSON); also written to ``path`` when given."""
        fields = sorted({name for item in self.items for name in item.field_scores})
        columns = ["index", "score", *(f"score.{f}" for f in fields), "failure", "error",
                   "seconds", "calls", "cached", "prompt_tokens", "completion_tokens", "inputs",
                   "expected", "outputs"]  # fmt: skip
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(columns)
        for item in self.items:
            writer.writerow(
                [
                    item.index,
                    item.score,
                    *(item.field_scores.get(f, "") for f in fields),
                    item.failure or "",
                    item.error or "",
                    round(item.seconds, 4),
                    item.calls,
                    item.cached,
                    item.prompt_tokens,
                    item.completion_tokens,
                    _json(item.inputs),
                    _json(item.expected),
                    _json(item.outputs),
                ]
            )
        text = buffer.getvalue()
        if path is not None:
            write_atomically(path, text, newline="")
        return text

    def table(self, *, rows: int = 3, width: int = 60) -> str:
        """A plain-text summary: score, per-field scores, failures, usage, worst and slowest."""
        ok = sum(1 for i in self.items if i.failure is None)
        lines = [
            f"{self.program} on {len(self.items)} items, metric {self.metric}",
            f"  score            {self.percent:6.2f}%   ({ok} ran, {len(self.items) - ok} failed)",
        ]
        lines += [f"  {name:<16} {v * 100:6.2f}%" for name, v in self.field_scores.items()]
        if self.failures:
            shown = ", ".join(f"{k} {v}" for k, v in sorted(self.failures.items()))
            lines.append(f"  failures         {shown}")
        lines.append(
            f"  usage            {self.calls} calls ({self.cached} cached), "
            f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, "
            f"{self.seconds:.2f}s"
        )
        for title, items in (("worst", self.worst(rows)), ("slowest", self.slowest(rows))):
            lines.append(f"  {title}:")
            lines += [
                f"    #{i.index:<4} {i.score:5.2f} {i.seconds:7.3f}s  {_cut(_what(i), width)}"
                for i in items
            ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def writable(value: Any) -> Any:
    """JSON-ready ``value`` with lone surrogates (which UTF-8 cannot encode) replaced by U+FFFD.

    A dataset row may hold a lone surrogate (half an emoji, escaped in its JSON): the request
    carried U+FFFD for it (the LM repairs what it sends), and so does the report, which
    `EvaluationReport.to_json` and ``to_csv`` could not write otherwise.
    """
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not JSON-ready: to_json names it
        return value
    fixed = encodable(text)
    return value if fixed is text else json.loads(fixed)


def _what(item: ItemResult) -> str:
    if item.failure is not None:
        return f"[{item.failure}] {item.error or ''}"
    return _json(item.inputs)


def _cut(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _json(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
