"""A hostile MCP server over stdio for tests/faults/test_mcp_hostile.py: replies no client can read.

The SDK's low-level server, whose replies are rewritten on their way out: a text block
``"__GARBLED__"`` breaks the line's JSON and ``"__DEEP__"`` becomes 100,000 nested arrays, so
the client gets a line with no readable id; ``"__INVALID__"`` becomes an object, so the reply
is JSON-RPC but no valid tools/call result. ``crash`` ends the process mid-call; ``echo``
answers normally. Run as
``python hostile_mcp.py``; it ends when its stdin closes.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

OBJECT = {"type": "object", "properties": {"x": {"type": "integer"}}}
REPLIES = {
    "garbled": "__GARBLED__",
    "deep": "__DEEP__",
    "invalid": "__INVALID__",
    "crash": "",
    "echo": "fine",
}


async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[types.Tool(name=name, input_schema=OBJECT) for name in REPLIES]
    )


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    if params.name == "crash":
        os._exit(3)
    text = REPLIES[params.name]
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


class Rewriting:
    """The real stdout, with the markers replaced on the way out."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def write(self, line: str) -> None:
        line = line.replace("__GARBLED__", '", broken')
        line = line.replace('"__DEEP__"', "[" * 100_000 + "]" * 100_000)
        line = line.replace('"__INVALID__"', '{"not": "text"}')
        await self.inner.write(line)

    async def flush(self) -> None:
        await self.inner.flush()


async def main() -> None:
    stdout = anyio.wrap_file(io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server(stdout=Rewriting(stdout)) as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
