"""``@ts.tool``: turn a plain sync or async function into a `Tool`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from typedspy.tools._tool import Tool

__all__ = ["tool"]


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a function a tool; bare (``@ts.tool``) or configured (``@ts.tool(name=...)``).

    The schema comes from the type hints and the descriptions from the Google-style docstring,
    as in `Tool.from_function`. The result is a `Tool`: call it with keyword arguments
    (synchronously) or ``await search.acall({...})``.

    Example:
        ```python
        @ts.tool
        async def search(query: str, limit: int = 5) -> list[str]:
            \"\"\"Search the index; `query` is what to look for.\"\"\"
            ...
        ```

    Args:
        fn: The function (when used bare).
        name: The tool name; the function's name when None.
        description: Overrides the docstring's description.

    Raises:
        ToolError: As for `Tool.from_function`.
    """
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description)

    def wrap(function: Callable[..., Any]) -> Tool:
        return Tool.from_function(function, name=name, description=description)

    return wrap
