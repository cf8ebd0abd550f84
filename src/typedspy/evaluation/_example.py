"""`Example`: one item of a dataset, its inputs and expected outputs, typed by a signature."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Generic, cast, overload

from typing_extensions import TypeVar

from typedspy._types import FieldError
from typedspy.errors import ConfigurationError, ExampleError
from typedspy.parse import field_value
from typedspy.signature import Signature, to_jsonable_fields

__all__ = ["Example", "typed_values"]

SigT = TypeVar("SigT", bound=Signature, default=Signature)


class Example(Mapping[str, Any], Generic[SigT]):
    """One dataset item: inputs and expected outputs; ``ex.question`` or ``ex["question"]``.

    Built with a signature, the values are validated against its fields (a union field's
    value becomes the member instance, ``"3"`` becomes ``3`` for an ``int`` field) and the
    inputs are the signature's input fields. Without one, values are kept as given and
    `with_inputs` says which keys are inputs, as in DSPy.

    Example:
        ```python
        ex = ts.Example(Classify, text="Refund my order", label=Billing(urgent=False))
        ex.inputs()   # {"text": "Refund my order"}
        ex.labels()   # {"label": Billing(urgent=False)}
        plain = ts.Example(question="2 + 2?", answer="4").with_inputs("question")
        ```

    Built with a signature, it is an ``Example[Classify]`` under mypy and pyright, and
    ``ex.outputs.label`` is the typed view of a label (as ``pred.outputs`` is a prediction's).

    Args:
        signature: The signature that types the values (optional, positional only).
        **values: Input and output values by field name.

    Raises:
        ExampleError: A value does not validate against the signature, or a required input
            is missing; ``errors`` name the fields.
    """

    __slots__ = ("_input_keys", "_values", "signature")

    @overload
    def __init__(self, signature: type[SigT], /, **values: Any) -> None: ...

    @overload
    def __init__(self: Example[Signature], signature: None = None, /, **values: Any) -> None: ...

    def __init__(self, signature: type[SigT] | None = None, /, **values: Any) -> None:
        self.signature: type[SigT] | None = signature
        self._values: dict[str, Any] = (
            typed_values(signature, values) if signature is not None else dict(values)
        )
        self._input_keys: frozenset[str] | None = (
            frozenset(signature.input_fields) & set(self._values) if signature else None
        )

    @classmethod
    def _make(
        cls,
        signature: type[SigT] | None,
        values: Mapping[str, Any],
        input_keys: frozenset[str] | None,
    ) -> Example[SigT]:
        ex: Example[SigT] = cls.__new__(cls)
        ex.signature, ex._values, ex._input_keys = signature, dict(values), input_keys
        return ex

    def with_inputs(self, *keys: str) -> Example[SigT]:
        """A copy that treats ``keys`` as the inputs (the other values are labels).

        Raises:
            ConfigurationError: A key that is not among the example's values.
        """
        unknown = [k for k in keys if k not in self._values]
        if unknown:
            raise ConfigurationError(
                f"with_inputs: {unknown} are not values of this example "
                f"(it has {sorted(self._values)})"
            )
        return self._make(self.signature, self._values, frozenset(keys))

    def inputs(self) -> dict[str, Any]:
        """The input values, to call a program with (``program(**ex.inputs())``).

        Raises:
            ConfigurationError: The example has no signature and `with_inputs` was not called.
        """
        if self._input_keys is None:
            raise ConfigurationError(
                "this example does not know its inputs: build it with a signature, or call "
                ".with_inputs('name', ...)"
            )
        return {k: v for k, v in self._values.items() if k in self._input_keys}

    def labels(self) -> dict[str, Any]:
        """The expected outputs: every value that is not an input."""
        keys = self._input_keys or frozenset()
        return {k: v for k, v in self._values.items() if k not in keys}

    @property
    def outputs(self) -> SigT:
        """The labels as an instance of the signature: the typed view (ADR-015).

        ``ex.outputs.label`` has the declared type under mypy and pyright, where ``ex.label``
        is `Any`, so a metric reads ``ex.outputs.label == pred.outputs.label``. Only output
        fields the example has are set; reading another raises `AttributeError`. The values
        are those already validated (not re-checked).

        Raises:
            ConfigurationError: The example was built without a signature.
        """
        if self.signature is None:
            raise ConfigurationError(
                "this example has no signature, so no typed outputs: build it as "
                "ts.Example(Signature, ...), or read ex.labels()"
            )
        fields = self.signature.output_fields
        labels = {k: v for k, v in self._values.items() if k in fields}
        return cast("SigT", self.signature.model_construct(**labels))

    def to_dict(self) -> dict[str, Any]:
        """All values as JSON-ready data; union members carry their ``_type``."""
        fields = (
            {**self.signature.input_fields, **self.signature.output_fields}
            if self.signature
            else {}
        )
        return to_jsonable_fields(self._values, fields)

    def copy(self, **changes: Any) -> Example[SigT]:
        """A copy with some values replaced (validated again when typed)."""
        values = {**self._values, **changes}
        if self.signature is not None:
            values = typed_values(self.signature, values)
        return self._make(self.signature, values, self._input_keys)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"example has no value {name!r} (values: {', '.join(self._values)})"
            ) from None

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Example):
            return self._values == other._values and self._input_keys == other._input_keys
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        inputs = "" if self._input_keys is None else f", inputs={sorted(self._input_keys)}"
        return f"Example({shown}{inputs})"

    def __getstate__(self) -> dict[str, Any]:
        return {s: getattr(self, s) for s in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for key, value in state.items():
            object.__setattr__(self, key, value)


def typed_values(signature: type[Signature], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` validated against ``signature``'s fields (inputs all required ones).

    Raises:
        ExampleError: Unknown keys, missing required inputs, or values that do not validate.
    """
    errors: list[FieldError] = []
    unknown = [
        k for k in values if k not in signature.input_fields and k not in signature.output_fields
    ]
    errors += [FieldError((k,), "not a field of the signature") for k in unknown]
    missing = [n for n, f in signature.input_fields.items() if f.is_required() and n not in values]
    errors += [FieldError((k,), "required input missing") for k in missing]
    typed: dict[str, Any] = {}
    for model, fields in (
        (signature.input_model, signature.input_fields),
        (signature.output_model, signature.output_fields),
    ):
        for name in fields:
            if name in values:
                value, problems = field_value(model, name, values[name], fields[name].annotation)
                errors += problems
                typed[name] = value
    if errors:
        shown = "; ".join(str(e) for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise ExampleError(f"{signature.__name__}: {shown}{more}", errors=errors)
    return typed
