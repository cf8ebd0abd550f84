"""`ChainOfThought`: Predict with a `reasoning` output written before the answer."""

from __future__ import annotations

from collections.abc import Callable
from types import UnionType
from typing import TYPE_CHECKING, Any, cast, overload

from pydantic.fields import FieldInfo
from typing_extensions import TypeVar, Unpack

from typedspy.engine import signature_of
from typedspy.errors import SchemaError
from typedspy.modules._predict import InputsT, Predict, PredictOptions
from typedspy.prediction import Reasoned
from typedspy.signature import OutputField, Returns, Signature, build_signature

__all__ = ["ChainOfThought"]

SigT = TypeVar("SigT", bound=Signature, default=Signature)  # a string signature: any
OutT = TypeVar("OutT")
_DEFAULT_REASONING = "Think step by step before answering: your reasoning, briefly."


def with_reasoning(sig: type[Signature], description: str) -> type[Signature]:
    """``sig`` with a ``reasoning: str`` output prepended (same name and instructions)."""
    if "reasoning" in sig.input_fields or "reasoning" in sig.output_fields:
        raise SchemaError(
            f"{sig.__name__}.reasoning: ChainOfThought adds its own 'reasoning' output, which "
            "would replace this field; rename it (or use ts.Predict)",
            path=("reasoning",),
        )
    outputs: dict[str, tuple[Any, FieldInfo]] = {
        "reasoning": (str, OutputField(description=description))
    }
    outputs.update({n: (f.annotation, f) for n, f in sig.output_fields.items() if n != "reasoning"})
    inputs = {n: (f.annotation, f) for n, f in sig.input_fields.items()}
    derived = build_signature(sig.__name__, inputs, outputs, sig.instructions)
    derived.__qualname__ = sig.__qualname__
    return derived


class ChainOfThought(Predict[SigT, InputsT]):
    """Like `Predict`, with the model writing its ``reasoning`` first (it is on the prediction).

    The reasoning is the first property of the output schema, so with structured outputs the
    model writes it before the answer fields. Modes, unions and retries behave as in `Predict`.
    ``original_signature`` keeps the signature without ``reasoning``: it is the contract
    `Tool.from_module` exposes, and new instructions (set or loaded) apply to both.

    Example:
        ```python
        cot = ts.ChainOfThought("question -> answer: int")
        pred = cot(question="What is 17 * 3?")
        pred.reasoning, pred.answer
        ```

    Args:
        signature: A signature class or string, as for `Predict`.
        output: A root-level output type, as for `Predict` (the reasoning comes first).
        reasoning_description: The description of the ``reasoning`` field shown to the model.
        lm, mode, max_retries, demos, token_budget, **lm_kwargs: As for `Predict`.
    """

    _prediction = Reasoned

    @overload
    def __init__(
        self: ChainOfThought[Returns[OutT], ...],
        signature: str,
        *,
        output: type[OutT],
        reasoning_description: str = _DEFAULT_REASONING,
        **options: Unpack[PredictOptions],
    ) -> None: ...

    @overload
    def __init__(
        self: ChainOfThought[Returns[Any], ...],
        signature: str,
        *,
        output: UnionType,
        reasoning_description: str = _DEFAULT_REASONING,
        **options: Unpack[PredictOptions],
    ) -> None: ...

    @overload
    def __init__(
        self,
        signature: Callable[InputsT, SigT] | str,
        *,
        output: None = None,
        reasoning_description: str = _DEFAULT_REASONING,
        **options: Unpack[PredictOptions],
    ) -> None: ...

    def __init__(
        self,
        signature: Callable[..., SigT] | str,
        *,
        output: Any = None,
        reasoning_description: str = _DEFAULT_REASONING,
        **options: Any,
    ) -> None:
        base: type[Signature] = signature_of(signature, output)
        self.original_signature = base
        # The prediction's signature is the derived one (``reasoning`` first); `outputs` reads
        # as the caller's signature statically, and its fields are there at run time. The other
        # options are `Predict`'s, checked there.
        derived: Any = with_reasoning(base, reasoning_description)
        super().__init__(derived, **options)

    if TYPE_CHECKING:
        # The calls return `Reasoned` predictions: ``pred.reasoning`` is typed ``str``.

        def _typed_call(self, *args: InputsT.args, **inputs: InputsT.kwargs) -> Reasoned[SigT]: ...

    @property
    def instructions(self) -> str:
        """The instruction sent to the model (the signature's docstring unless replaced)."""
        return self.signature.instructions

    @instructions.setter
    def instructions(self, text: str) -> None:
        self.signature = cast("type[SigT]", self.signature.with_instructions(text))
        self.original_signature = self.original_signature.with_instructions(text)
