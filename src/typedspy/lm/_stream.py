"""Streaming at the LM boundary: chunks read leniently, and a pure accumulator.

The accumulator has no I/O, so the same code turns any sequence of chunks into the
`LMResponse` the non-streaming path would have produced (openai SDK's state-machine pattern).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy._json import loads
from typedspy._text import bounded
from typedspy._types import Usage
from typedspy.errors import LMResponseError
from typedspy.lm._messages import LMResponse, ToolCall, content_text, usage_of

__all__ = [
    "LMChunk",
    "StreamAccumulator",
    "ToolCallDelta",
    "chunk_of",
    "is_first_choice",
]


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
        reasoning: Reasoning text added by this chunk (``reasoning_content``; "" when none).
    """

    text: str = ""
    refusal: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    reasoning: str = ""

    @classmethod
    def from_dict(cls, chunk: Mapping[str, Any]) -> LMChunk:
        """Read a decoded ``chat.completion.chunk`` body (values of the wrong type are skipped).

        Raises:
            LMResponseError: The content is neither text nor content parts (as for a body).
        """
        choices = chunk.get("choices")
        first: Mapping[str, Any] = next(
            (c for c in (choices if isinstance(choices, list) else []) if is_first_choice(c)),
            {},  # pyright: ignore[reportUnknownArgumentType]
        )
        delta = first.get("delta")
        delta = delta if isinstance(delta, Mapping) else {}
        calls = delta.get("tool_calls")
        usage = chunk.get("usage")
        model = chunk.get("model")
        return cls(
            text=content_text(delta.get("content"), "choices[0].delta.content") or "",
            refusal=_text(delta.get("refusal")),
            tool_calls=tuple(
                _call_delta(tc, position)
                for position, tc in enumerate(calls if isinstance(calls, list) else [])
                if isinstance(tc, Mapping)
            ),
            finish_reason=_text(first.get("finish_reason")) or None,
            usage=usage_of(dict(usage)) if isinstance(usage, Mapping) else None,
            model=model if isinstance(model, str) and model else None,
            reasoning=_text(delta.get("reasoning_content")) or _text(delta.get("reasoning")),
        )


def is_first_choice(choice: object) -> bool:
    """Whether ``choice`` is the one a stream is read from (index 0, or no index)."""
    return isinstance(choice, Mapping) and choice.get("index", 0) in (0, None)


def holds_first_choice(chunk: Mapping[str, Any]) -> bool:
    """Whether a decoded chunk has the choice a stream is read from (`is_first_choice`)."""
    choices: Any = chunk.get("choices")
    return isinstance(choices, list) and any(is_first_choice(c) for c in choices)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _call_delta(data: Mapping[str, Any], position: int) -> ToolCallDelta:
    function = data.get("function")
    function = function if isinstance(function, Mapping) else {}
    index = data.get("index")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):  # the object itself, at once
        arguments = json.dumps(arguments)
    return ToolCallDelta(
        # A server that leaves out `index` sends each call whole, in order.
        index=index if isinstance(index, int) and not isinstance(index, bool) else position,
        id=_text(data.get("id")) or None,
        name=_text(function.get("name")) or None,
        arguments=arguments or "",
    )


@dataclass
class _CallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    shape: _Shape = field(default_factory=lambda: _Shape())

    def add(self, arguments: str) -> None:
        self.arguments.append(arguments)
        self.shape.feed(arguments)

    def whole(self) -> bool:
        """Whether the arguments so far are a whole JSON object (the call's, all arrived)."""
        if self.shape.state != "closed":
            return False
        if self.shape.parsed is None:  # once: what follows a closed object can only break it
            try:
                self.shape.parsed = isinstance(loads("".join(self.arguments)), dict)
            except ValueError:
                self.shape.parsed = False
        return self.shape.parsed


_TOKEN = re.compile(r'["\\{}\[\]]')  # what moves a JSON text in or out of strings and nesting


class _Shape:
    """Where argument text stands, read piece by piece: each character once.

    Whether the text is a whole object was read from the joined text at each piece that names
    the call: a server naming the call in every piece made that quadratic (4,000 pieces of
    1 KB: 14 s on the event loop).
    """

    def __init__(self) -> None:
        self.state = "start"  # then "open" at its "{", "closed" at its "}", or "other"
        self.depth = 0
        self.in_string = False
        self.skip = 0  # characters of the next piece an escape at the end of this one covers
        self.parsed: bool | None = None

    def feed(self, piece: str) -> None:
        if piece.strip() and self.state in ("start", "closed"):
            opens = self.state == "start" and piece.lstrip().startswith("{")
            self.state = "open" if opens else "other"  # a whole object and more is none
        if self.state == "open":
            self._scan(piece)

    def _scan(self, piece: str) -> None:
        covered = self.skip  # an escaped character is never a token
        for match in _TOKEN.finditer(piece):
            token, at = match.group(), match.start()
            if at < covered:
                continue
            if self.in_string:
                covered = at + 2 if token == "\\" else covered
                self.in_string = token != '"'
            elif token == '"':
                self.in_string = True
            else:
                self.depth += 1 if token in "{[" else -1
                if self.depth <= 0:
                    whole = self.depth == 0 and not piece[at + 1 :].strip()
                    self.state = "closed" if whole else "other"
                    return
        self.skip = max(covered - len(piece), 0)


class StreamAccumulator:
    """Collects chunks into the final `LMResponse`."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._calls: list[_CallParts] = []  # in the order they started
        self._at: dict[int, int] = {}  # a wire index -> the call it now adds to
        self.finish_reason: str | None = None
        self.usage = Usage()

    @property
    def text(self) -> str:
        """The content received so far."""
        return "".join(self._text)

    @property
    def calling(self) -> bool:
        """Whether a tool call has started (calls are numbered as they start: the first is 0)."""
        return bool(self._calls)

    def call_name(self, index: int) -> str:
        """The function name of the tool call at ``index`` ("" until it arrived)."""
        return self._calls[index].name if index < len(self._calls) else ""

    def add(self, chunk: LMChunk) -> LMChunk:
        """Take one chunk into account; returns it with its tool-call pieces renumbered.

        Calls are numbered in the order they start, which is the wire's ``index`` order on a
        server that sends index 0 first, so the partials and the reply read the same call
        first. A piece with a name and a new ``id`` at an index whose call has another id starts
        a new call: Ollama numbers every call 0 (ollama/ollama#15457), and Gemini sends none
        (read as its position in the chunk). A new id without a name continues the call, as a
        server that changes the id between a call's pieces (poolsideai/pool#9) means it.
        Without a new id, a name after the call's arguments are a whole JSON object starts a
        new call too, unless it repeats the call's name with no arguments (ADR-101).

        Raises:
            LMResponseError: Without a new id, another name before the call's arguments are a
                whole JSON object: which call the pieces belong to cannot be read.
        """
        if chunk.text:
            self._text.append(chunk.text)
        if chunk.refusal:
            self._refusal.append(chunk.refusal)
        if chunk.reasoning:
            self._reasoning.append(chunk.reasoning)
        pieces: list[ToolCallDelta] = []
        renumbered = False
        for piece in chunk.tool_calls:
            at = self._at.get(piece.index)
            if at is None or self._starts_call(self._calls[at], piece):
                at = self._at[piece.index] = len(self._calls)
                self._calls.append(_CallParts())
            if at != piece.index:
                renumbered, piece = True, dataclasses.replace(piece, index=at)
            pieces.append(piece)
            parts = self._calls[at]
            parts.id = piece.id or parts.id
            parts.name = piece.name or parts.name
            if piece.arguments:
                parts.add(piece.arguments)
        if chunk.finish_reason:
            self.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.model:
            self.model = chunk.model
        return dataclasses.replace(chunk, tool_calls=tuple(pieces)) if renumbered else chunk

    @staticmethod
    def _starts_call(parts: _CallParts, piece: ToolCallDelta) -> bool:
        """Whether ``piece``, at the wire index of ``parts``'s call, starts another call."""
        if not piece.name:
            return False
        if piece.id and parts.id not in ("", piece.id):
            return True
        if not parts.name:
            return False
        whole = parts.whole()
        if piece.name == parts.name:  # a server may repeat the name in each piece of a call
            return whole and bool(piece.arguments)
        if whole:
            return True
        raise LMResponseError(
            f"the stream sent a tool call named {bounded(piece.name, 100)!r} without an id at "
            f"index {piece.index}, where the call to {bounded(parts.name, 100)!r} had not "
            "finished its arguments: the calls' pieces cannot be told apart"
        )

    def response(self) -> LMResponse:
        """The completion the chunks add up to (as `LMResponse.from_completion` would read it)."""
        calls = tuple(  # a call streamed without arguments has none: "{}", as a completion's
            ToolCall(id=p.id, name=p.name, arguments="".join(p.arguments) or "{}")
            for p in self._calls
        )
        joined = "".join(self._text)
        refusal = "".join(self._refusal) or None
        text = joined if joined or not (refusal or calls) else None
        return LMResponse.build(
            text=text,
            refusal=refusal,
            finish_reason=self.finish_reason,
            tool_calls=calls,
            usage=self.usage,
            model=self.model,
            reasoning="".join(self._reasoning) or None,
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
        reasoning=response.reasoning or "",
    )
