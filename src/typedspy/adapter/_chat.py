"""Signature + inputs (+ demos, history) to chat messages and request parameters, per mode.

The prompt is kept lean on purpose: the instruction, inputs only where they are described, and
the output shape only where the profile says the model does not see the schema (ADR-005,
ADR-016). Schema target, wire format and token cap come from the LM's `Profile`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic.fields import FieldInfo

from typedspy.adapter._parts import user_content
from typedspy.errors import InputError
from typedspy.lm import ChatMessage, LMRequest
from typedspy.profiles import Mode, Profile
from typedspy.schema import CompiledSchema, compile_schema
from typedspy.signature import Signature, to_jsonable, unsendable

__all__ = [
    "Mode",
    "build_request",
    "draft_request",
    "format_inputs",
    "format_outputs",
    "output_schema",
    "render_value",
    "with_history",
    "written_as_outputs",
]


def render_value(value: Any, annotation: Any = None) -> str:
    """A value as the model should read it: strings verbatim, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(to_jsonable(value, annotation), ensure_ascii=False, separators=(",", ":"))


def _describe(name: str, info: FieldInfo, with_type: bool) -> str:
    line = f"- {name}"
    if with_type and info.annotation is not None:
        line += f" ({_type_name(info.annotation)})"
    if info.description:
        line += f": {info.description}"
    return line


def _type_name(annotation: Any) -> str:
    """A type as a reader writes it: ``SpawnTask | Continue``, ``list[int]``, ``'low' | 'high'``."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin is Annotated:
        return _type_name(args[0])
    if annotation is type(None):
        return "None"
    if origin is not None:
        inner = ", ".join(_type_name(a) for a in args)
        return f"{_type_name(origin)}[{inner}]" if args else _type_name(origin)
    name = getattr(annotation, "__name__", None)
    return name if isinstance(name, str) else str(annotation).replace("typing.", "")


def format_inputs(sig: type[Signature], inputs: Mapping[str, Any]) -> str:
    """The user turn: each input in a tag named after its field.

    Raises:
        InputError: An input JSON cannot write (it contains itself, an ``object()``, bytes that
            are not UTF-8), named; nothing is sent.
    """
    fields = sig.input_fields
    parts = []
    for name, info in fields.items():
        if name in inputs:
            try:
                text = render_value(inputs[name], info.annotation)
            except (TypeError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
                why = unsendable(inputs[name], info.annotation)
                raise InputError(f"{sig.__name__}: input {name!r} cannot be sent: {why}") from exc
            parts.append(f"<{name}>\n{text}\n</{name}>")
    return "\n".join(parts)


def _user(
    sig: type[Signature], inputs: Mapping[str, Any], profile: Profile
) -> str | list[dict[str, Any]]:
    return user_content(sig, inputs, profile, format_inputs(sig, inputs))


def format_outputs(sig: type[Signature], outputs: Mapping[str, Any]) -> str:
    """Outputs as the JSON object the model is asked for (for demos and history)."""
    fields = sig.output_fields
    data = {n: to_jsonable(outputs[n], fields[n].annotation) for n in fields if n in outputs}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def field_section(title: str, fields: Mapping[str, FieldInfo]) -> list[str]:
    """``title`` and a ``- name: description`` line per field; nothing for no fields."""
    return [title, *(_describe(n, i, False) for n, i in fields.items())] if fields else []


def _system(sig: type[Signature], compiled: CompiledSchema, mode: Mode, profile: Profile) -> str:
    """Instruction, then only what the endpoint does not already carry (ADR-005, ADR-016).

    Inputs arrive tagged by name in the user turn, so they are listed only when one has a
    description. Outputs are described only where the schema does not reach the model: an
    enforced schema carries their names, types and descriptions itself.
    """
    lines = [sig.instructions]
    if any(i.description for i in sig.input_fields.values()):
        lines += ["", *field_section("Inputs:", sig.input_fields)]
    if not profile.hint_schema(mode):
        return "\n".join(lines)
    if mode == "json_object" and not profile.json_object_schema:
        # JSON mode enforces only "some JSON": the schema itself must travel in the prompt.
        schema = json.dumps(compiled.schema, ensure_ascii=False, separators=(",", ":"))
        lines += [
            "",
            "Reply with one JSON object that matches this JSON schema, nothing else:",
            f"```json\n{schema}\n```",
        ]
    else:
        lines += [
            "",
            "Reply with one JSON object of this shape (types in place of values), nothing else:",
            compiled.shape,
        ]
    return "\n".join(lines)


def output_schema(sig: type[Signature], mode: Mode, profile: Profile) -> CompiledSchema:
    """The schema a call in ``mode`` sends (or hints), compiled for the profile's target.

    Raises:
        SchemaError: The outputs cannot be expressed in that target (for example
            ``dict[str, Any]`` under the strict subset).
    """
    return compile_schema(sig, profile.target_for(mode))


def function_tool(name: str, description: str, compiled: CompiledSchema) -> dict[str, Any]:
    """A strict function whose parameters are ``compiled``: ``tools`` mode's, ReAct's ``finish``."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": compiled.schema,
            "strict": compiled.strict,
        },
    }


def with_history(
    system: str, history: Sequence[ChatMessage]
) -> tuple[ChatMessage, list[ChatMessage]]:
    """Typedspy's system turn joined with a conversation's own, and the other turns.

    A conversation's system prompt (`History.messages` puts it first) joins typedspy's system
    turn: one system message, always first, never one in the middle of the turns.
    """
    extra = [str(m.get("content") or "") for m in history if m.get("role") == "system"]
    content = "\n\n".join([system, *(text for text in extra if text)])
    turns = [m for m in history if m.get("role") != "system"]
    return {"role": "system", "content": content}, turns


def build_request(
    sig: type[Signature],
    inputs: Mapping[str, Any],
    *,
    mode: Mode,
    profile: Profile | None = None,
    demos: Sequence[Mapping[str, Any]] = (),
    history: Sequence[ChatMessage] = (),
    params: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> LMRequest:
    """The first request of a call: system turn, demos, history, then the inputs.

    Args:
        sig: The signature.
        inputs: Validated inputs, by field name.
        mode: How the outputs are requested.
        profile: The endpoint's profile (schema target, wire format, hints, token cap);
            the ``openai`` profile when not given.
        demos: Few-shot examples, each a mapping holding input and output field values.
        history: Earlier turns of the conversation; a system message among them is appended
            to typedspy's system turn, which stays the only one and first.
        params: Request parameters (temperature, max_tokens, ...).
        defaults: The request defaults of the LM the request goes to (`BaseLM.defaults`):
            a cap there keeps the profile's ``max_tokens`` cap off, as one in ``params`` does.

    Raises:
        MediaNotSupportedError: A media input of a kind the profile does not take.
    """
    profile = profile if profile is not None else Profile.named("openai")
    compiled = output_schema(sig, mode, profile)
    system = _system(sig, compiled, mode, profile)
    messages = _conversation(sig, system, history, demos, inputs, profile, answer=format_outputs)
    params = profile.structured_params(params or {}, defaults=defaults or {})
    if mode != "tools":
        rf = profile.response_format(mode, compiled.name, compiled.schema, compiled.strict)
        return LMRequest(messages=messages, response_format=rf, params=params)
    return LMRequest(
        messages=messages,
        tools=(function_tool(compiled.name, sig.instructions, compiled),),
        tool_choice={"type": "function", "function": {"name": compiled.name}},
        parallel_tool_calls=profile.parallel_tool_calls,
        params=params,
    )


def _conversation(
    sig: type[Signature],
    system_text: str,
    history: Sequence[ChatMessage],
    demos: Sequence[Mapping[str, Any]],
    inputs: Mapping[str, Any],
    profile: Profile,
    *,
    answer: Callable[[type[Signature], Mapping[str, Any]], str],
) -> tuple[ChatMessage, ...]:
    """The turns of a request: system, demos, history, inputs.

    Each demo is a user/assistant pair whose outputs ``answer`` writes.
    """
    system, turns = with_history(system_text, history)
    messages: list[ChatMessage] = [system]
    for demo in demos:
        messages.append({"role": "user", "content": _user(sig, demo, profile)})
        messages.append({"role": "assistant", "content": answer(sig, demo)})
    messages.extend(turns)
    messages.append({"role": "user", "content": _user(sig, inputs, profile)})
    return tuple(messages)


def draft_request(
    sig: type[Signature],
    inputs: Mapping[str, Any],
    *,
    profile: Profile,
    demos: Sequence[Mapping[str, Any]] = (),
    history: Sequence[ChatMessage] = (),
    params: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> LMRequest:
    """The first request of a ``think_then_format`` call: a free answer, no format asked (ADR-086).

    The system turn is the instruction, the described inputs and what the answer must give
    (each output's name, type and description), in plain words: no schema, no shape, no
    ``response_format``. Demos answer in ``name: value`` lines. The profile's token cap applies
    as to a structured request (`Profile.structured_params`).

    Raises:
        MediaNotSupportedError: A media input of a kind the profile does not take.
    """
    lines = [sig.instructions]
    if any(i.description for i in sig.input_fields.values()):
        lines += ["", *field_section("Inputs:", sig.input_fields)]
    lines += [
        "",
        "Answer in your own words; your answer must give:",
        *(_describe(n, i, True) for n, i in sig.output_fields.items()),
    ]
    messages = _conversation(
        sig, "\n".join(lines), history, demos, inputs, profile, answer=_plain_outputs
    )
    return LMRequest(
        messages=messages,
        params=profile.structured_params(params or {}, defaults=defaults or {}),
    )


def _plain_outputs(sig: type[Signature], outputs: Mapping[str, Any]) -> str:
    fields = sig.output_fields
    return "\n".join(
        f"{n}: {render_value(outputs[n], fields[n].annotation)}" for n in fields if n in outputs
    )


_WRITE_AS_OUTPUTS = (
    "Now give the answer you wrote above as the output asked for: the same values, nothing "
    "added, nothing else."
)


def written_as_outputs(draft: str) -> tuple[ChatMessage, ChatMessage]:
    """The turns a ``think_then_format`` call's second request ends with (ADR-086).

    The free answer as the assistant's turn, then the request to write it as the outputs; the
    request before them is the call's usual structured one, so its schema does the rest.
    """
    return (
        {"role": "assistant", "content": draft},
        {"role": "user", "content": _WRITE_AS_OUTPUTS},
    )
