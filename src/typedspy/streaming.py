"""Stream events: what `Module.astream` / `Module.stream` yield while a call runs.

Every stream ends with the final `typedspy.Prediction`, equal to what the non-streaming call
returns for the same completion.

Example:
    ```python
    async for event in ts.Predict(Decide).astream(task="Ship it"):
        match event:
            case OutputDelta(field=name, text=text): print(name, text, end="")
            case PartialPrediction(values=values): render(values)
            case ts.Prediction(): final = event
    ```
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from typing_extensions import TypeVar as DefaultTypeVar

from typedspy._types import FieldError

__all__ = [
    "OutputDelta",
    "PartialPrediction",
    "RetryStarted",
    "StreamEvent",
    "ToolCallFinished",
    "ToolCallStarted",
]


@dataclass(frozen=True)
class OutputDelta:
    """Raw text as it arrives, attributed to the output field it belongs to.

    The text of a field's value has that field's name; everything else (braces, keys, colons,
    commas, ``[[ ## field ## ]]`` markers, a fence or prose around the JSON, a leading
    ``<think>`` block the profile's ``reasoning_tags`` name) has ``None``. A
    chunk that spans two fields comes as two deltas; all the deltas joined are the completion.
    """

    field: str | None
    text: str


SigT = DefaultTypeVar("SigT", bound=BaseModel, default=Any)
"""The signature of the outputs: a `typedspy.Signature` subclass."""


@dataclass(frozen=True)
class PartialPrediction(Generic[SigT]):
    """The outputs parsed so far, emitted whenever they change (a field completing included).

    A field in progress longer than 2,048 characters is re-read (and so shown changed) once it
    grew by an eighth, which keeps the work per chunk flat for very long outputs.

    Attributes:
        values: Completed fields as validated typed values (validated by the signature's output
            model, as the final validation does; one that fails is left out), and the field in
            progress as a partial value: text so far, items so far, and for a union or model
            field an instance of the member class (named by a complete ``_type``) built,
            unvalidated, from the keys seen so far.
        in_progress: The name of the field still being written, if any.
        signature: The signature the values belong to (None when built without one).
    """

    values: Mapping[str, Any]
    in_progress: str | None = None
    signature: type[SigT] | None = field(default=None, compare=False, repr=False)

    @property
    def outputs(self) -> SigT:
        """The values so far as an instance of the signature: the typed view (ADR-015).

        ``partial.outputs.action`` has the declared type under mypy and pyright. Fields not
        seen yet are not set (reading one raises `AttributeError`); the field in progress holds
        its partial value, unvalidated.

        Raises:
            AttributeError: The event was built without a signature.
        """
        if self.signature is None:
            raise AttributeError("this PartialPrediction has no signature: read .values")
        return self.signature.model_construct(**self.values)


@dataclass(frozen=True)
class ToolCallStarted:
    """An orchestrator is about to run a tool.

    ``arguments`` is the decoded JSON object, or the raw text when it is not one.
    """

    call_id: str
    name: str
    arguments: Mapping[str, Any] | str


@dataclass(frozen=True)
class ToolCallFinished:
    """A tool call ended; ``observation`` is what the model will see.

    ``error`` is True when the tool produced no result: an unknown tool, invalid arguments,
    an exception, a refused confirmation.
    """

    call_id: str
    name: str
    observation: str
    error: bool = False


@dataclass(frozen=True)
class RetryStarted:
    """An attempt's output failed to decode or validate at its end; the next attempt starts.

    Partial values shown before it belong to the failed attempt.

    Attributes:
        attempt: The number of the attempt starting now (2 for the first retry).
        errors: What was wrong with the failed attempt's output.
    """

    attempt: int
    errors: tuple[FieldError, ...] = field(default_factory=tuple)


StreamEvent = OutputDelta | PartialPrediction | ToolCallStarted | ToolCallFinished | RetryStarted
"""Every event type except the final `Prediction`."""


_T = TypeVar("_T")


class closing(Generic[_T]):
    """``contextlib.aclosing`` for any async iterator: ``aclose()`` it on exit, if it can.

    Every layer of a streamed call closes the one it consumes this way, so a consumer that
    stops early closes the HTTP stream at once, not when an abandoned generator is collected.
    A class, not an ``asynccontextmanager``: a call passes a dozen of these, and the decorator
    costs a generator of its own for each.
    """

    __slots__ = ("_iterator",)

    def __init__(self, iterator: AsyncIterator[_T]) -> None:
        self._iterator = iterator

    async def __aenter__(self) -> AsyncIterator[_T]:
        return self._iterator

    async def __aexit__(self, *exc_info: object) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            await aclose()
