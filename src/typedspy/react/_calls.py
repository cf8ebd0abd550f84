"""Running the tool calls of a ReAct step and turning what happened into observations.

Everything a tool can do wrong at run time becomes text the model reads on its next step: an
unknown name, arguments that fail validation (the tool is not called), an exception, a callback
that fails. Two things leave this module instead: `ConfirmationRequired`, carrying the run's
state so the run can resume at the same call, and a `ConfigurationError` or `SchemaError` from
inside a tool (a program that is set up wrong, which no step of the model can fix; ADR-036).

Tools run inside ``ts.context(lm=<the agent's LM>)``: a tool that calls a module (or is one)
uses the agent's model unless it was given its own.

Module callbacks: a tool that wants to change what the agent can do (load a tool on demand,
drop one that is no longer useful) returns a callable marked with `module_callback` instead of
a value. The agent calls it with a `ModuleContext` and uses its string result as the tool's
observation. Changes made through ``context.tools`` last for the rest of the run only: the
agent object keeps its own tools, so it stays reusable and concurrent runs never see each
other's changes. Each call runs between a `ToolCallStarted` and a `ToolCallFinished` event.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from typedspy import callbacks
from typedspy._json import depth_limit
from typedspy._json import loads as bounded_loads
from typedspy.adapter import render_value
from typedspy.errors import (
    ConfigurationError,
    InputError,
    SchemaError,
    ToolArgumentsError,
    ToolNotFoundError,
)
from typedspy.react._state import Trajectory, TrajectoryCall
from typedspy.settings import context
from typedspy.streaming import ToolCallFinished, ToolCallStarted
from typedspy.tools import ConfirmationRejected, ConfirmationRequired, Tool, Toolset

if TYPE_CHECKING:
    from typedspy.lm import BaseLM
    from typedspy.program import Module

__all__ = [
    "MAX_ERROR_CHARS",
    "CallRunner",
    "ModuleContext",
    "bounded",
    "finished",
    "is_module_callback",
    "module_callback",
    "started",
]

MAX_ERROR_CHARS = 1000
"""Errors shown to the model are cut to this many characters: a stack of validation messages
or a huge exception text must not crowd out the conversation."""


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


F = TypeVar("F", bound=Callable[..., Any])

_MARK = "__typedspy_module_callback__"


def module_callback(fn: F) -> F:
    """Mark a callable as a module callback, for a tool to return.

    The agent calls it with a `ModuleContext` (sync or async callables both work) and shows
    its result, as text, to the model as the tool's observation.

    Example:
        ```python
        @ts.tool
        def load_calculator() -> str:
            \"\"\"Make the calculator tool available.\"\"\"

            @ts.module_callback
            def add(context: ts.ModuleContext) -> str:
                context.tools.add(calculator)
                return "The calculator tool is now available."

            return add
        ```

    Args:
        fn: The callable; it takes one argument, the context.

    Returns:
        The same callable, marked.
    """
    setattr(fn, _MARK, True)
    return fn


def is_module_callback(value: object) -> bool:
    """Whether ``value`` is a callable marked with `module_callback`."""
    return callable(value) and getattr(value, _MARK, False) is True


@dataclass(frozen=True)
class ModuleContext:
    """What a module callback receives.

    Attributes:
        module: The agent running the callback (read it; change ``tools`` rather than it).
        tools: The tools of this run, a `Toolset`: ``add`` and ``remove`` take effect from the
            next step and last until the run ends.
        trajectory: The run's steps so far (read-only by convention).
    """

    module: Module
    tools: Toolset
    trajectory: Trajectory


def started(call: TrajectoryCall) -> ToolCallStarted:
    """The event before ``call`` runs; its arguments decoded when they are a JSON object."""
    arguments: Mapping[str, Any] | str = call.arguments
    try:
        decoded = bounded_loads(call.arguments)  # nesting bounded: the model wrote it
    except ValueError:
        decoded = None
    if isinstance(decoded, dict):
        arguments = decoded
    return ToolCallStarted(call.id, call.name, arguments)


def finished(call: TrajectoryCall, failed: bool) -> ToolCallFinished:
    """The event after ``call`` ran (or was refused): what the model will read."""
    return ToolCallFinished(call.id, call.name, call.observation or "", error=failed)


@dataclass
class CallRunner:
    """Runs the tool calls of one agent run against that run's own toolset.

    Attributes:
        agent: The agent (given to module callbacks as ``context.module``).
        lm: The agent's model, set as the settings' ``lm`` while a tool runs (sub-modules
            without their own LM use it).
        tools: This run's tools; module callbacks change these, never the agent's.
        trajectory: This run's trajectory (given to module callbacks).
        on_pause: Called with a `ConfirmationRequired` before it propagates, to store the
            run's state in its ``context``.
    """

    agent: Module
    tools: Toolset
    trajectory: Trajectory
    on_pause: Callable[[ConfirmationRequired, TrajectoryCall], None]
    lm: BaseLM | None = None

    async def run(self, call: TrajectoryCall) -> str:
        """Run one (non-``finish``) call and return its observation; never raises but to pause.

        Raises:
            ConfirmationRequired: The tool asks for a confirmation; ``context`` holds the state.
        """
        observation, _ = await self.run_checked(call)
        return observation

    async def run_checked(self, call: TrajectoryCall) -> tuple[str, bool]:
        """Like `run`, and say whether the call failed (the observation reports an error).

        Raises:
            ConfirmationRequired: The tool asks for a confirmation; ``context`` holds the state.
        """
        try:
            tool = self.tools.get(call.name)
        except ToolNotFoundError:
            available = ", ".join([t.name for t in self.tools] + ["finish"])
            return (
                f"Error: there is no tool named {call.name!r}. Available tools: {available}.",
                True,
            )
        traced = callbacks.tool_start(tool, call.arguments)
        try:
            if self.lm is None:
                result = await tool.acall(call.arguments)
            else:
                # No yield inside: the overrides end with the call. The model's arguments are
                # decoded within its LM's max_json_depth (ADR-048).
                with context(lm=self.lm), depth_limit(self.lm.max_json_depth):
                    result = await tool.acall(call.arguments)
        except BaseException as exc:
            callbacks.tool_end(traced, None, exc)
            return self._failed(call, exc)
        callbacks.tool_end(traced, result, None)
        return await self._observe(call, tool, result)

    def _failed(self, call: TrajectoryCall, exc: BaseException) -> tuple[str, bool]:
        """The observation for a tool that raised; pauses and cancellations propagate."""
        if isinstance(exc, ToolArgumentsError):
            message = f"Error: the arguments for {call.name} are invalid, so it was not run: {exc}"
            return bounded(message), True
        if isinstance(exc, ConfirmationRequired):
            self.on_pause(exc, call)
            raise exc
        if isinstance(exc, SchemaError) or (
            isinstance(exc, ConfigurationError) and not isinstance(exc, InputError)
        ):
            raise exc  # the program is set up wrong: no step of the model can fix it
        if isinstance(exc, ConfirmationRejected):
            message = f"The user rejected this call to {call.name}; it was not run. {exc}"
            return bounded(message), True
        if isinstance(exc, Exception):  # any failure of the user's tool is news for the model
            return bounded(f"Error: {call.name} failed: {type(exc).__name__}: {exc}"), True
        raise exc

    async def _observe(self, call: TrajectoryCall, tool: Tool, result: Any) -> tuple[str, bool]:
        value = _single_value(result)
        if not is_module_callback(value):
            # Rendered against the tool's output types: only union members carry `_type`.
            return render_value(_single_value(tool.dump_outputs(result))), False
        context = ModuleContext(module=self.agent, tools=self.tools, trajectory=self.trajectory)
        try:
            said = value(context)
            if inspect.isawaitable(said):
                said = await _awaited(said)
        except ConfirmationRequired as exc:
            self.on_pause(exc, call)
            raise
        except Exception as exc:  # a failing callback is reported like a failing tool
            return bounded(f"Error: {call.name} failed: {type(exc).__name__}: {exc}"), True
        if said is None:
            return f"{call.name} done.", False
        return render_value(said), False


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _single_value(result: Any) -> Any:
    """A tool's outputs as the model should read them: the value itself when there is one."""
    if isinstance(result, Mapping) and len(result) == 1:
        return next(iter(result.values()))
    return result
