"""A predictor's learnable state: demos checked when set or loaded; saved with a fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from typedspy._types import FieldError
from typedspy.errors import ConfigurationError, SavedStateError
from typedspy.parse import field_value
from typedspy.program import PredictorState, listed, too_deep, under
from typedspy.schema import compile_schema
from typedspy.signature import (
    FieldTexts,
    Signature,
    texts_errors,
    texts_of,
    to_jsonable_fields,
    unsendable,
)

__all__ = [
    "checked_demos",
    "demo_errors",
    "fingerprint",
    "jsonable_demo",
    "predictor_state",
    "read_predictor_state",
    "typed_demo",
]


def fingerprint(sig: type[Signature]) -> str:
    """A short digest of what a signature asks and answers (not its instructions).

    Saved state carries it, so state saved for one signature does not load into another that
    happens to share its class name. Inputs contribute their names and types, outputs the
    response schema without descriptions (the models' fields and types; rewording a field's
    description keeps saved demos valid). The schema is the plain JSON Schema target's, which
    every signature compiles to: a program for an endpoint that takes open objects saves too.
    """
    shape = {
        "inputs": {n: repr(f.annotation) for n, f in sig.input_fields.items()},
        "outputs": _without_descriptions(compile_schema(sig, "json-schema").schema),
    }
    text = json.dumps(shape, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _without_descriptions(node: Any, *, names: bool = False) -> Any:
    """``node`` without ``description`` keywords (``names``: a map whose keys are fields)."""
    if isinstance(node, dict):
        return {
            k: _without_descriptions(v, names=k in ("properties", "$defs") and not names)
            for k, v in node.items()
            if names or k != "description"
        }
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def checked_demos(sig: type[Signature], demos: object) -> list[Mapping[str, Any]]:
    """``demos`` as a list, each checked against ``sig``.

    A demo is a mapping of field names to values: every key names an input or output field,
    at least one output is shown, and each value validates against its field's type.

    Raises:
        ConfigurationError: Not a sequence of mappings, an unknown key, a demo with no
            output, a value of the wrong type or one JSON cannot write; the message names the
            demo and the field.
    """
    if isinstance(demos, (str, bytes, Mapping)) or not isinstance(demos, Sequence):
        raise ConfigurationError(
            f"{sig.__name__}: demos must be a list of mappings, not {type(demos).__name__}"
        )
    return [_checked_demo(sig, i, demo) for i, demo in enumerate(demos)]


def _checked_demo(sig: type[Signature], index: int, demo: object) -> Mapping[str, Any]:
    where = f"{sig.__name__} demo {index}"
    if not isinstance(demo, Mapping):
        raise ConfigurationError(f"{where} must be a mapping, not {type(demo).__name__}")
    problems = _typed(sig, demo)[1]
    if problems:
        raise ConfigurationError(f"{where}: {listed(problems, 3)}")
    return demo


def demo_errors(sig: type[Signature], demo: Mapping[str, Any]) -> list[FieldError]:
    """What is wrong with ``demo`` as a demo of ``sig`` (paths start at the field name).

    Every key must name an input or output field, at least one output must be shown, and each
    value must validate against its field's type and be one JSON can write (not an ``object()``,
    nor a value that contains itself). Empty when the demo fits.
    """
    return _typed(sig, demo)[1]


def _typed(
    sig: type[Signature], demo: Mapping[str, Any]
) -> tuple[dict[str, Any], list[FieldError]]:
    """``demo`` with its values validated into typed values, and what is wrong with it."""
    inputs, outputs = sig.input_fields, sig.output_fields
    unknown = [k for k in demo if k not in inputs and k not in outputs]
    if unknown:
        fields = f"inputs: {', '.join(inputs) or 'none'}; outputs: {', '.join(outputs)}"
        return dict(demo), [
            FieldError((k,), f"unknown field of {sig.__name__} ({fields})") for k in unknown
        ]
    if not any(k in outputs for k in demo):
        problem = f"shows no output: give at least one of {', '.join(outputs)}"
        return dict(demo), [FieldError((), problem)]
    typed, problems = dict(demo), []
    for model, declared in (
        (sig.input_model, sig.input_fields),
        (sig.output_model, sig.output_fields),
    ):
        for name in model.model_fields:
            if name not in demo:
                continue
            annotation = declared[name].annotation
            value, wrong = field_value(model, name, demo[name], annotation)
            unwritable = None if wrong else unsendable(value, annotation)
            if unwritable:
                wrong = [FieldError((name,), f"cannot be sent: {unwritable}")]
            problems += wrong
            if not wrong:
                typed[name] = value
    return typed, problems


def jsonable_demo(sig: type[Signature], demo: Mapping[str, Any]) -> dict[str, Any]:
    """A demo's values as the prompt shows them (union members carry ``_type``)."""
    return to_jsonable_fields(demo, {**sig.input_fields, **sig.output_fields})


def typed_demo(sig: type[Signature], demo: Mapping[str, Any]) -> dict[str, Any]:
    """A saved demo's values validated back into typed values (models, union members, dates).

    Raises:
        ConfigurationError: A key that is no field, or a value that does not validate.
    """
    typed, problems = _typed(sig, demo)
    if problems:
        raise ConfigurationError(f"{sig.__name__} demo: {listed(problems, 3)}")
    return typed


def predictor_state(
    sig: type[Signature], instructions: str, demos: Sequence[Mapping[str, Any]]
) -> PredictorState:
    """A predictor's instructions and demos as its saved state (see `Module.dump_state`).

    The signature's name and fingerprint go with them, so state saved for another signature
    is refused when read back (`read_predictor_state`).

    Raises:
        SavedStateError: Demo values nested deeper than a saved program may be.
    """
    values = [jsonable_demo(sig, demo) for demo in demos]
    problem = too_deep(values, level=3)  # in the file: {"predictors": {path: {"demos": [...]}}}
    if problem:
        raise SavedStateError(problem.message, errors=[FieldError(("demos",), problem.message)])
    texts = None
    if sig.__typedspy_worded__:  # made by `with_texts`: its words go with the state
        said = texts_of(sig)
        texts = FieldTexts(inputs=said.inputs, outputs=said.outputs, members=said.members)
    return PredictorState(
        signature=sig.__name__,
        fingerprint=fingerprint(sig),
        instructions=instructions,
        demos=values,
        texts=texts,
    )


def read_predictor_state(
    sig: type[Signature], state: PredictorState
) -> tuple[str, list[Mapping[str, Any]], FieldTexts | None]:
    """Check saved state against ``sig`` and type its demos: ``(instructions, demos, texts)``.

    Raises:
        SavedStateError: The state is for another signature (its name or its fingerprint
            differs), or a demo does not fit ``sig``; ``errors`` has every problem, with paths
            from the predictor's state (``demos[0].result.low``).
    """
    name, this = sig.__name__, fingerprint(sig)
    if state.signature != name:
        problem = f"saved for signature {state.signature}, this predictor's is {name}"
        raise SavedStateError(problem, errors=[FieldError(("signature",), problem)])
    if state.fingerprint != this:
        problem = (
            f"saved for another {name} (its fields or types differ): fingerprint "
            f"{state.fingerprint}, this one's {this}"
        )
        raise SavedStateError(problem, errors=[FieldError(("fingerprint",), problem)])
    demos: list[Mapping[str, Any]] = []
    problems: list[FieldError] = []
    for i, demo in enumerate(state.demos):
        typed, errors = _typed(sig, demo)
        demos.append(typed)
        problems += under(("demos", i), errors)
    if state.texts is not None:
        problems += under(("texts",), texts_errors(sig, state.texts))
    if problems:
        raise SavedStateError(listed(problems), errors=problems)
    return state.instructions, demos, state.texts
