"""`History`: earlier turns of a conversation, carried across calls."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any

from typedspy.lm import ChatMessage

__all__ = ["History", "history_messages"]


class History:
    """A conversation to continue: its system prompt always comes first, then the turns.

    Example:
        ```python
        history = ts.History(system_prompt="You are terse.")
        history.add_message("user", "Hi")
        history.add_message("assistant", "Hello.")
        predict(question="And now?", history=history)
        ```
    """

    def __init__(
        self, system_prompt: str | None = None, messages: list[ChatMessage] | None = None
    ) -> None:
        self.system_prompt = system_prompt
        self._messages: list[ChatMessage] = [
            m for m in (messages or []) if m.get("role") != "system"
        ]
        for m in messages or []:
            if m.get("role") == "system" and self.system_prompt is None:
                self.system_prompt = str(m.get("content") or "")

    def add_message(self, role: str, content: str | None, **extra: Any) -> None:
        """Append a turn (``role`` is ``"user"``, ``"assistant"`` or ``"tool"``).

        A ``"system"`` message replaces the system prompt rather than being appended, so the
        system prompt stays first whatever the order of calls.
        """
        if role == "system":
            self.system_prompt = content
            return
        self._messages.append({"role": role, "content": content, **extra})

    @property
    def messages(self) -> list[ChatMessage]:
        """All messages in order, the system prompt (if any) first."""
        head: list[ChatMessage] = (
            [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        )
        return head + [dict(m) for m in self._messages]

    @property
    def turns(self) -> list[ChatMessage]:
        """The messages after the system prompt."""
        return [dict(m) for m in self._messages]

    def copy(self) -> History:
        """An independent copy."""
        return History(self.system_prompt, copy.deepcopy(self._messages))

    def clear(self) -> None:
        """Drop every turn (the system prompt stays)."""
        self._messages.clear()

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[ChatMessage]:
        return iter(self.messages)


def history_messages(history: History | Sequence[ChatMessage] | None) -> list[ChatMessage]:
    """The messages of a `History`, a list of messages, or nothing."""
    if history is None:
        return []
    if isinstance(history, History):
        return history.messages
    return list(history)
