"""Module callbacks: a tool returns a marked callable, the agent runs it with its context.

A tool that wants to change what the agent can do (load a tool on demand, drop one that is no
longer useful) returns a callable marked with `module_callback` instead of a value. The agent
calls it with a `ModuleContext` and uses its string result as the tool's observation. Changes
made through ``context.tools`` last for the rest of the run only: the agent object keeps its
own tools, so it stays reusable and concurrent runs never see each other's changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typedspy.program import Module
    from typedspy.react._trajectory import Trajectory
    from typedspy.tools import Toolset

__all__ = ["ModuleContext", "is_module_callback", "module_callback"]

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
