"""Callbacks: observe module and LM calls (logging, tracing) without changing them.

Register objects with ``ts.configure(callbacks=[...])`` or ``ts.context(callbacks=[...])``. A
callback implements any of the `BaseCallback` methods; a callback that raises is logged and
ignored, so observing never breaks the call.

Example:
    ```python
    class Printer(ts.BaseCallback):
        def on_lm_end(self, call_id, response, exception):
            print(call_id, response.usage if response else exception)

    ts.configure(callbacks=[Printer()])
    ```
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from typedspy._deadline import note_attempt, note_tool
from typedspy.pipeline import notify
from typedspy.settings import get_settings
from typedspy.streaming import closing

if TYPE_CHECKING:
    from typedspy._types import Attempt
    from typedspy.lm import BaseLM, LMRequest, LMResponse
    from typedspy.tools import Tool

__all__ = [
    "BaseCallback",
    "attempt_end",
    "attempt_start",
    "module_call",
    "tool_end",
    "tool_start",
]

E = TypeVar("E")


class BaseCallback:
    """Override the events you care about; every method does nothing by default.

    ``call_id`` pairs a start event with its end event.
    """

    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        """A module's call is starting."""

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        """A module's call ended with ``outputs``, or raised ``exception``."""

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        """A request is about to be sent to a language model."""

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        """A language model answered with ``response``, or the request raised ``exception``."""

    def on_attempt_start(self, call_id: str, instance: BaseLM, number: int) -> None:
        """Attempt ``number`` (1 for the first request) of a module call is starting.

        Its request's ``on_lm_start``/``on_lm_end`` come in between.
        """

    def on_attempt_end(
        self, call_id: str, attempt: Attempt | None, exception: BaseException | None
    ) -> None:
        """An attempt ended; ``attempt`` records it, ``exception`` ended the call there.

        ``attempt.kind`` names a decode or validation failure that a feedback retry follows.
        """

    def on_tool_start(self, call_id: str, instance: Tool, arguments: object) -> None:
        """An agent is about to run a tool with the model's ``arguments``."""

    def on_tool_end(self, call_id: str, outputs: object, exception: BaseException | None) -> None:
        """A tool returned ``outputs``, or raised ``exception``."""


def _notify(method: str, *args: Any) -> None:
    notify(get_settings().callbacks, method, *args)


async def module_call(
    instance: Any, inputs: Mapping[str, Any], events: AsyncIterator[E]
) -> AsyncIterator[E]:
    """A module call's ``events`` (its result last), between ``on_module_start`` and ``_end``.

    The call ends with its last event as the result, with the exception it raised, or, when the
    consumer stops early, with neither.
    """
    call_id = uuid.uuid4().hex
    _notify("on_module_start", call_id, instance, inputs)
    result: Any = None
    try:
        async with closing(events) as items:
            async for event in items:
                result = event
                yield event
    except GeneratorExit:  # the consumer stopped early: the call ends without a result
        _notify("on_module_end", call_id, None, None)
        raise
    except BaseException as exc:
        _notify("on_module_end", call_id, None, exc)
        raise
    _notify("on_module_end", call_id, result, None)


def attempt_start(lm: BaseLM, number: int) -> str | None:
    """Notify callbacks that an attempt starts; the id for `attempt_end` (``None``: none)."""
    note_attempt()
    if not get_settings().callbacks:
        return None
    call_id = uuid.uuid4().hex
    _notify("on_attempt_start", call_id, lm, number)
    return call_id


def attempt_end(
    call_id: str | None, attempt: Attempt | None, exception: BaseException | None
) -> None:
    """Notify callbacks that the attempt `attempt_start` announced has ended."""
    if call_id is not None:
        _notify("on_attempt_end", call_id, attempt, exception)


def tool_start(tool: Tool, arguments: object) -> str | None:
    """Notify callbacks that a tool runs; the id for `tool_end` (``None``: no callbacks)."""
    note_tool(getattr(tool, "name", "?"))
    if not get_settings().callbacks:
        return None
    call_id = uuid.uuid4().hex
    _notify("on_tool_start", call_id, tool, arguments)
    return call_id


def tool_end(call_id: str | None, outputs: object, exception: BaseException | None) -> None:
    """Notify callbacks that the tool `tool_start` announced has ended."""
    if call_id is not None:
        _notify("on_tool_end", call_id, outputs, exception)
