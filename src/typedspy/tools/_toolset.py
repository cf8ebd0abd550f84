"""`Toolset`: tools by name, built from tools, signature-bound modules and plain functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeAlias

from typedspy.errors import ToolError, ToolNotFoundError
from typedspy.program import Module
from typedspy.tools._tool import Tool

__all__ = ["ToolLike", "Toolset", "as_tool"]

ToolLike: TypeAlias = "Tool | Module | Callable[..., Any]"


def as_tool(item: ToolLike) -> Tool:
    """A `Tool` as is; a module through `Tool.from_module`; a function through `from_function`.

    Raises:
        ToolError: A module class (pass an instance) or something that is not callable.
    """
    if isinstance(item, Tool):
        return item
    if isinstance(item, type) and issubclass(item, Module):
        raise ToolError(f"pass a module instance, not the class: {item.__name__}()")
    if isinstance(item, Module):
        return Tool.from_module(item)
    if callable(item):
        return Tool.from_function(item)
    raise ToolError(f"not a tool, module or function: {item!r}")


def _shown(item: object) -> str:
    if isinstance(item, Tool):
        return item.name
    if isinstance(item, Module):
        return f"{type(item).__name__}(...)"
    return str(getattr(item, "__name__", None) or repr(item))


class Toolset:
    """Named tools for an agent: lookup by name, export to OpenAI and MCP.

    Example:
        ```python
        tools = ts.tools.Toolset([SearchModule(), ts.Predict(Summarise), get_weather])
        tools.get("search_documents")
        request["tools"] = tools.to_openai_tools()
        ```

    Names are unique: adding a second tool with a name already present is a `ToolError`.
    Iteration yields the tools in the order they were added.
    """

    def __init__(self, tools: Iterable[ToolLike] = ()) -> None:
        """Collect tools.

        Args:
            tools: Tools, signature-bound module instances, and plain functions.

        Raises:
            ToolError: ``tools`` is no collection (one tool, None, a string), a duplicate
                name, or an item that cannot be made a tool.
        """
        iterable = isinstance(tools, Iterable)  # pyright: ignore[reportUnnecessaryIsInstance]
        if isinstance(tools, (str, Tool, Module)) or not iterable:
            raise ToolError(
                f"tools is a list of tools, modules or functions, not {_shown(tools)}"
                + (f": pass [{_shown(tools)}]" if callable(tools) else "")
            )
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.add(item)

    def add(self, tool: ToolLike) -> Tool:
        """Add a tool (wrapping a module or function); returns the `Tool` added.

        Raises:
            ToolError: Its name is taken, or it cannot be made a tool.
        """
        added = as_tool(tool)
        if added.name in self._tools:
            raise ToolError(
                f"duplicate tool name {added.name!r}: give one of them another name "
                f"(Tool.from_module(m, name=...), @ts.tool(name=...))",
                tool=added.name,
            )
        self._tools[added.name] = added
        return added

    def remove(self, tool: str | Tool) -> Tool:
        """Remove a tool by name (or the tool itself); returns it.

        Raises:
            ToolNotFoundError: No tool of that name.
        """
        name = tool.name if isinstance(tool, Tool) else tool
        found = self.get(name)
        del self._tools[name]
        return found

    def get(self, name: str) -> Tool:
        """The tool named ``name``.

        Raises:
            ToolNotFoundError: No such tool; the message lists the available names.
        """
        try:
            return self._tools[name]
        except KeyError:
            available = sorted(self._tools)
            listed = ", ".join(available) if available else "none (the toolset is empty)"
            raise ToolNotFoundError(
                f"no tool named {name!r}; available: {listed}", tool=name, available=available
            ) from None

    __getitem__ = get

    def __contains__(self, name: object) -> bool:
        if isinstance(name, Tool):
            return self._tools.get(name.name) is name
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"Toolset({list(self._tools)})"

    @property
    def names(self) -> list[str]:
        """The tool names, in the order they were added."""
        return list(self._tools)

    async def acall(self, name: str, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Call the tool ``name`` with the model's arguments; see `Tool.acall`.

        Raises:
            ToolNotFoundError: No such tool. Otherwise as `Tool.acall`.
        """
        return await self.get(name).acall(arguments)

    def to_openai_tools(self) -> list[dict[str, Any]]:
        """Every tool's strict function definition, for the request's ``tools``."""
        return [tool.to_openai_tool() for tool in self._tools.values()]

    def to_mcp_tools(self) -> list[dict[str, Any]]:
        """Every tool's MCP definition, as a ``tools/list`` result lists them."""
        return [tool.to_mcp_tool() for tool in self._tools.values()]
