"""Batch progress: a snapshot after each item, for a callback and an optional tqdm bar."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy._types import Usage
from typedspy.errors import ConfigurationError

__all__ = ["BatchProgress", "ProgressBar", "notify"]

logger = logging.getLogger("typedspy")


@dataclass(frozen=True)
class BatchProgress:
    """Where a batch stands; passed to ``on_progress`` after every finished item.

    Attributes:
        total: Items in the batch.
        done: Items finished (succeeded or failed).
        succeeded: Items that produced a result.
        failures: Failed items by failure kind (the exception class name, e.g.
            ``"OutputValidationError"``, ``"ItemTimeoutError"``).
        usage: Tokens used so far.
        requests: Requests sent so far.
        cached: Requests answered from the response cache so far.
        elapsed: Seconds since the batch started.
    """

    total: int
    done: int
    succeeded: int
    failures: Mapping[str, int] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    cached: int = 0
    elapsed: float = 0.0

    @property
    def failed(self) -> int:
        """Items that failed, of every kind."""
        return sum(self.failures.values())

    def summary(self) -> str:
        """``"ok=12 OutputValidationError=1 tokens=3456 cached=2"``: the bar's postfix."""
        parts = [f"ok={self.succeeded}"]
        parts += [f"{kind}={n}" for kind, n in sorted(self.failures.items())]
        parts.append(f"tokens={self.usage.total_tokens}")
        if self.cached:
            parts.append(f"cached={self.cached}")
        return " ".join(parts)


class ProgressBar:
    """A tqdm bar showing done/total, failures by kind and tokens (the ``progress`` extra).

    Raises:
        ConfigurationError: tqdm is not installed.
    """

    def __init__(self, total: int, *, description: str = "batch") -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError as exc:
            raise ConfigurationError(
                'progress=True needs tqdm: pip install "typedspy[progress]"'
            ) from exc
        self._bar: Any = tqdm(total=total, desc=description, unit="item", dynamic_ncols=True)

    def __call__(self, progress: BatchProgress) -> None:
        self._bar.set_postfix_str(progress.summary(), refresh=False)
        self._bar.update(progress.done - self._bar.n)  # redraws at most every tqdm mininterval

    def close(self) -> None:
        """Finish the bar's line."""
        self._bar.close()


def notify(callbacks: list[Callable[[BatchProgress], Any]], progress: BatchProgress) -> None:
    """Call each progress callback; one that raises is logged and ignored."""
    for callback in callbacks:
        try:
            callback(progress)
        except Exception:
            logger.warning("progress callback %r raised; ignored", callback, exc_info=True)
