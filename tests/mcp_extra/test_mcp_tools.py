"""Using an MCP server's tools: schemas checked with jsonschema on both sides of the call."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp_app import tools as app_tools

import typedspy as ts
import typedspy.mcp
from typedspy.mcp import RemoteResultError, RemoteTool, RemoteToolError

SCHEMA_IN = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 2},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "units": {"enum": ["metric", "imperial"]},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}
SCHEMA_OUT = {
    "type": "object",
    "properties": {"high": {"type": "array", "items": {"type": "number"}}},
    "required": ["high"],
}


def foreign_server(reply: Callable[[dict[str, Any]], types.CallToolResult]) -> tuple[Server, list]:
    """A non-typedspy server with one tool, ``forecast``; records every call it receives."""
    received: list[dict[str, Any]] = []
    listing = [
        types.Tool(
            name="forecast",
            description="Daily highs.",
            input_schema=SCHEMA_IN,
            output_schema=SCHEMA_OUT,
        ),
        types.Tool(name="describe", input_schema={"type": "object"}),
    ]

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        received.append({"name": params.name, **(params.arguments or {})})
        return reply(params.arguments or {})

    server = Server("weather", on_list_tools=list_tools, on_call_tool=call_tool)
    return server, received


def structured(value: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[], structured_content=value)


def use(server: Any, body: Callable[[ts.tools.Toolset], Awaitable[Any]], **options: Any) -> Any:
    async def main() -> Any:
        async with ts.mcp.tools(server, **options) as remote:
            return await body(remote)

    return asyncio.run(main())


def test_remote_tools_are_typedspy_tools_with_the_remote_definitions() -> None:
    server, _ = foreign_server(lambda args: structured({"high": [1.0]}))

    async def body(remote: ts.tools.Toolset) -> list[Any]:
        return list(remote)

    forecast, describe = use(server, body)
    assert isinstance(forecast, RemoteTool) and isinstance(forecast, ts.Tool)
    assert forecast.name == "forecast" and forecast.description == "Daily highs."
    assert forecast.to_mcp_tool()["inputSchema"] == SCHEMA_IN
    assert list(forecast.signature.input_fields) == ["city", "days", "units"]
    # `units` is an enum without a `type`: the strict target types it from its values, so the
    # remote tool is sent strict (every property required, as OpenAI's subset asks).
    spec = forecast.to_openai_tool()["function"]
    assert spec["strict"] is True
    assert spec["parameters"]["properties"]["units"] == {
        "enum": ["metric", "imperial"],
        "type": "string",
    }
    assert spec["parameters"]["required"] == ["city", "days", "units"]
    assert forecast.to_openai_tool("json-schema")["function"]["parameters"] == SCHEMA_IN
    assert describe.signature.output_fields.keys() == {"result"}


def test_arguments_are_checked_against_the_input_schema_before_the_call() -> None:
    server, received = foreign_server(lambda args: structured({"high": [1.0]}))

    async def body(remote: ts.tools.Toolset) -> ts.errors.ToolArgumentsError:
        with pytest.raises(ts.errors.ToolArgumentsError) as info:
            await remote.acall("forecast", '{"city": "O", "days": 9, "wind": 1}')
        return info.value

    error = use(server, body)
    assert received == []  # nothing was sent
    paths = {e.path: e.message for e in error.errors}
    assert set(paths) == {(), ("city",), ("days",)}
    assert "9 is greater than the maximum of 7" in paths[("days",)]
    assert "'wind' was unexpected" in paths[()]


def test_valid_arguments_reach_the_server_and_a_null_optional_is_left_out() -> None:
    server, received = foreign_server(lambda args: structured({"high": [20.5, 21.0]}))

    async def body(remote: ts.tools.Toolset) -> dict[str, Any]:
        return await remote.acall("forecast", '{"city": "Oslo", "days": 2, "units": null}')

    assert use(server, body) == {"high": [20.5, 21.0]}
    assert received == [{"name": "forecast", "city": "Oslo", "days": 2}]


def test_a_result_violating_the_servers_own_output_schema_is_a_typed_error() -> None:
    server, received = foreign_server(lambda args: structured({"high": [20.5, "warm"]}))

    async def body(remote: ts.tools.Toolset) -> RemoteResultError:
        with pytest.raises(RemoteResultError) as info:
            await remote.acall("forecast", {"city": "Oslo", "days": 2})
        return info.value

    error = use(server, body)
    assert len(received) == 1
    assert error.tool == "forecast" and error.kind == "result"
    assert [(e.path, e.message) for e in error.errors] == [
        (("high", 1), "'warm' is not of type 'number'")
    ]
    assert "violates its own outputSchema" in str(error)


def test_a_missing_structured_result_is_a_typed_error() -> None:
    server, _ = foreign_server(
        lambda args: types.CallToolResult(content=[types.TextContent(type="text", text="hot")])
    )

    async def body(remote: ts.tools.Toolset) -> None:
        await remote.acall("forecast", {"city": "Oslo", "days": 2})

    with pytest.raises(RemoteResultError, match="forecast"):
        use(server, body)


def test_a_tool_without_output_schema_returns_its_text_and_names_other_content() -> None:
    reply = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="A cloud."),
            types.ImageContent(type="image", data="aGk=", mime_type="image/png"),
        ]
    )
    server, _ = foreign_server(lambda args: reply)

    async def body(remote: ts.tools.Toolset) -> dict[str, Any]:
        return await remote.acall("describe", {})

    assert use(server, body) == {"result": "A cloud.\n[image content (image/png), not shown]"}


def test_an_oversized_result_is_a_typed_error() -> None:
    server, _ = foreign_server(lambda args: structured({"high": [1.5] * 100}))

    async def body(remote: ts.tools.Toolset) -> None:
        await remote.acall("forecast", {"city": "Oslo", "days": 2})

    with pytest.raises(RemoteResultError, match="more than the limit of 50"):
        use(server, body, max_result_chars=50)


def test_a_servers_is_error_result_is_a_typed_error() -> None:
    reply = types.CallToolResult(
        content=[types.TextContent(type="text", text="quota exceeded")], is_error=True
    )
    server, _ = foreign_server(lambda args: reply)

    async def body(remote: ts.tools.Toolset) -> None:
        await remote.acall("forecast", {"city": "Oslo", "days": 2})

    with pytest.raises(RemoteToolError, match="forecast failed: quota exceeded") as info:
        use(server, body)
    assert info.value.kind == "error"


def test_a_typedspy_servers_failures_keep_their_kind_and_paths() -> None:
    server = ts.mcp.serve(*app_tools)

    async def body(remote: ts.tools.Toolset) -> tuple[BaseException, BaseException, BaseException]:
        found = []
        for name, arguments in [
            ("broken_count", {"word": "a"}),
            ("delete_file", {"path": "/x"}),
            ("look_up_pet", {"pet_name": "Rex", "limit": 0}),
        ]:
            try:
                await remote.get(name).acall(arguments)
            except Exception as exc:
                found.append(exc)
        return tuple(found)  # type: ignore[return-value]

    broken, refused, invalid = use(server, body)
    assert isinstance(broken, RemoteToolError) and broken.kind == "invalid_result"
    assert [e.path for e in broken.errors] == [("total",)]
    assert isinstance(refused, RemoteToolError) and refused.kind == "rejected"
    assert isinstance(
        invalid, ts.errors.ToolArgumentsError
    )  # caught locally: the schema has minimum
    assert [e.path for e in invalid.errors] == [("limit",)]


def test_include_picks_tools_and_names_missing_ones() -> None:
    server, _ = foreign_server(lambda args: structured({"high": []}))

    async def picked(remote: ts.tools.Toolset) -> list[str]:
        return remote.names

    assert use(server, picked, include=["describe"]) == ["describe"]
    with pytest.raises(ts.ToolError, match="no tool named nope; it has: describe, forecast"):
        use(server, picked, include=["nope"])


def test_calls_after_the_block_are_a_connection_error() -> None:
    server, received = foreign_server(lambda args: structured({"high": []}))

    async def main() -> None:
        async with ts.mcp.tools(server) as remote:
            pass
        await remote.acall("forecast", {"city": "Oslo", "days": 2})

    with pytest.raises(RemoteToolError, match="the MCP connection is closed") as info:
        asyncio.run(main())
    assert info.value.kind == "connection"
    assert received == []


def test_the_sync_block_serves_sync_calls() -> None:
    server, received = foreign_server(lambda args: structured({"high": [3.0]}))
    with ts.mcp.tools(server) as remote:
        assert remote.get("forecast")(city="Oslo", days=1) == {"high": [3.0]}
    assert received == [{"name": "forecast", "city": "Oslo", "days": 1}]


def test_the_sync_block_serves_sync_calls_from_any_thread_and_async_calls() -> None:
    # The connection lives on typedspy's background loop, which always runs: a sync call from
    # another thread (its own loop, ADR-049) and an `asyncio.run` both reach it.
    server, received = foreign_server(lambda args: structured({"high": [3.0]}))
    results: list[Any] = []
    with ts.mcp.tools(server) as remote:
        forecast = remote.get("forecast")
        worker = threading.Thread(target=lambda: results.append(forecast(city="Oslo", days=1)))
        worker.start()
        worker.join(60)
        results.append(asyncio.run(forecast.acall({"city": "Rome", "days": 2})))
    assert results == [{"high": [3.0]}, {"high": [3.0]}]
    assert [r["city"] for r in received] == ["Oslo", "Rome"]


def test_an_async_block_used_from_another_loop_is_a_configuration_error() -> None:
    server, received = foreign_server(lambda args: structured({"high": []}))

    async def main() -> None:
        async with ts.mcp.tools(server) as remote:
            forecast = remote.get("forecast")
            other = threading.Thread(
                target=lambda: caught.append(
                    _raised(lambda: asyncio.run(forecast.acall({"city": "Oslo", "days": 1})))
                )
            )
            other.start()
            await asyncio.to_thread(other.join, 60)

    caught: list[BaseException | None] = []
    asyncio.run(main())
    assert isinstance(caught[0], ts.ConfigurationError), caught
    assert "entered on another event loop" in str(caught[0])
    assert received == []


def _raised(call: Callable[[], object]) -> BaseException | None:
    try:
        call()
    except BaseException as exc:
        return exc
    return None


def test_a_server_that_cannot_start_is_a_connection_error() -> None:
    dead = StdioServerParameters(command=sys.executable, args=["-c", "raise SystemExit(3)"])

    async def body(remote: ts.tools.Toolset) -> None:
        raise AssertionError("connected to a dead server")

    with pytest.raises(RemoteToolError, match="cannot connect to the MCP server") as info:
        use(dead, body)
    assert info.value.kind == "connection"


def test_a_given_client_must_be_entered_and_is_left_open() -> None:
    server, received = foreign_server(lambda args: structured({"high": [2.0]}))

    async def main() -> dict[str, Any]:
        client = Client(server)
        with pytest.raises(ts.ConfigurationError, match=r"enter the mcp\.Client first"):
            async with ts.mcp.tools(client):
                pass
        async with client:
            async with ts.mcp.tools(client) as remote:
                pass
            # the block did not close the caller's client, but its tools are done
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["forecast", "describe"]
            with pytest.raises(RemoteToolError, match="connection is closed"):
                await remote.acall("forecast", {"city": "Oslo", "days": 1})
            async with ts.mcp.tools(client) as again:
                return await again.acall("forecast", {"city": "Oslo", "days": 1})

    assert asyncio.run(main()) == {"high": [2.0]}
    assert received == [{"name": "forecast", "city": "Oslo", "days": 1}]


def listing_server(tools: list[types.Tool], reply: types.CallToolResult) -> Server:
    """A non-typedspy server listing ``tools``; every call answers ``reply``."""

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext, params: Any) -> types.CallToolResult:
        return reply

    return Server("listing", on_list_tools=list_tools, on_call_tool=call_tool)


def test_a_schema_outside_the_strict_subset_is_sent_as_written_and_refs_are_inlined() -> None:
    loose = {"type": "object", "properties": {"x": {"not": {"type": "string"}}}}
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}
    tree = {
        "type": "object",
        "$defs": {"node": node},
        "properties": {"root": {"$ref": "#"}, "node": {"$ref": "#/$defs/node"}},
    }
    tools = [
        types.Tool(name="loose", input_schema=loose),
        types.Tool(name="tree", input_schema=tree),
    ]

    async def body(remote: ts.tools.Toolset) -> list[Any]:
        return list(remote)

    loose_tool, tree_tool = use(listing_server(tools, structured(None)), body)
    spec = loose_tool.to_openai_tool()["function"]
    assert spec["strict"] is False and spec["parameters"] == loose  # `not` has no strict form

    def shown(name: str) -> dict[str, Any]:
        [extra] = [
            m for m in tree_tool.signature.input_fields[name].metadata if hasattr(m, "json_schema")
        ]
        return extra.json_schema

    # A reference to the root, or one recursing past 8 levels, is any value in the signature
    # (the remote schema still checks the arguments).
    assert shown("root") == {}
    depth, level = 0, shown("node")
    while level:
        depth, level = depth + 1, level["properties"]["next"]
    assert depth == 8


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ("{bad", "not valid JSON: Expecting property name enclosed in double quotes"),
        ("[1]", "arguments must be a JSON object, got list"),
    ],
)
def test_arguments_text_that_is_no_json_object_is_refused_before_the_call(
    arguments: str, error: str
) -> None:
    server, received = foreign_server(lambda args: structured({"high": []}))

    async def body(remote: ts.tools.Toolset) -> None:
        await remote["forecast"].acall(arguments)

    with pytest.raises(
        ts.errors.ToolArgumentsError, match=f"forecast: invalid arguments: {error}"
    ) as info:
        use(server, body)
    assert info.value.errors[0].path == () and info.value.errors[0].message.startswith(error)
    assert received == []


def test_a_servers_failure_keeps_invalid_arguments_and_names_content_it_cannot_show() -> None:
    invalid = types.CallToolResult(
        content=[types.TextContent(type="text", text="no")],
        structured_content={
            "error": {
                "kind": "invalid_arguments",
                "message": "days: out of season",
                "errors": [{"path": ["days"], "message": "out of season"}],
            }
        },
        is_error=True,
    )
    link = types.ResourceLink(type="resource_link", name="report", uri="file:///report.txt")
    linked = types.CallToolResult(content=[types.TextContent(type="text", text="see"), link])

    async def body(remote: ts.tools.Toolset) -> Any:
        return await remote.acall("describe", {})

    with pytest.raises(ts.errors.ToolArgumentsError, match="days: out of season") as info:
        use(
            listing_server([types.Tool(name="describe", input_schema={"type": "object"})], invalid),
            body,
        )
    assert [e.path for e in info.value.errors] == [("days",)]
    tools = [types.Tool(name="describe", input_schema={"type": "object"})]
    assert use(listing_server(tools, linked), body) == {
        "result": "see\n[resource_link content, not shown]"
    }
