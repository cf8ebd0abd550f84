"""`Prediction`: a module's typed outputs, with usage, attempts and the raw completion."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from typedspy._types import Attempt, Usage
from typedspy.signature import Signature, to_jsonable_fields

if TYPE_CHECKING:
    from typedspy.lm import LMResponse

__all__ = ["Attempt", "Prediction", "Reasoned", "Usage"]

SigT = TypeVar("SigT", bound=Signature)


class Prediction(Mapping[str, Any], Generic[SigT]):
    """The outputs of one call: ``pred.action`` or ``pred["action"]``.

    Attributes:
        signature: The signature the outputs belong to.
        usage: Tokens summed over every attempt of the call.
        attempts: One record per request (raw text, errors, usage), in order.
        raw: The text of the last completion.
        completion: The last `LMResponse`, when the prediction came from a model.
        extras: Additional results a module attaches (for example ReAct's ``trajectory``,
            a ``think_then_format`` call's ``free_answer``).
    """

    __slots__ = ("_outputs", "attempts", "completion", "extras", "raw", "signature", "usage")

    def __init__(
        self,
        signature: type[SigT],
        outputs: Mapping[str, Any],
        *,
        usage: Usage | None = None,
        attempts: tuple[Attempt, ...] = (),
        raw: str = "",
        completion: LMResponse | None = None,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        self.signature: type[SigT] = signature
        self._outputs = dict(outputs)
        self.usage = usage if usage is not None else sum((a.usage for a in attempts), Usage())
        self.attempts = attempts
        self.raw = raw
        self.completion = completion
        self.extras = dict(extras or {})

    @property
    def outputs(self) -> SigT:
        """The outputs as an instance of the signature: the typed view (ADR-015).

        ``pred.outputs.action`` has the declared type under mypy and pyright, where
        ``pred.action`` is `Any`. Only output fields are set; reading an input field on the
        view raises `AttributeError`. The values are those already validated (not re-checked).
        """
        return cast("SigT", self.signature.model_construct(**self._outputs))

    @property
    def reasoning_content(self) -> str | None:
        """The model's reasoning for the answer, when the server sent any apart from it.

        Read from ``reasoning_content`` (llama.cpp, vLLM, DeepSeek), or split off the start of
        the content where the profile names reasoning tags (``<think>...</think>``); never
        parsed as the answer. ``None`` when there was none.
        """
        if self.attempts and self.attempts[-1].reasoning is not None:
            return self.attempts[-1].reasoning
        return self.completion.reasoning if self.completion is not None else None

    @property
    def free_answer(self) -> str | None:
        """The free answer of a ``think_then_format`` call, which its outputs were written from.

        The first request's reply, its reasoning split off (ADR-086); ``None`` for a call in
        any other mode. An output of this name is read first (``pred.outputs.free_answer``
        types it).
        """
        value = self._outputs.get("free_answer", self.extras.get("free_answer"))
        return cast("str | None", value)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._outputs[name]
        except KeyError:
            try:
                return self.extras[name]
            except KeyError:
                fields = ", ".join(self._outputs)
                raise AttributeError(
                    f"prediction has no output {name!r} (outputs: {fields})"
                ) from None

    def __getitem__(self, name: str) -> Any:
        return self._outputs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prediction):
            return self.signature is other.signature and self._outputs == other._outputs
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._outputs.items())
        return f"Prediction({shown})"

    def __getstate__(self) -> dict[str, Any]:
        return {slot: getattr(self, slot) for slot in Prediction.__slots__}  # subclasses add none

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)

    def to_dict(self) -> dict[str, Any]:
        """The outputs as JSON-ready data; union members carry their ``_type``."""
        return to_jsonable_fields(self._outputs, self.signature.output_fields)


class Reasoned(Prediction[SigT]):
    """A `ChainOfThought` prediction: the outputs, and the ``reasoning`` written before them.

    ``pred.reasoning`` is typed ``str`` (``pred.outputs`` is the caller's signature, which has
    no ``reasoning`` field).
    """

    __slots__ = ()

    @property
    def reasoning(self) -> str:
        """What the model wrote, step by step, before the outputs."""
        return cast("str", self._outputs["reasoning"])
