"""`Returns[T]`: a signature whose one output is a root-level type (``A | B``, ``list[Item]``).

The wire keeps an object root (OpenAI strict requires one): the value travels as the property
``output`` of the response object, and `Prediction.outputs.output` has the type ``T`` (ADR-045).
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from typedspy.errors import SchemaError
from typedspy.signature._fields import InputField, OutputField
from typedspy.signature._parse import make_signature
from typedspy.signature._signature import Signature, build_signature

__all__ = ["OUTPUT_FIELD", "Returns", "returns_signature"]

OutT = TypeVar("OutT")

OUTPUT_FIELD = "output"
"""The name of `Returns`' one output, the property that carries the value on the wire."""


class Returns(Signature, Generic[OutT]):
    """A signature whose single output ``output`` has the type ``OutT``: a root-level output.

    Subclass a parametrization and add inputs; ``pred.outputs.output`` then has the declared
    type under mypy and pyright, unions included. `Predict` also builds one from
    ``output=``.

    Example:
        ```python
        class Route(ts.Returns[SpawnTask | CompleteTask | Continue]):
            \"\"\"Decide the agent's next action.\"\"\"

            task: str = ts.InputField()

        pred = ts.Predict(Route)(task="Ship the release")
        pred.outputs.output  # SpawnTask | CompleteTask | Continue
        ```
    """

    __typedspy_template__: ClassVar[bool] = True

    output: OutT = OutputField()


def returns_signature(inputs: str, output: Any) -> type[Signature]:
    """A `Returns` subclass with the string's inputs and ``output`` as its one output's type.

    Args:
        inputs: The input fields as in `make_signature`, without ``->``: ``"text, lang"``.
        output: The output's type: a model, ``list[Item]``, ``A | B``, ``int``...

    Raises:
        SchemaError: ``inputs`` holds ``->``, or ``output`` is a signature or not a type.
    """
    if "->" in inputs:
        raise SchemaError(
            f"with output=, the signature string names only the inputs ({inputs!r}); the "
            f"output is the field {OUTPUT_FIELD!r}"
        )
    if isinstance(output, type) and issubclass(output, Signature):
        raise SchemaError(
            f"output={output.__name__} is a ts.Signature; pass it as the signature instead"
        )
    if output is None or isinstance(output, (str, int, float, BaseModel)):
        raise SchemaError(f"output= takes a type such as list[Item] or A | B, not {output!r}")
    parsed = make_signature(f"{inputs} -> {OUTPUT_FIELD}")
    fields = {name: (info.annotation, InputField()) for name, info in parsed.input_fields.items()}
    name = parsed.__name__
    return build_signature(name, fields, {}, None, base=Returns[output])
