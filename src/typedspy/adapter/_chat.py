"""Signature + inputs (+ demos, history) to chat messages and request parameters, per mode.

The prompt is kept lean on purpose: the instruction, one line per field, and the output shape
only where the endpoint does not already receive the schema (ADR-005).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic.fields import FieldInfo

from typedspy.lm._base import ChatMessage, LMRequest
from typedspy.schema import CompiledSchema, compile_schema
from typedspy.signature import Signature, to_jsonable

__all__ = [
    "Mode",
    "build_request",
    "format_inputs",
    "format_outputs",
    "render_value",
    "with_history",
]

Mode = Literal["json_schema", "json_object", "prompt", "tools"]


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
    name = getattr(annotation, "__name__", None)
    text = name if isinstance(name, str) and not getattr(annotation, "__args__", None) else None
    return text or str(annotation).replace("typing.", "")


def format_inputs(sig: type[Signature], inputs: Mapping[str, Any]) -> str:
    """The user turn: each input in a tag named after its field."""
    fields = sig.input_fields
    parts = []
    for name, info in fields.items():
        if name in inputs:
            parts.append(f"<{name}>\n{render_value(inputs[name], info.annotation)}\n</{name}>")
    return "\n".join(parts)


def format_outputs(sig: type[Signature], outputs: Mapping[str, Any]) -> str:
    """Outputs as the JSON object the model is asked for (for demos and history)."""
    fields = sig.output_fields
    data = {n: to_jsonable(outputs[n], fields[n].annotation) for n in fields if n in outputs}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class _Prompt:
    system: str
    response_format: Mapping[str, Any] | None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: Mapping[str, Any] | None = None


def _system(sig: type[Signature], compiled: CompiledSchema, mode: Mode) -> str:
    inputs = "\n".join(_describe(n, i, False) for n, i in sig.input_fields.items())
    lines = [sig.instructions, ""]
    if inputs:
        lines += ["Inputs:", inputs]
    if mode == "json_schema" or mode == "tools":
        outputs = "\n".join(_describe(n, i, False) for n, i in sig.output_fields.items())
        lines += ["Outputs:", outputs]
    elif mode == "json_object":
        # JSON mode enforces only "some JSON": the schema itself must travel in the prompt.
        schema = json.dumps(compiled.schema, ensure_ascii=False, separators=(",", ":"))
        lines += [
            "Reply with one JSON object that matches this JSON schema, nothing else:",
            f"```json\n{schema}\n```",
        ]
    else:
        lines += [
            "Reply with one JSON object of this shape (types in place of values), nothing else:",
            compiled.shape,
        ]
    return "\n".join(lines)


def _prompt_for(sig: type[Signature], mode: Mode) -> _Prompt:
    strict = compile_schema(sig, "openai-strict")
    shaped = compile_schema(sig, "json-schema") if mode in ("json_object", "prompt") else strict
    system = _system(sig, shaped, mode)
    if mode == "json_schema":
        return _Prompt(system, strict.response_format)
    if mode == "json_object":
        return _Prompt(system, {"type": "json_object"})
    if mode == "prompt":
        return _Prompt(system, None)
    tool = {
        "type": "function",
        "function": {
            "name": strict.name,
            "description": sig.instructions,
            "parameters": strict.schema,
            "strict": True,
        },
    }
    return _Prompt(system, None, (tool,), {"type": "function", "function": {"name": strict.name}})


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
    demos: Sequence[Mapping[str, Any]] = (),
    history: Sequence[ChatMessage] = (),
    params: Mapping[str, Any] | None = None,
) -> LMRequest:
    """The first request of a call: system turn, demos, history, then the inputs.

    Args:
        sig: The signature.
        inputs: Validated inputs, by field name.
        mode: How the outputs are requested.
        demos: Few-shot examples, each a mapping holding input and output field values.
        history: Earlier turns of the conversation; a system message among them is appended
            to typedspy's system turn, which stays the only one and first.
        params: Request parameters (temperature, max_tokens, ...).
    """
    prompt = _prompt_for(sig, mode)
    system, turns = with_history(prompt.system, history)
    messages: list[ChatMessage] = [system]
    for demo in demos:
        messages.append({"role": "user", "content": format_inputs(sig, demo)})
        messages.append({"role": "assistant", "content": format_outputs(sig, demo)})
    messages.extend(turns)
    messages.append({"role": "user", "content": format_inputs(sig, inputs)})
    return LMRequest(
        messages=tuple(messages),
        response_format=prompt.response_format,
        tools=prompt.tools,
        tool_choice=prompt.tool_choice,
        parallel_tool_calls=False if prompt.tools else None,
        params=dict(params or {}),
    )
