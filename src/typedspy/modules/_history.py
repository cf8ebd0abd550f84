"""`History`: earlier turns of a conversation, carried across calls."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from typedspy._json import first_not_json
from typedspy._types import format_path
from typedspy.errors import InputError
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

    Raises:
        InputError: A message that is not a mapping with a string ``role`` JSON can write
            (checked here and at every call, see `history_messages`).
    """

    def __init__(
        self, system_prompt: str | None = None, messages: list[ChatMessage] | None = None
    ) -> None:
        self.system_prompt = system_prompt
        messages = history_messages(messages)  # each checked, as at every call
        self._messages: list[ChatMessage] = [m for m in messages if m.get("role") != "system"]
        for m in messages:
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
    """The messages of a `History`, a list of messages, or nothing.

    Raises:
        InputError: ``history`` is none of those, or a message is not a mapping with a string
            ``role`` that JSON can write (the message names its index in the messages).
    """
    if history is None:
        return []
    # What a caller hands may be anything (a string, a dict): checked, not trusted to its type.
    messages = cast("object", history.messages if isinstance(history, History) else history)
    kind = type(messages).__name__
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InputError(f"history must be a ts.History or a list of messages, not {kind}")
    for index, message in enumerate(cast("Sequence[object]", messages)):
        if _plain_turn(message):
            continue  # this runs for every message of every call: the common case walks nothing
        if problem := _unsendable(message):
            raise InputError(f"history message {index}: {problem}")
    return list(cast("Sequence[ChatMessage]", messages))


def _plain_turn(message: object) -> bool:
    """A dict of strings (and None) with a string ``role``: nothing in it can fail to send."""
    if type(message) is not dict:
        return False
    values = cast("dict[str, object]", message)
    return type(values.get("role")) is str and all(
        value is None or type(value) is str for value in values.values()
    )


def _unsendable(message: object) -> str | None:
    if not isinstance(message, Mapping):
        kind = type(message).__name__
        return f"a message is a mapping such as {{'role': 'user', ...}}, not {kind}"
    checked = cast("Mapping[str, Any]", message)
    if not isinstance(checked.get("role"), str):
        return "a message needs a string 'role' ('user', 'assistant', 'tool' or 'system')"
    if found := first_not_json(checked, most=sys.maxsize):
        path, _, why = found
        return f"not JSON: {format_path(path)}: {why}"
    return None
