"""A predictor's learnable state: demos checked when set; saved as JSON with a fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from typedspy.errors import ConfigurationError
from typedspy.parse import field_errors
from typedspy.schema import compile_schema
from typedspy.signature import Signature, to_jsonable

__all__ = [
    "checked_demos",
    "fingerprint",
    "jsonable_demo",
    "predictor_state",
    "read_predictor_state",
    "typed_demo",
]

_STATE_KEYS = ("signature", "fingerprint", "instructions", "demos")


def fingerprint(sig: type[Signature]) -> str:
    """A short digest of what a signature asks and answers (not its instructions).

    Saved state carries it, so state saved for one signature does not load into another that
    happens to share its class name. Inputs contribute their names and types, outputs the
    response schema without descriptions (the models' fields and types; rewording a field's
    description keeps saved demos valid).
    """
    shape = {
        "inputs": {n: repr(f.annotation) for n, f in sig.input_fields.items()},
        "outputs": _without_descriptions(compile_schema(sig).schema),
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
            output, or a value of the wrong type; the message names the demo and the field.
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
    inputs, outputs = sig.input_fields, sig.output_fields
    unknown = [k for k in demo if k not in inputs and k not in outputs]
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown field(s) {', '.join(map(repr, unknown))} "
            f"(inputs: {', '.join(inputs) or 'none'}; outputs: {', '.join(outputs)})"
        )
    if not any(k in outputs for k in demo):
        raise ConfigurationError(
            f"{where} shows no output: give at least one of {', '.join(outputs)}"
        )
    for model in (sig.input_model, sig.output_model):
        holder = model.model_construct()
        for name in model.model_fields:
            if name not in demo:
                continue
            try:
                model.__pydantic_validator__.validate_assignment(holder, name, demo[name])
            except ValidationError as exc:
                detail = "; ".join(str(e) for e in field_errors(exc)[:3])
                raise ConfigurationError(f"{where}: field {name!r}: {detail}") from exc
    return demo


def jsonable_demo(sig: type[Signature], demo: Mapping[str, Any]) -> dict[str, Any]:
    """A demo's values as the prompt shows them (union members carry ``_type``)."""
    fields = {**sig.input_fields, **sig.output_fields}
    return {
        k: to_jsonable(v, fields[k].annotation if k in fields else None) for k, v in demo.items()
    }


def typed_demo(sig: type[Signature], demo: Mapping[str, Any]) -> dict[str, Any]:
    """A saved demo's values validated back into typed values (models, union members, dates).

    Raises:
        ConfigurationError: A key that is no field, or a value that does not validate.
    """
    _checked_demo(sig, 0, demo)
    typed = dict(demo)
    for model, fields in (
        (sig.input_model, sig.input_fields),
        (sig.output_model, sig.output_fields),
    ):
        holder = model.model_construct()
        for name in fields:
            if name in demo:
                model.__pydantic_validator__.validate_assignment(holder, name, demo[name])
                typed[name] = getattr(holder, name)
    return typed


def predictor_state(
    sig: type[Signature], instructions: str, demos: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A predictor's instructions and demos, JSON-ready (see `Predict.dump_state`).

    The signature's name and fingerprint go with them, so state saved for another signature
    is refused when read back (`read_predictor_state`).
    """
    return {
        "signature": sig.__name__,
        "fingerprint": fingerprint(sig),
        "instructions": instructions,
        "demos": [jsonable_demo(sig, demo) for demo in demos],
    }


def read_predictor_state(
    sig: type[Signature], state: object, *, owner: object
) -> tuple[str | None, list[Mapping[str, Any]]]:
    """Check `predictor_state` output and type its demos: ``(instructions, demos)``.

    Args:
        sig: The signature of the predictor loading it.
        state: The saved state.
        owner: The predictor loading it (named in the messages).

    Raises:
        ConfigurationError: The state is not a predictor's, or is for another signature.
    """
    name = sig.__name__
    if not isinstance(state, Mapping) or not set(state) <= set(_STATE_KEYS):
        keys = sorted(state) if isinstance(state, Mapping) else type(state).__name__
        raise ConfigurationError(
            f"state for {owner!r} must hold {', '.join(_STATE_KEYS)}, not {keys} "
            "(was it saved from a module with several predictors?)"
        )
    if state.get("signature", name) != name:
        raise ConfigurationError(
            f"state saved for signature {state['signature']} cannot load into {owner!r}"
        )
    saved = state.get("fingerprint")
    if saved is not None and saved != fingerprint(sig):
        raise ConfigurationError(
            f"state saved for another {name} (its fields or types differ: fingerprint "
            f"{saved}, this one's {fingerprint(sig)}) cannot load into {owner!r}"
        )
    demos = state.get("demos", [])
    if not isinstance(demos, list) or not all(isinstance(d, Mapping) for d in demos):
        raise ConfigurationError(f"state for {owner!r}: demos must be a list of objects")
    instructions = state.get("instructions")
    return (
        None if instructions is None else str(instructions),
        [typed_demo(sig, demo) for demo in demos],
    )
