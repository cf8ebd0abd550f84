"""OpenAI chat messages in the GenAI conventions' ``parts`` format (ADR-079).

``gen_ai.input.messages`` and ``gen_ai.output.messages`` hold ``{"role", "parts": [...]}``
objects: text as ``{"type": "text", "content": ...}``, a tool call as ``{"type": "tool_call",
"id", "name", "arguments"}`` with the arguments decoded from the JSON text the model wrote (not
a JSON string inside JSON), a tool result as ``{"type": "tool_call_response", "id",
"response"}`` with the text the model read. A system message stays in the input messages with
the role ``system``: Chat Completions sends it in the history, where the conventions want it
(``gen_ai.system_instructions`` is for instructions an API takes apart from the history).

Everything here reads plain JSON-ready dicts and never raises on an odd shape: what it cannot
read is passed on as it is, for `typedspy.tracing` to render defensively.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from typedspy._json import loads as bounded_loads

__all__ = ["FINISH_REASONS", "input_messages", "output_messages"]

FINISH_REASONS = {"tool_calls": "tool_call", "function_call": "tool_call"}
"""OpenAI's finish reasons whose name the conventions spell differently; the others match."""


def input_messages(messages: object) -> list[Any]:
    """The request's messages, each as ``{"role", "parts"}`` (and ``name`` when it has one)."""
    items = _items(messages)
    return [messages] if items is None else [_message(m) for m in items]


def output_messages(choices: object) -> list[Any]:
    """A completion's choices, each as ``{"role", "parts", "finish_reason"}``."""
    out: list[Any] = []
    for item in _items(choices) or []:
        choice = _mapping(item)
        if choice is None:
            continue
        message = _message(choice.get("message") or {"role": "assistant"})
        reason = choice.get("finish_reason")
        message["finish_reason"] = FINISH_REASONS.get(reason, reason) if reason else "error"
        out.append(message)
    return out


def _mapping(value: object) -> Mapping[str, Any] | None:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else None


def _items(value: object) -> list[Any] | None:
    return list(cast("list[Any]", value)) if isinstance(value, (list, tuple)) else None


def _message(value: object) -> dict[str, Any]:
    message = _mapping(value)
    if message is None:
        return {"role": "user", "parts": [_text(value)]}
    role = message.get("role", "user")
    parts: list[Any] = []
    for key in ("reasoning_content", "reasoning"):  # a server's reasoning, apart from content
        if isinstance(message.get(key), str) and message[key]:
            parts.append({"type": "reasoning", "content": message[key]})
            break
    content = message.get("content")
    if role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.get("tool_call_id"), "response": content}
        )
    elif (items := _items(content)) is not None:
        parts.extend(_content_part(p) for p in items)
    elif content is not None and content != "":
        parts.append(_text(content))
    if message.get("refusal"):
        parts.append({"type": "refusal", "content": message["refusal"]})
    parts.extend(_tool_call(c) for c in _items(message.get("tool_calls")) or [])
    out: dict[str, Any] = {"role": role, "parts": parts}
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    return out


def _text(content: object) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _tool_call(value: object) -> Any:
    call = _mapping(value)
    if call is None:
        return value
    function = _mapping(call.get("function")) or {}
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": function.get("name"),
        "arguments": _decoded(function.get("arguments")),
    }


def _decoded(arguments: object) -> object:
    """Tool-call arguments as the object the model's JSON text spells (the text if it is none).

    The nesting is bounded (the model wrote it).
    """
    if not isinstance(arguments, str):
        return arguments
    try:
        return bounded_loads(arguments)
    except ValueError:
        return arguments


def _content_part(value: object) -> Any:
    """One OpenAI content part: text, an image, audio, a file; any other passed on as it is."""
    part = _mapping(value)
    if part is None:
        return _text(value)
    kind = part.get("type")
    image, audio, file = (_mapping(part.get(k)) for k in ("image_url", "input_audio", "file"))
    if kind == "text":
        return _text(part.get("text"))
    if kind == "image_url" and image is not None:
        return _media("image", image.get("url"))
    if kind == "input_audio" and audio is not None:
        mime = f"audio/{audio['format']}" if audio.get("format") else None
        return {
            "type": "blob",
            "modality": "audio",
            "mime_type": mime,
            "content": audio.get("data"),
        }
    if kind == "file" and file is not None:
        if file.get("file_id") is not None:
            return {"type": "file", "file_id": file["file_id"]}
        return _media(None, file.get("file_data"))
    return part


def _media(modality: str | None, url: object) -> dict[str, Any]:
    """A data URL as a ``blob`` part (base64 content), any other URL as a ``uri`` part."""
    if isinstance(url, str) and url.startswith("data:"):
        header, _, data = url.partition(",")
        mime = header[5:].split(";")[0] or None
        modality = modality or (mime.split("/")[0] if mime else None)
        return {"type": "blob", "modality": modality, "mime_type": mime, "content": data}
    return {"type": "uri", "modality": modality, "uri": url}
