"""What goes to a language model and what comes back: OpenAI-shaped requests and responses.

Messages are plain dicts in the OpenAI chat format (ADR: OpenAI-shaped dicts are the message
type), so any OpenAI-compatible endpoint, and any `BaseLM`, speaks the same language.
`LMResponse.from_completion` reads a chat-completion body leniently. Nothing here imports
`openai`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from typedspy._types import Usage
from typedspy.errors import LMResponseError

__all__ = ["ChatMessage", "EmbeddingResponse", "LMRequest", "LMResponse", "ToolCall"]

ChatMessage = dict[str, Any]
"""One message in the OpenAI chat format: ``{"role": "user", "content": "..."}``, an assistant
message with ``tool_calls``, or a ``{"role": "tool", "tool_call_id": ..., "content": ...}``."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        id: The call id, to be echoed in the ``tool`` message that answers it.
        name: The function name.
        arguments: The arguments exactly as the model wrote them (JSON text, not yet parsed).
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class EmbeddingResponse:
    """One ``/v1/embeddings`` reply: a vector per text, and what it cost.

    Attributes:
        vectors: One vector per text, in the order the texts were sent.
        usage: Token counts reported by the endpoint (zeros when it reported none).
        model: The embedding model that was asked.
        headers: The rate-limit headers of the HTTP response, lower-cased.
    """

    vectors: list[list[float]]
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LMRequest:
    """One chat-completion request, independent of any SDK.

    Attributes:
        messages: The conversation so far.
        response_format: Sent as is (e.g. ``{"type": "json_schema", "json_schema": {...}}``).
        tools: Function tools in the OpenAI format.
        tool_choice: ``"auto"``, ``"required"``, ``"none"`` or a named function.
        parallel_tool_calls: Sent only when there are tools and this is not ``None``.
        params: Sampling and other request parameters (``temperature``, ``max_tokens``,
            ``seed``, ...), merged over the LM's defaults.
    """

    messages: tuple[ChatMessage, ...]
    response_format: Mapping[str, Any] | None = None
    tools: tuple[Mapping[str, Any], ...] = ()
    tool_choice: str | Mapping[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LMResponse:
    """The parts of a chat completion that typedspy uses, plus the completion itself.

    Attributes:
        text: The message content (``None`` when the model sent none, e.g. only tool calls).
        refusal: The model's refusal text, if it refused (``""`` is normalised to ``None``).
        finish_reason: ``"stop"``, ``"length"``, ``"tool_calls"``, ``"content_filter"``, ...
            (``""`` is normalised to ``None``).
        tool_calls: The tool calls of the message, in order.
        usage: Token counts reported by the endpoint (zeros when it reported none).
        model: The model that answered, as the endpoint names it.
        raw: The whole completion as a JSON-ready dict.
        headers: The rate-limit headers of the HTTP response (``retry-after``,
            ``x-ratelimit-*``), lower-cased; empty when there was no HTTP response.
        reasoning: The model's reasoning, where the server sends it apart from the content
            (``reasoning_content``, or ``reasoning``); never parsed as the answer.
    """

    text: str | None
    refusal: str | None
    finish_reason: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    model: str
    raw: Mapping[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    reasoning: str | None = None

    @classmethod
    def build(
        cls,
        *,
        text: str | None,
        model: str,
        usage: Usage,
        refusal: str | None = None,
        finish_reason: str | None = "stop",
        tool_calls: tuple[ToolCall, ...] = (),
        reasoning: str | None = None,
    ) -> LMResponse:
        """A response assembled here (joined stream chunks, a scripted reply).

        ``raw`` is the ``chat.completion`` body a non-streamed endpoint would have sent.
        """
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        if tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in tool_calls
            ]
        raw = {
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
        }
        return cls(text, refusal, finish_reason, tool_calls, usage, model, raw, reasoning=reasoning)

    @classmethod
    def from_completion(cls, completion: object, *, model: str) -> LMResponse:
        """Read a chat completion (the decoded JSON body) leniently.

        Only the first choice is used; ``raw`` keeps the others. Extra keys, unknown enum
        values and ``""`` where ``null`` was meant (as some OpenAI-compatible servers send)
        are tolerated.

        Args:
            completion: The decoded response body.
            model: The model to report when the completion does not name one.

        Returns:
            The response.

        Raises:
            LMResponseError: The body is not a completion with at least one choice.
        """
        if not isinstance(completion, dict):
            raise LMResponseError(
                f"the endpoint returned {type(completion).__name__}, not a chat completion object"
            )
        choices = completion.get("choices")
        if not isinstance(choices, list) or not choices:
            error = completion.get("error")  # some proxies send their errors with status 200
            said = error.get("message") if isinstance(error, dict) else None
            why = f" (it said: {said})" if isinstance(said, str) else ""
            raise LMResponseError(f"the endpoint returned no choices{why}")
        choice = choices[0] if isinstance(choices[0], dict) else {}
        message = choice.get("message")
        if not isinstance(message, dict):
            raise LMResponseError("the endpoint returned a choice without a message")
        served = completion.get("model")
        return cls(
            text=content_text(message.get("content"), "choices[0].message.content"),
            refusal=_non_empty(message.get("refusal")),
            finish_reason=_non_empty(choice.get("finish_reason")),
            tool_calls=_tool_calls(message.get("tool_calls")),
            usage=usage_of(completion.get("usage")),
            model=served if isinstance(served, str) and served else model,
            raw=completion,
            reasoning=_reasoning(message),
        )


def _reasoning(message: Mapping[str, Any]) -> str | None:
    # llama.cpp, vLLM and DeepSeek send `reasoning_content`; some servers `reasoning`.
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _non_empty(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def content_text(content: object, where: str) -> str | None:
    """The text of a message's content: a string, ``None``, or content parts (joined).

    Raises:
        LMResponseError: Content of another type (a number, an object) or a part that is not an
            object: the endpoint's fault, named by ``where``, never blamed on the model.
    """
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts, as a few compatible servers send
        parts = cast("list[object]", content)
        for n, part in enumerate(parts):
            if not isinstance(part, dict):
                raise LMResponseError(
                    f"the endpoint sent {where}[{n}] as {_kind(part)}, not a content part"
                )
        texts = [cast("dict[str, object]", p).get("text") for p in parts]
        return "".join(t for t in texts if isinstance(t, str))
    raise LMResponseError(f"the endpoint sent {where} as {_kind(content)}, not text")


def _kind(value: object) -> str:
    return "an object" if isinstance(value, dict) else type(value).__name__


def _tool_calls(calls: object) -> tuple[ToolCall, ...]:
    if not isinstance(calls, list):
        return ()
    found = []
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if not isinstance(arguments, str):  # a few servers send the object itself
            arguments = json.dumps(arguments if arguments is not None else {})
        arguments = arguments or "{}"  # none at all: sent back as JSON, as a stream's are
        # An id or name that is no string is none, as in a stream (an agent makes up an id).
        found.append(
            ToolCall(
                id=_non_empty(call.get("id")) or "",
                name=_non_empty(function.get("name")) or "",
                arguments=arguments,
            )
        )
    return tuple(found)


def usage_of(usage: object) -> Usage:
    if not isinstance(usage, dict):
        return Usage()
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens")) or prompt + completion
    return Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=total)


def _count(value: object) -> int:
    """A token count as the server wrote it, or 0 (not reported) where it cannot be one.

    Negative, NaN, infinite or not a number: a negative count grew a budget, and NaN or 1e400
    raised mid-call (ADR-090 then counts the reply at its estimate).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return int(value) if value >= 0 else 0


def vectors_of(name: str, data: Any) -> list[list[float]]:
    """An embeddings reply's vectors in input order, each a list of finite numbers.

    Raises:
        LMResponseError: The data is not a list of indexed vectors, or a vector holds something
            other than finite numbers (NaN would rank every neighbour search at random).
    """
    try:
        items = sorted(data, key=lambda item: int(item.index))
    except (TypeError, ValueError, AttributeError) as exc:
        raise LMResponseError(f"{name}: the embeddings reply has no indexed vectors") from exc
    vectors: list[list[float]] = []
    for number, item in enumerate(items):
        vector = getattr(item, "embedding", None)
        if not isinstance(vector, list) or not all(map(_finite, cast("list[object]", vector))):
            raise LMResponseError(f"{name}: embedding {number} is not a list of finite numbers")
        vectors.append([float(x) for x in vector])
    return vectors


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
