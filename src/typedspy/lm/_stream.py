"""Streaming at the LM boundary: chunks read leniently, and a pure accumulator.

The accumulator has no I/O, so the same code turns any sequence of chunks into the
`LMResponse` the non-streaming path would have produced (openai SDK's state-machine pattern).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy._types import Usage
from typedspy.lm._base import LMResponse, ToolCall

__all__ = ["LMChunk", "StreamAccumulator", "ToolCallDelta", "chunk_of"]


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of one tool call: its id and name arrive first, then argument text."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True)
class LMChunk:
    """One streamed chunk (choice 0), read leniently.

    Attributes:
        text: Content added by this chunk ("" when none).
        refusal: Refusal text added by this chunk ("" when none).
        tool_calls: Tool-call pieces in this chunk.
        finish_reason: Set on the chunk that ends the choice.
        usage: Set on the usage chunk (sent last when ``include_usage`` was requested).
    """

    text: str = ""
    refusal: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None

    @classmethod
    def from_dict(cls, chunk: Mapping[str, Any]) -> LMChunk:
        """Read a decoded ``chat.completion.chunk`` body."""
        choices = chunk.get("choices") or []
        first = next((c for c in choices if isinstance(c, Mapping) and c.get("index", 0) == 0), {})
        delta = first.get("delta") or {}
        calls = tuple(
            ToolCallDelta(
                index=int(tc.get("index", 0) or 0),
                id=tc.get("id") or None,
                name=(tc.get("function") or {}).get("name") or None,
                arguments=(tc.get("function") or {}).get("arguments") or "",
            )
            for tc in delta.get("tool_calls") or []
            if isinstance(tc, Mapping)
        )
        usage = chunk.get("usage")
        return cls(
            text=delta.get("content") or "",
            refusal=delta.get("refusal") or "",
            tool_calls=calls,
            finish_reason=first.get("finish_reason") or None,
            usage=_usage(usage) if isinstance(usage, Mapping) else None,
            model=chunk.get("model") or None,
        )


def _usage(data: Mapping[str, Any]) -> Usage:
    def number(key: str) -> int:
        value = data.get(key)
        return value if isinstance(value, int) else 0

    return Usage(number("prompt_tokens"), number("completion_tokens"), number("total_tokens"))


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAccumulator:
    """Collects chunks into the final `LMResponse`."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, _CallParts] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()

    @property
    def text(self) -> str:
        """The content received so far."""
        return "".join(self._text)

    def add(self, chunk: LMChunk) -> None:
        """Take one chunk into account."""
        if chunk.text:
            self._text.append(chunk.text)
        if chunk.refusal:
            self._refusal.append(chunk.refusal)
        for piece in chunk.tool_calls:
            parts = self._calls.setdefault(piece.index, _CallParts())
            parts.id = piece.id or parts.id
            parts.name = piece.name or parts.name
            if piece.arguments:
                parts.arguments.append(piece.arguments)
        if chunk.finish_reason:
            self.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.model:
            self.model = chunk.model

    def response(self) -> LMResponse:
        """The completion the chunks add up to (as `LMResponse.from_completion` would read it)."""
        calls = tuple(
            ToolCall(id=p.id, name=p.name, arguments="".join(p.arguments))
            for _, p in sorted(self._calls.items())
        )
        text = "".join(self._text)
        refusal = "".join(self._refusal)
        return LMResponse(
            text=text if text or not (refusal or calls) else None,
            refusal=refusal or None,
            finish_reason=self.finish_reason,
            tool_calls=calls,
            usage=self.usage,
            model=self.model,
            raw={"streamed": True},
        )


def chunk_of(response: LMResponse) -> LMChunk:
    """A whole response as one chunk (for LMs that cannot stream)."""
    return LMChunk(
        text=response.text or "",
        refusal=response.refusal or "",
        tool_calls=tuple(
            ToolCallDelta(index=i, id=c.id, name=c.name, arguments=c.arguments)
            for i, c in enumerate(response.tool_calls)
        ),
        finish_reason=response.finish_reason,
        usage=response.usage,
        model=response.model,
    )
