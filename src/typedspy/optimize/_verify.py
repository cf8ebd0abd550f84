"""`verify`: a saved program checks it still reaches the score it was compiled to (ADR-083)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from typing_extensions import Unpack

from typedspy._runtime import run_sync
from typedspy._version import __version__
from typedspy.batch import BatchOptions
from typedspy.errors import ConfigurationError, VerificationError, check_finite
from typedspy.evaluation import EvaluationReport, Example, Metric, aevaluate
from typedspy.modules import Module
from typedspy.program import ScoreRecord

__all__ = ["VerifyReport", "averify", "devset_hash", "score_record", "verify"]

_EPSILON = 1e-9  # float noise in a mean is not a drop


def devset_hash(devset: Sequence[Example]) -> str:
    """A SHA-256 digest of ``devset``: each example's values (as JSON) and input names.

    The order of the examples does not count (a score does not depend on it); a changed,
    added or removed example does. A lone surrogate (an escaped half emoji in a JSONL row) is
    hashed as its own code point, not refused.
    """
    rows = sorted(
        json.dumps(
            {"inputs": sorted(ex.inputs()), "values": ex.to_dict()},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            default=str,
        )
        for ex in devset
    )
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogatepass")).hexdigest()


def score_record(report: EvaluationReport, devset: Sequence[Example]) -> ScoreRecord:
    """The `ScoreRecord` of ``report``, an evaluation on ``devset``."""
    return ScoreRecord(
        score=report.score,
        metric=report.metric,
        devset_sha256=devset_hash(devset),
        devset_size=len(devset),
        typedspy_version=__version__,
    )


@dataclass
class VerifyReport:
    """What `verify` found: the recorded score, the score now, and the evaluation behind it.

    Attributes:
        recorded: The program's `ScoreRecord`.
        score: Its score on the dev set now.
        tolerance: The drop allowed.
        evaluation: The `EvaluationReport` of the run.
        typedspy_version: The typedspy that scored it now.
    """

    recorded: ScoreRecord
    score: float
    tolerance: float
    evaluation: EvaluationReport
    typedspy_version: str = __version__

    @property
    def drop(self) -> float:
        """How far the score fell (negative: it rose)."""
        return self.recorded.score - self.score

    @property
    def passed(self) -> bool:
        """Whether the score fell by no more than the tolerance."""
        return self.drop <= self.tolerance + _EPSILON

    def __str__(self) -> str:
        r = self.recorded
        verdict = "ok" if self.passed else "FELL"
        metric = "" if self.evaluation.metric == r.metric else f" (recorded with {r.metric})"
        return (
            f"verify: {verdict}: {self.score:.4f} now vs {r.score:.4f} recorded "
            f"(tolerance {self.tolerance}) on {r.devset_size} examples, metric "
            f"{self.evaluation.metric}{metric}; typedspy {self.typedspy_version} now, "
            f"{r.typedspy_version} recorded"
        )


async def averify(
    program: Module,
    devset: Sequence[Example],
    metric: Metric | None = None,
    *,
    tolerance: float = 0.0,
    **options: Unpack[BatchOptions],
) -> VerifyReport:
    """Async `verify`."""
    record = program.score_record
    if record is None:
        raise ConfigurationError(
            f"verify: {type(program).__name__} has no score record: compile it with a valset "
            "(optimizer.compile(program, trainset, valset=devset)) or load one saved so"
        )
    check_finite("verify", "tolerance", tolerance)  # a str or None: a TypeError below
    if not 0.0 <= tolerance <= 1.0:
        raise ConfigurationError(f"verify: tolerance={tolerance!r}, expected 0.0 to 1.0")
    digest = devset_hash(devset)
    if digest != record.devset_sha256:
        raise VerificationError(
            f"verify: the dev set ({len(devset)} examples, sha256 {digest[:12]}) is not the one "
            f"the program was scored on ({record.devset_size} examples, sha256 "
            f"{record.devset_sha256[:12]}); nothing was run",
            reason="devset_changed",
            expected=record.devset_sha256,
            got=digest,
        )
    evaluation = await aevaluate(program, devset, metric, **options)
    report = VerifyReport(record, evaluation.score, tolerance, evaluation)
    if not report.passed:
        failures = ", ".join(f"{k} x{n}" for k, n in evaluation.failures.items())
        raise VerificationError(
            f"{report}: the score fell by {report.drop:.4f}"
            + (f"; failed items: {failures}" if failures else ""),
            reason="score_dropped",
            expected=record.score,
            got=evaluation.score,
            report=report,
        )
    return report


def verify(
    program: Module,
    devset: Sequence[Example],
    metric: Metric | None = None,
    *,
    tolerance: float = 0.0,
    **options: Unpack[BatchOptions],
) -> VerifyReport:
    """Re-score a compiled (or loaded) program on the dev set it was scored on.

    The program's `score_record` (set when an optimizer compiled it with a ``valset``, saved
    and loaded with it) holds its score and a digest of that dev set. ``verify`` checks the
    digest, evaluates the program (`ts.evaluate`, through the batch machinery: with
    ``cache_mode="replay"`` it runs offline from a cassette), and compares.

    Example:
        ```python
        program.load("router.json")
        ts.optimize.verify(program, devset, tolerance=0.02)  # raises if it fell by more
        ```

    Args:
        program: A program with a `score_record`.
        devset: The dev set it was scored on.
        metric: The metric (default `FieldMetric()`); use the one it was scored with.
        tolerance: The drop in score (0.0 to 1.0) still accepted.
        **options: `BatchOptions` for the evaluation (concurrency, budget, ...).

    Returns:
        A `VerifyReport` when the score fell by no more than ``tolerance``.

    Raises:
        VerificationError: ``reason="devset_changed"`` (before any call) or
            ``"score_dropped"`` (with the report).
        ConfigurationError: The program has no score record, or a tolerance out of range.
    """
    return run_sync(
        lambda: averify(program, devset, metric, tolerance=tolerance, **options),
        async_name="averify",
    )
