"""Builders for OpenAI Chat Completions wire bodies: completions, stream chunks, errors, SSE.

Tests hand these to respx routes and the stand-in server sends them over its socket. The
shapes are the ones ``openai.types.chat.ChatCompletion`` / ``ChatCompletionChunk`` accept.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Outcome",
    "chat_chunk",
    "chat_completion",
    "completion_chunks",
    "error_body",
    "requested_schema",
    "sse_body",
    "sse_event",
    "tool_call",
    "usage_for",
]

# Ids only need to be unique within a process; a counter keeps them readable in failures.
_ids = itertools.count(1)


@dataclass(frozen=True)
class Outcome:
    """An answer to send: status, JSON body, extra headers, and SSE chunks when streaming."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] | None = None


def _next_id(prefix: str) -> str:
    return f"{prefix}{next(_ids):06d}"


def usage_for(completion_text: str, prompt_tokens: int = 0) -> dict[str, int]:
    """A plausible ``usage`` block: about four characters per token, at least one token.

    Args:
        completion_text: What the assistant produced (content, refusal or tool arguments).
        prompt_tokens: Tokens to report for the prompt.

    Returns:
        ``{"prompt_tokens", "completion_tokens", "total_tokens"}``.
    """
    completion = max(1, len(completion_text) // 4)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }


def tool_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """Expand ``{"name", "arguments", "id"?}`` into OpenAI's tool-call shape.

    Args:
        call: The short form; ``arguments`` may be a JSON string or a dict (serialised
            compactly). A mapping that already has ``"function"`` is returned as a copy.

    Returns:
        ``{"id", "type": "function", "function": {"name", "arguments"}}``.
    """
    if "function" in call:
        return dict(call)
    arguments = call.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, separators=(",", ":"))
    return {
        "id": call.get("id") or _next_id("call_standin_"),
        "type": "function",
        "function": {"name": call["name"], "arguments": arguments},
    }


def chat_completion(
    content: str | None = None,
    *,
    refusal: str | None = None,
    finish_reason: str = "stop",
    tool_calls: Sequence[Mapping[str, Any]] | None = None,
    model: str = "standin-1",
    usage: Mapping[str, int] | None = None,
    id: str | None = None,  # named after the wire field
    reasoning_content: str | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` body with one choice.

    Args:
        content: The assistant's text, or None (refusals and tool calls).
        refusal: A refusal message; OpenAI sends it with ``content`` null.
        finish_reason: ``stop``, ``length``, ``tool_calls``, ``content_filter`` ...
        tool_calls: Calls as ``{"name", "arguments", "id"?}`` (see :func:`tool_call`).
        model: The model name to report.
        usage: Token counts; ``total_tokens`` is filled in when missing. Defaults to an
            estimate from the produced text.
        id: The completion id; generated when omitted.
        reasoning_content: Reasoning sent apart from the content, as llama.cpp, vLLM and
            DeepSeek do.

    Returns:
        The JSON body as a dict.
    """
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if reasoning_content is not None:
        message["reasoning_content"] = reasoning_content
    calls = [tool_call(c) for c in tool_calls or ()]
    if calls:
        message["tool_calls"] = calls
    produced = content or refusal or "".join(c["function"]["arguments"] for c in calls)
    return {
        "id": id or _next_id("chatcmpl-standin-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason, "logprobs": None}
        ],
        "usage": _full_usage(usage) if usage is not None else usage_for(produced),
    }


def chat_chunk(
    content: str | None = None,
    *,
    role: str | None = None,
    refusal: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] | None = None,
    finish_reason: str | None = None,
    usage: Mapping[str, int] | None = None,
    model: str = "standin-1",
    id: str = "chatcmpl-standin",  # named after the wire field
    created: int | None = None,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``, as sent in a ``data:`` line of a stream.

    Only the delta fields that are given appear. With ``usage`` and no delta or finish
    reason it is the usage-only chunk that ends a stream with ``include_usage`` (empty
    ``choices``).

    Args:
        content: A piece of the content.
        role: ``"assistant"`` in the first chunk of a stream.
        refusal: A piece of a refusal.
        tool_calls: Tool-call pieces: ``{"index", "id"?, "name"?, "arguments"?}``; the first
            piece of a call carries ``id`` and ``name``. Mappings with ``"function"`` pass
            through unchanged.
        finish_reason: Set on the last choice-carrying chunk.
        usage: Token counts for the final usage chunk.
        model: The model name to report.
        id: The completion id; every chunk of one stream shares it.
        created: Unix time; now when omitted.

    Returns:
        The chunk as a dict.
    """
    given = {"role": role, "content": content, "refusal": refusal}
    delta: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    if tool_calls:
        delta["tool_calls"] = [_tool_call_delta(piece) for piece in tool_calls]
    chunk: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [],
    }
    if delta or finish_reason is not None or usage is None:
        chunk["choices"] = [
            {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        ]
    if usage is not None:
        chunk["usage"] = _full_usage(usage)
    return chunk


def error_body(
    message: str,
    *,
    type: str = "invalid_request_error",  # named after the wire field
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """An OpenAI error body, ``{"error": {"message", "type", "param", "code"}}``.

    Args:
        message: The human-readable message.
        type: ``invalid_request_error``, ``rate_limit_error``, ``server_error`` ...
        param: The request parameter at fault, if any.
        code: A machine-readable code such as ``invalid_json_schema``.

    Returns:
        The JSON body as a dict.
    """
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def requested_schema(req: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON Schema a request's ``response_format`` asks for (``None`` without one)."""
    fmt = req.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    return schema if isinstance(schema, dict) else None


def sse_event(chunk: Mapping[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>`` and a blank line.

    Args:
        chunk: A chunk dict, or a raw string such as ``"[DONE]"``.

    Returns:
        The encoded event.
    """
    data = chunk if isinstance(chunk, str) else json.dumps(chunk, separators=(",", ":"))
    return f"data: {data}\n\n".encode()


def sse_body(chunks: Iterable[Mapping[str, Any]]) -> bytes:
    """A whole ``text/event-stream`` body: one event per chunk, then ``data: [DONE]``.

    Args:
        chunks: The chunks, in order.

    Returns:
        The encoded body.
    """
    return b"".join(sse_event(c) for c in chunks) + sse_event("[DONE]")


def _tool_call_delta(piece: Mapping[str, Any]) -> dict[str, Any]:
    if "function" in piece:
        return dict(piece)
    out: dict[str, Any] = {"index": piece.get("index", 0)}
    if "id" in piece:
        out |= {"id": piece["id"], "type": "function"}
    function = {key: piece[key] for key in ("name", "arguments") if key in piece}
    if function:
        out["function"] = function
    return out


def _full_usage(usage: Mapping[str, int]) -> dict[str, int]:
    out = {"prompt_tokens": 0, "completion_tokens": 0, **usage}
    out.setdefault("total_tokens", out["prompt_tokens"] + out["completion_tokens"])
    return out


_PIECE = 8  # characters per streamed delta


def completion_chunks(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """Split a ``chat.completion`` body into the chunks OpenAI would stream for it.

    Args:
        completion: A body shaped like :func:`chat_completion`'s.
        include_usage: Add the usage-only chunk (and ``usage: null`` on the others), as
            ``stream_options.include_usage`` asks.

    Returns:
        The chunks: role, content/refusal/tool-call pieces, finish reason, then usage.
        A body that is not a completion is sent as a single chunk.
    """
    try:
        choice = completion["choices"][0]
        message = choice["message"]
        common: dict[str, Any] = {
            "model": completion.get("model", "standin-1"),
            "id": completion.get("id", "chatcmpl-standin"),
            "created": completion.get("created"),
        }
    except (KeyError, IndexError, TypeError, AttributeError):
        return [completion]
    content, refusal = message.get("content"), message.get("refusal")
    chunks = [chat_chunk(role="assistant", content="" if content is not None else None, **common)]
    chunks += [chat_chunk(content=p, **common) for p in _pieces(content)]
    chunks += [chat_chunk(refusal=p, **common) for p in _pieces(refusal)]
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function", {})
        head = {"index": index, "id": call.get("id"), "name": function.get("name"), "arguments": ""}
        chunks.append(chat_chunk(tool_calls=[head], **common))
        chunks += [
            chat_chunk(tool_calls=[{"index": index, "arguments": p}], **common)
            for p in _pieces(function.get("arguments"))
        ]
    chunks.append(chat_chunk(finish_reason=choice.get("finish_reason") or "stop", **common))
    if include_usage:
        for chunk in chunks:
            chunk["usage"] = None
        chunks.append(chat_chunk(usage=completion.get("usage") or usage_for(""), **common))
    return chunks


def _pieces(text: object) -> list[str]:
    if not isinstance(text, str):
        return []
    return [text[i : i + _PIECE] for i in range(0, len(text), _PIECE)]
