"""The last exchanges with models, kept bounded, and `inspect_history` to print them.

Every request a module sends is kept (the ``history_size`` setting, 20 by default; 0 keeps
none): what was sent, what came back or what failed, how long it took, the tokens, and which
attempt of its call it was. `inspect_history` prints the last ones as DSPy users know it; the
failure kind an attempt was given (a retry's reason) is added once the engine has read it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from typedspy._text import printable
from typedspy._types import FailureKind, Usage
from typedspy.errors import check_int
from typedspy.lm import LMResponse

if TYPE_CHECKING:
    from typedspy.pipeline._exchange import Exchange

__all__ = ["HISTORY", "Entry", "ExchangeLog", "inspect_history", "last_exchanges"]


@dataclass
class Entry:
    """One exchange with a model.

    Attributes:
        model: The model name sent.
        response: The reply (``None`` when the request failed or was abandoned).
        error: What ended it instead, if anything (``"ValueError: ..."``).
        seconds: How long it took.
        attempt: Which attempt of its call it was (0: not an attempt of a module call).
        kind: The failure kind the engine gave that attempt (``None``: it was used).
        cached: Whether the reply came from the response cache.
        streamed: Whether the reply streamed.
        at: When it ended (``time.time``).
        body: The JSON body that was sent (the one the transport sent, not a copy).
    """

    model: str
    response: LMResponse | None
    error: str | None
    seconds: float
    attempt: int
    kind: FailureKind | None = None
    cached: bool = False
    streamed: bool = False
    at: float = 0.0
    body: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, exchange: Exchange, error: BaseException | None) -> Entry:
        """The entry for an exchange that ended (with ``error``, or abandoned without a reply)."""
        failed = None
        if error is not None:
            failed = f"{type(error).__name__}: {error}"
        elif exchange.response is None:
            failed = "abandoned: the consumer stopped reading the stream"
        return cls(
            model=exchange.lm.model,
            response=exchange.response,
            error=failed,
            seconds=time.monotonic() - exchange.started,
            attempt=exchange.attempt,
            cached=exchange.cached,
            streamed=exchange.streamed,
            at=time.time(),
            body=_body(exchange),
        )

    @property
    def usage(self) -> Usage:
        """Tokens the reply reported (none for a failed request)."""
        return self.response.usage if self.response is not None else Usage()


def _body(exchange: Exchange) -> dict[str, Any]:
    """The exchange's body: built already when it was sent or looked up in the cache.

    One that ended before (refused by a budget) is built now; one the LM refuses to build is
    shown as such.
    """
    if exchange.built is not None:
        return exchange.built
    try:
        return exchange.body
    except Exception as exc:
        return {"unbuildable": f"{type(exc).__name__}: {exc}"}


class ExchangeLog:
    """A bounded, thread-safe record of the last exchanges."""

    def __init__(self, size: int = 20) -> None:
        self._lock = threading.Lock()
        self._entries: deque[Entry] = deque(maxlen=size)

    def resize(self, size: int) -> None:
        """Keep at most ``size`` entries from now on (the newest ones)."""
        if size != self._entries.maxlen:
            with self._lock:
                self._entries = deque(self._entries, maxlen=size)

    def add(self, entry: Entry) -> None:
        """Keep ``entry`` (the oldest one goes when full)."""
        with self._lock:
            self._entries.append(entry)

    def note_kind(self, response: LMResponse, kind: FailureKind | None) -> None:
        """Give the entry of ``response`` the failure kind the engine read in it."""
        with self._lock:
            for entry in reversed(self._entries):
                if entry.response is response:
                    entry.kind = kind
                    return

    def last(self, n: int) -> list[Entry]:
        """The last ``n`` entries, oldest first."""
        with self._lock:
            entries = list(self._entries)
        return entries[-n:] if n > 0 else []

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()


HISTORY = ExchangeLog()


def last_exchanges(n: int = 1) -> list[Entry]:
    """The last ``n`` exchanges with models in this process, oldest first.

    Raises:
        ConfigurationError: ``n`` is not an int >= 0.
    """
    check_int("last_exchanges", "n", n, minimum=0, optional=False)
    return HISTORY.last(n)


def inspect_history(n: int = 1) -> str:
    """Print the last ``n`` exchanges (what was sent, what came back), and return the text.

    Example:
        ```python
        ts.inspect_history(2)  # the last two requests, a retry's feedback turn included
        ```

    Raises:
        ConfigurationError: ``n`` is not an int >= 0.
    """
    check_int("inspect_history", "n", n, minimum=0, optional=False)
    entries = HISTORY.last(n)
    text = printable("\n\n".join(_render(entry) for entry in entries))
    print(text)
    return text


def _render(entry: Entry) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.at))
    head = [f"[{stamp}] {entry.model}"]
    if entry.attempt:
        head.append(f"attempt {entry.attempt}")
    head.append(f"{entry.seconds * 1000:.0f} ms")
    if entry.cached:
        head.append("cached")
    if entry.response is not None:
        usage = entry.response.usage
        head.append(f"{usage.prompt_tokens} in / {usage.completion_tokens} out tokens")
    if entry.kind is not None:
        head.append(f"failed: {entry.kind}")
    lines = [" · ".join(head)]
    for message in entry.body.get("messages", ()):
        lines.append(f"\n{str(message.get('role', '?')).upper()}:")
        lines.append(_content(message))
    for name in ("response_format", "tools", "tool_choice"):
        if name in entry.body:
            shown = json.dumps(entry.body[name], ensure_ascii=False)
            lines.append(f"\n({name}: {_short(shown, 300)})")
    params = {k: v for k, v in entry.body.items() if k not in _SHOWN}
    if params:
        lines.append(f"(parameters: {_short(json.dumps(params, ensure_ascii=False), 300)})")
    lines.append("\nRESPONSE:")
    if entry.response is None:
        lines.append(entry.error or "(none)")
    else:
        lines.append(_reply(entry.response))
    return "\n".join(lines)


_SHOWN = frozenset({"model", "messages", "response_format", "tools", "tool_choice"})


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, Sequence):
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            parts.append(part.get("text", "") if kind == "text" else f"<{kind}>")
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        parts.append(f"→ {function.get('name')}({function.get('arguments')})")
    return "\n".join(parts)


def _reply(response: LMResponse) -> str:
    parts = []
    if response.reasoning:
        parts.append(f"(reasoning) {response.reasoning}")
    if response.text:
        parts.append(response.text)
    if response.refusal:
        parts.append(f"(refused) {response.refusal}")
    parts.extend(f"→ {call.name}({call.arguments})" for call in response.tool_calls)
    if response.finish_reason not in (None, "stop", "tool_calls"):
        parts.append(f"(finish_reason: {response.finish_reason})")
    return "\n".join(parts) or "(empty)"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
