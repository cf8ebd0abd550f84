"""`serve`: typedspy tools and signature-bound modules as an MCP server.

Built on the SDK's low-level ``Server`` (the one ``MCPServer`` wraps): ``MCPServer`` derives
schemas from a function's parameters and validates arguments with its own model, while a
typedspy tool already has both schemas from the schema compiler (`Tool.to_mcp_tool`) and
validates its own arguments, so the low-level handlers serve those unchanged (ADR-019).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from typedspy._version import __version__
from typedspy.errors import ToolError, ToolNotFoundError
from typedspy.mcp._elicit import ask, supports_elicitation
from typedspy.mcp._results import error_result, failure_result, success_result
from typedspy.modules import Module
from typedspy.tools import ConfirmationRequired, ResumeState, Tool, Toolset, resume

__all__ = ["Servable", "serve"]

Servable: TypeAlias = "Tool | Module | Callable[..., Any] | Toolset"
"""What `serve` takes: tools, signature-bound module instances, plain functions, toolsets."""


def serve(
    *items: Servable,
    name: str = "typedspy",
    version: str | None = None,
    instructions: str | None = None,
) -> Server[Any]:
    """An MCP server whose tools are the given typedspy tools and modules.

    Each becomes an MCP tool with its snake_case name, its description, and the
    ``inputSchema``/``outputSchema`` of `Tool.to_mcp_tool`. A call validates its arguments
    first, returns the outputs as ``structuredContent`` plus a JSON text block, and reports a
    failure as an ``isError`` result whose ``structuredContent.error.errors`` names the field
    paths. A `confirm_first` tool asks the client's user through MCP elicitation and refuses
    to run for a client that cannot ask.

    Example:
        ```python
        server = ts.mcp.serve(ts.Predict(Summarise), SearchModule(), get_weather, name="docs")
        async with mcp.Client(server) as client:  # in-process; or run it: typedspy.mcp.run
            result = await client.call_tool("get_weather", {"city": "Oslo"})
        ```

    Args:
        *items: Tools, signature-bound module instances (Predict, ChainOfThought, ReAct, a
            code-backed module), plain functions and toolsets.
        name: The server's name, shown to clients.
        version: The server's version; typedspy's version when None.
        instructions: Text for the client's model about how to use these tools.

    Returns:
        The SDK's low-level server: pass it to ``mcp.Client`` in-process, or to `run`.

    Raises:
        ToolError: No tools, duplicate names, or an item that is not a tool.
        SchemaError: A tool whose schemas cannot be compiled.
    """
    toolset = Toolset()
    for item in items:
        for one in item if isinstance(item, Toolset) else (item,):
            toolset.add(one)
    if not len(toolset):
        raise ToolError("serve needs at least one tool, module or function")
    listing = [types.Tool.model_validate(tool.to_mcp_tool()) for tool in toolset]
    schemas = {tool.name: tool.input_schema for tool in listing}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        try:
            tool = toolset.get(params.name)
        except ToolNotFoundError as exc:
            return error_result("error", str(exc))
        return await _answer(ctx, params, tool)

    return Server(
        name,
        version=version or __version__,
        instructions=instructions,
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def _answer(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams, tool: Tool
) -> types.CallToolResult | types.InputRequiredResult:
    """Run one call; a confirmation of the tool itself is asked once, through elicitation."""
    arguments = params.arguments or {}
    try:
        return success_result(tool.dump_outputs(await tool.acall(arguments)))
    except ConfirmationRequired as paused:
        if paused.tool_call.get("name") != tool.name:
            return error_result(
                "rejected",
                f"{paused.tool_call.get('name')} inside {tool.name} needs a person's confirmation; "
                "confirmations of nested tools are not asked over MCP, so it did not run",
            )
        if not supports_elicitation(ctx):
            return error_result(
                "rejected",
                f"{tool.name} needs a person's confirmation ({paused.question}) and this client "
                "cannot ask for one (it declared no MCP form elicitation), so it did not run",
            )
        answer = await ask(ctx, params, paused)
        if isinstance(answer, types.InputRequiredResult):
            return answer
        try:
            with resume(ResumeState(paused, answer)):
                outputs = await tool.acall(arguments)
        except Exception as exc:  # a failure of the approved run is the caller's news
            return failure_result(exc)
        return success_result(tool.dump_outputs(outputs))
    except Exception as exc:  # the client reads every failure as an isError result
        return failure_result(exc)
