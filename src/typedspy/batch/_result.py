"""What a batch returns: one result per input, in input order, never raised."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, overload

from typedspy._types import Usage

__all__ = ["BatchItem", "BatchResult", "failure_kind"]

R = TypeVar("R")


def failure_kind(error: BaseException) -> str:
    """The name progress reports and tallies a failure under: its exception class's name."""
    return type(error).__name__


@dataclass(frozen=True)
class BatchItem(Generic[R]):
    """One input of a batch and what came of it.

    Attributes:
        index: Position in the inputs.
        inputs: The inputs the module was called with.
        result: The module's result (a `Prediction` for `Predict`), or the exception it
            ended with (`OutputError`, `LMError`, `ItemTimeoutError`, `BudgetExceededError`,
            `BatchStoppedError`, ... or whatever a user module raised).
        usage: Tokens the endpoint reported for this item's requests (cache hits excluded).
        requests: Requests this item sent to the endpoint.
        cached: Requests this item had answered from the response cache.
        seconds: Wall time of the item's run (up to its timeout when it timed out; 0 for
            an item that never started).
    """

    index: int
    inputs: Mapping[str, Any]
    result: R | Exception
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    cached: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the item produced a result rather than an exception."""
        return not isinstance(self.result, Exception)

    @property
    def error(self) -> Exception | None:
        """The exception, for a failed item."""
        return self.result if isinstance(self.result, Exception) else None


class BatchResult(Sequence["R | Exception"], Generic[R]):
    """The results of a batch, in input order: ``results[i]`` is input ``i``'s result or error.

    Attributes:
        items: The per-item records (inputs, result, usage, requests).
        stopped: Whether ``max_errors`` stopped the batch before every item ran.
    """

    def __init__(self, items: Sequence[BatchItem[R]], *, stopped: bool = False) -> None:
        self.items = tuple(items)
        self.stopped = stopped

    @overload
    def __getitem__(self, index: int) -> R | Exception: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[R | Exception]: ...
    def __getitem__(self, index: int | slice) -> R | Exception | Sequence[R | Exception]:
        if isinstance(index, slice):
            return [item.result for item in self.items[index]]
        return self.items[index].result

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[R | Exception]:
        return (item.result for item in self.items)

    @property
    def successes(self) -> list[R]:
        """The results of the items that succeeded, in input order."""
        return [item.result for item in self.items if not isinstance(item.result, Exception)]

    @property
    def errors(self) -> list[tuple[int, Exception]]:
        """``(index, exception)`` for every failed item, in input order."""
        return [(i.index, i.result) for i in self.items if isinstance(i.result, Exception)]

    @property
    def failures(self) -> dict[str, int]:
        """How many items failed, by failure kind (the exception class name)."""
        return dict(Counter(failure_kind(error) for _, error in self.errors))

    @property
    def usage(self) -> Usage:
        """Tokens over every item."""
        return sum((item.usage for item in self.items), Usage())

    @property
    def requests(self) -> int:
        """Requests sent to the endpoint over every item."""
        return sum(item.requests for item in self.items)

    @property
    def cached(self) -> int:
        """Requests answered from the response cache over every item."""
        return sum(item.cached for item in self.items)

    def __repr__(self) -> str:
        ok = len(self) - len(self.errors)
        return (
            f"BatchResult({len(self)} items: {ok} ok, failures={self.failures}, "
            f"requests={self.requests}, cached={self.cached}, tokens={self.usage.total_tokens})"
        )
