"""`run_batch`: one module over many inputs, concurrently, one result per input.

A fixed pool of ``concurrency`` worker tasks takes the next input until none is left, so a
million inputs cost a million results, not a million tasks. Each item runs in the caller's
settings plus the batch's budget and rate limit, with its own usage meter; its outcome (the
module's result or the exception it ended with) is stored at its index. Cancelling the
batch cancels every worker and waits for them, so no task outlives it and every in-flight
HTTP request is closed. After each finished item a `BatchProgress` snapshot goes to the
``on_progress`` callback and the optional tqdm bar.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypedDict

from typedspy._runtime import own_cancellation
from typedspy._types import Usage
from typedspy.batch._result import BatchItem, BatchResult, failure_kind
from typedspy.errors import (
    BatchStoppedError,
    ConfigurationError,
    InputError,
    ItemTimeoutError,
    check_int,
    check_number,
)
from typedspy.limits import Budget, RateLimit, UsageMeter, metering
from typedspy.settings import context

__all__ = ["BatchOptions", "BatchProgress", "ProgressBar", "run_batch"]

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


class _Runnable(Protocol):
    async def acall(self, **inputs: Any) -> Any: ...


class BatchOptions(TypedDict, total=False):
    """Options of `Module.abatch` and `Module.batch` (all optional).

    Attributes:
        concurrency: Items running at once (default 8).
        rate_limit: A `RateLimit` the batch's requests wait for (default: the setting).
        budget: A `Budget` the batch's requests are counted against (default: the setting).
            Items it refuses end with `BudgetExceededError`; the others still finish.
        timeout: Seconds one item may take (all its attempts and steps); past it, the item
            is cancelled and ends with `ItemTimeoutError`. ``None``: no limit.
        max_errors: Once this many items have failed, no further item starts: each ends with
            `BatchStoppedError`, while items already running finish. ``None``: no limit.
        on_progress: Called with a `BatchProgress` after every finished item.
        progress: Show a tqdm progress bar (needs ``pip install "typedspy[progress]"``).
    """

    concurrency: int
    rate_limit: RateLimit | None
    budget: Budget | None
    timeout: float | None
    max_errors: int | None
    on_progress: Callable[[BatchProgress], Any] | None
    progress: bool


async def run_batch(
    module: _Runnable, inputs: Iterable[Mapping[str, Any]], **options: Any
) -> BatchResult[Any]:
    """Run ``module.acall(**item)`` for every item; see `BatchOptions` for the options.

    Returns:
        One result per input, in input order; failures are returned, not raised.

    Raises:
        ConfigurationError: An unknown or invalid option.
        InputError: An input that is not a mapping (before anything runs).
    """
    unknown = sorted(set(options) - set(BatchOptions.__annotations__))
    if unknown:
        raise ConfigurationError(
            f"unknown batch option(s) {unknown}; valid: {sorted(BatchOptions.__annotations__)}"
        )
    items = list(inputs)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InputError(
                f"batch input {index} is a {type(item).__name__}, not a mapping of input "
                "names to values (pass dicts such as {'question': ...})"
            )
    limits = {k: options.pop(k) for k in ("budget", "rate_limit") if k in options}
    run = _Run(items, **options)
    with context(**{k: v for k, v in limits.items() if v is not None}):
        return await run.execute(module)


class _Run:
    """The state of one batch run."""

    def __init__(
        self,
        items: list[Mapping[str, Any]],
        *,
        concurrency: int = 8,
        timeout: float | None = None,
        max_errors: int | None = None,
        on_progress: Callable[[BatchProgress], Any] | None = None,
        progress: bool = False,
    ) -> None:
        check_int("batch", "concurrency", concurrency, optional=False)
        check_number("batch", "timeout", timeout, unit="seconds")
        check_int("batch", "max_errors", max_errors)
        self.items = items
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_errors = max_errors
        self.results: list[BatchItem[Any] | None] = [None] * len(items)
        self.callbacks: list[Callable[[BatchProgress], Any]] = []
        if on_progress is not None:
            self.callbacks.append(on_progress)
        self.bar = ProgressBar(len(items)) if progress else None
        if self.bar is not None:
            self.callbacks.append(self.bar)
        self.next_index = 0
        self.stopped = False
        self.started = time.monotonic()
        self.totals = UsageMeter()
        self.succeeded = 0
        self.failures: Counter[str] = Counter()

    async def execute(self, module: _Runnable) -> BatchResult[Any]:
        workers = [
            asyncio.ensure_future(self._worker(module))
            for _ in range(min(self.concurrency, len(self.items)))
        ]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            if self.bar is not None:
                self.bar.close()
        done = [item or self._skipped(i) for i, item in enumerate(self.results)]
        return BatchResult(done, stopped=self.stopped)

    async def _worker(self, module: _Runnable) -> None:
        while not self.stopped and self.next_index < len(self.items):
            index = self.next_index
            self.next_index += 1
            item = await self._run_one(module, index)
            self.results[index] = item
            self._count(item)

    async def _run_one(self, module: _Runnable, index: int) -> BatchItem[Any]:
        inputs = self.items[index]
        meter = UsageMeter()
        result: Any
        start = time.perf_counter()
        with metering(meter):
            try:
                result = await _within(self.timeout, lambda: module.acall(**inputs))
            except Exception as exc:  # the item's outcome; BaseExceptions end the batch
                result = exc
            except asyncio.CancelledError as exc:  # the batch's own, or the item's code's
                result = own_cancellation(f"item {index}", exc)
        seconds = time.perf_counter() - start
        return BatchItem(index, inputs, result, meter.usage, meter.requests, meter.cached, seconds)

    def _count(self, item: BatchItem[Any]) -> None:
        self.totals.usage += item.usage
        self.totals.requests += item.requests
        self.totals.cached += item.cached
        if item.error is None:
            self.succeeded += 1
        else:
            self.failures[failure_kind(item.error)] += 1
            if self.max_errors is not None and self.failures.total() >= self.max_errors:
                self.stopped = True
        if self.callbacks:
            progress = self._progress()
            for callback in self.callbacks:
                try:
                    callback(progress)
                except Exception:
                    logger.warning("progress callback %r raised; ignored", callback, exc_info=True)

    def _progress(self) -> BatchProgress:
        return BatchProgress(
            total=len(self.items),
            done=self.succeeded + self.failures.total(),
            succeeded=self.succeeded,
            failures=dict(self.failures),
            usage=self.totals.usage,
            requests=self.totals.requests,
            cached=self.totals.cached,
            elapsed=time.monotonic() - self.started,
        )

    def _skipped(self, index: int) -> BatchItem[Any]:
        limit = self.max_errors or 0
        error = BatchStoppedError(
            f"batch item {index} was not run: the batch stopped after {limit} failed item(s) "
            "(max_errors)",
            max_errors=limit,
        )
        return BatchItem(index, self.items[index], error)


async def _within(timeout: float | None, call: Callable[[], Awaitable[Any]]) -> Any:
    """Await ``call()``; past ``timeout`` seconds cancel it and raise `ItemTimeoutError`."""
    if timeout is None:
        return await call()
    message = f"batch item took longer than timeout={timeout}s and was cancelled"
    scope = asyncio.timeout(timeout)
    try:
        async with scope:
            return await call()
    except TimeoutError:
        if scope.expired():  # ours, not a TimeoutError the module raised itself
            raise ItemTimeoutError(message, timeout=timeout) from None
        raise
