"""The MCP client against hostile MCP servers (issue 21: D11, D12 and the observations).

A remote tool's schemas come from the server: checking with them must not fetch what they name
(D11) nor run their patterns on a backtracking engine (D12). Each case drives the real SDK
client against a real server (in process, or a stdio subprocess) and ends in a value or a typed
error. The old code blocked the loop inside ``re`` for these inputs (for ever, in practice);
`hang_guard` (conftest.py) turns such a hang into a failure after 30 s, since ``re`` checks
signals.
"""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

import typedspy as ts
import typedspy.mcp
from typedspy.mcp import RemoteResultError, RemoteToolError

HERE = Path(__file__).parent
EVIL = "^(a+)+$"  # ~2^n steps on "a" * n + "!" for a backtracking engine
LONG = "a" * 5000 + "!"
OBJECT = {"type": "object", "properties": {"x": {"type": "integer"}}}


def hostile(tools: dict[str, dict[str, Any]], reply: Any = None) -> Server[Any]:
    """An in-process server listing ``tools`` (name: Tool fields); every call answers ``reply``
    as structured content (``ran`` as text when None)."""
    listing = [types.Tool.model_validate({"name": n, **spec}) for n, spec in tools.items()]

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: ServerRequestContext[Any], params: Any) -> types.CallToolResult:
        text = [types.TextContent(type="text", text="ran")]
        return types.CallToolResult(content=text, structured_content=reply)

    return Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


def outcome(body: Callable[[], Awaitable[Any]]) -> Any:
    """What ``body`` returned, or the `TypedspyError` it raised."""

    async def main() -> Any:
        try:
            return await body()
        except ts.TypedspyError as exc:
            return exc

    return asyncio.run(main())


def call(server: Any, name: str, arguments: dict[str, Any], **options: Any) -> Any:
    async def body() -> Any:
        async with ts.mcp.tools(server, **options) as remote:
            return await remote.acall(name, arguments)

    return outcome(body)


# D11: a $ref names what the client would fetch.


class Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str]

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "integer"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def counting_url() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (Counting,), {"hits": hits})
    with http.server.HTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever)
        thread.start()
        try:
            yield f"http://127.0.0.1:{httpd.server_port}/internal/admin?token=1", hits
        finally:
            httpd.shutdown()
            thread.join()


@pytest.mark.parametrize("where", ["http", "file"])
def test_a_remote_ref_is_never_retrieved_and_is_a_schema_error_naming_tool_and_ref(
    where: str, counting_url: tuple[str, list[str]], tmp_path: Path
) -> None:
    url, hits = counting_url
    if where == "file":
        (tmp_path / "schema.json").write_text('{"type": "integer"}')
        url = (tmp_path / "schema.json").as_uri()
    local = {
        "type": "object",
        "$defs": {"count": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/$defs/count"}},
    }
    server = hostile(
        {
            "fetching": {"inputSchema": {"type": "object", "properties": {"x": {"$ref": url}}}},
            "local": {"inputSchema": local},
        }
    )

    failed = call(server, "fetching", {"x": 1})

    assert hits == []  # the old code fetched the URL while checking the arguments
    assert isinstance(failed, ts.SchemaError), failed
    assert str(failed).startswith(
        f"a tool of the MCP server cannot be used: fetching's inputSchema: $ref {url!r} "
        "at properties.x.$ref does not resolve within the schema"
    )
    assert "never retrieved" in str(failed)
    assert "include=['local']" in str(failed)
    # A reference inside the schema still resolves, and checks.
    assert call(server, "local", {"x": 1}, include=["local"]) == {"result": "ran"}
    refused = call(server, "local", {"x": "one"}, include=["local"])
    assert isinstance(refused, ts.errors.ToolArgumentsError)
    assert [str(e) for e in refused.errors] == ["x: 'one' is not of type 'integer'"]


# D12: patterns run on RE2; what RE2 cannot run is refused when the tool is listed.


async def beside_a_ticker(work: Callable[[], Awaitable[Any]]) -> tuple[Any, float]:
    """``work``'s outcome and the longest gap between the ticks of a task run beside it."""
    ticks = [time.monotonic()]

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.005)
            ticks.append(time.monotonic())

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.02)
    try:
        result: Any = await work()
    except ts.TypedspyError as exc:
        result = exc
    await asyncio.sleep(0.02)
    ticker.cancel()
    ticks.append(time.monotonic())
    return result, max(b - a for a, b in itertools.pairwise(ticks))


INPUTS = {
    "pattern": ({"properties": {"s": {"type": "string", "pattern": EVIL}}}, {"s": LONG}),
    "patternProperties": (
        {"patternProperties": {EVIL: {}, "!$": {"type": "integer"}}},
        {LONG: "not an integer"},
    ),
    "additionalProperties": (
        {"patternProperties": {EVIL: {}}, "additionalProperties": False},
        {LONG: 1},
    ),
    "propertyNames": ({"propertyNames": {"pattern": EVIL}}, {LONG: 1}),
}


@pytest.mark.parametrize("keyword", sorted(INPUTS))
def test_a_backtracking_input_pattern_answers_at_once_and_the_loop_keeps_ticking(
    keyword: str, hang_guard: None
) -> None:
    schema, arguments = INPUTS[keyword]
    server = hostile({"t": {"inputSchema": {"type": "object", **schema}}})

    async def body() -> tuple[Any, float]:
        async with ts.mcp.tools(server, timeout=1) as remote:
            return await beside_a_ticker(lambda: remote.acall("t", arguments))

    refused, gap = asyncio.run(body())

    assert isinstance(refused, ts.errors.ToolArgumentsError), refused
    assert refused.errors, refused
    assert gap < 5  # the old code held the loop for ever (2^5000 steps)


def test_a_backtracking_output_pattern_answers_at_once_and_the_loop_keeps_ticking(
    hang_guard: None,
) -> None:
    # The SDK checks results against the outputSchema too, with `re`, on the same loop.
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}}
    server = hostile({"t": {"inputSchema": OBJECT, "outputSchema": schema}}, reply={"s": LONG})

    async def body() -> tuple[Any, float]:
        async with ts.mcp.tools(server, timeout=1) as remote:
            return await beside_a_ticker(lambda: remote.acall("t", {"x": 1}))

    refused, gap = asyncio.run(body())

    assert isinstance(refused, RemoteResultError), refused
    assert refused.errors[0].path == ("s",)
    assert "does not match '^(a+)+$'" in refused.errors[0].message
    assert len(refused.errors[0].message) < 400  # the 5,001 characters are cut
    assert gap < 5


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"properties": {"s": {"pattern": "^(?=a)a+$"}}}, "'^(?=a)a+$' at properties.s.pattern"),
        ({"properties": {"s": {"pattern": r"(a)\1"}}}, r"'(a)\\1' at properties.s.pattern"),
        (
            {"patternProperties": {"(?<!x)y": {}}},
            "'(?<!x)y' at patternProperties.(?<!x)y",
        ),
        (
            {"patternProperties": {"^x": {}}, "unevaluatedProperties": False},
            "unevaluatedProperties (at <root>) in a schema with patternProperties",
        ),
        (  # a $ref reaches patternProperties where no keyword walk looks: it still ran on `re`
            {
                "$ref": "#/hidden",
                "unevaluatedProperties": False,
                "hidden": {"patternProperties": {EVIL: {}}},
            },
            "unevaluatedProperties (at <root>) in a schema with patternProperties (at hidden)",
        ),
    ],
)
def test_a_pattern_re2_cannot_run_is_a_schema_error_when_listed(
    schema: dict[str, Any], named: str
) -> None:
    where = "inputSchema"
    tools = {"t": {"inputSchema": {"type": "object", **schema}}, "fine": {"inputSchema": OBJECT}}
    if "unevaluated" in named:  # and in an outputSchema as well
        where = "outputSchema"
        tools["t"] = {"inputSchema": OBJECT, "outputSchema": {"type": "object", **schema}}

    failed = call(hostile(tools), "fine", {"x": 1})

    assert isinstance(failed, ts.SchemaError), failed
    assert f"t's {where}: " in str(failed)
    assert named in str(failed)
    assert "include=['fine']" in str(failed)


@pytest.mark.parametrize(
    ("hidden", "named"),
    [
        ({"pattern": "(?=a)"}, "a pattern cannot run on RE2 (invalid perl operator: (?=)"),
        ({"$ref": "#/nowhere"}, "$ref '/nowhere' does not resolve within the schema"),
    ],
)
def test_a_pattern_or_ref_the_listing_check_cannot_see_is_a_schema_error_when_called(
    hidden: dict[str, Any], named: str
) -> None:
    # The listing walks the applicator keywords; a $ref may point anywhere in the document,
    # here into a keyword no draft knows. Reaching it while checking is still refused.
    schema = {"type": "object", "properties": {"x": {"$ref": "#/hidden"}}, "hidden": hidden}

    failed = call(hostile({"t": {"inputSchema": schema}}), "t", {"x": "a"})

    assert isinstance(failed, ts.SchemaError), failed
    assert str(failed).startswith(f"t's inputSchema: {named}")


def test_pattern_and_additional_properties_check_objects_on_re2_and_pass_other_values() -> None:
    nested = {
        "patternProperties": {"^a": {"type": "integer"}},
        "additionalProperties": {"type": "string"},
    }
    server = hostile({"t": {"inputSchema": {"type": "object", "properties": {"o": nested}}}})

    refused = call(server, "t", {"o": {"a1": "x", "b": 2}})

    assert isinstance(refused, ts.errors.ToolArgumentsError), refused
    assert [str(e) for e in refused.errors] == [
        "o.a1: 'x' is not of type 'integer'",
        "o.b: 2 is not of type 'string'",
    ]
    assert call(server, "t", {"o": {"a1": 1, "b": "s"}}) == {"result": "ran"}
    assert call(server, "t", {"o": 5}) == {"result": "ran"}  # no object: nothing to match


DRAFT_07 = "http://json-schema.org/draft-07/schema#"
DRAFT_2020 = "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("draft", [DRAFT_2020, DRAFT_07])
def test_a_subschema_naming_its_own_draft_still_matches_its_pattern_on_re2(
    draft: str, hang_guard: None
) -> None:
    # jsonschema picks a subschema's validator by its $schema: the stock one used `re`.
    nested = {"$schema": draft, "type": "string", "pattern": EVIL}
    server = hostile({"t": {"inputSchema": {"type": "object", "properties": {"x": nested}}}})

    refused = call(server, "t", {"x": LONG})

    assert isinstance(refused, ts.errors.ToolArgumentsError), refused
    assert [e.path for e in refused.errors] == [("x",)]
    assert call(server, "t", {"x": "aaa"}) == {"result": "ran"}


def test_unique_items_over_thousands_of_objects_answers_at_once(hang_guard: None) -> None:
    # jsonschema compared every pair of unhashable items: 20,000 objects took minutes,
    # on arguments a model writes and on enums a server lists (draft 4's metaschema).
    unique = {"type": "array", "uniqueItems": True}
    enum = {"enum": [{"id": i} for i in range(20_000)]}
    draft_4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}
    server = hostile(
        {
            "t": {"inputSchema": {"type": "object", "properties": {"x": unique}}},
            "e": {"inputSchema": {**draft_4, "properties": {"x": enum}}},
        }
    )
    items: list[Any] = [{"id": i} for i in range(20_000)]

    assert call(server, "t", {"x": items}) == {"result": "ran"}
    repeated = call(server, "t", {"x": [*items, {"id": 7}]})
    assert isinstance(repeated, ts.errors.ToolArgumentsError), repeated
    assert "has non-unique elements" in str(repeated)
    # Equal as JSON Schema says: 1 and 1.0 are equal, true and 1 are not, key order is not.
    assert isinstance(call(server, "t", {"x": [1, 1.0]}), ts.errors.ToolArgumentsError)
    assert call(server, "t", {"x": [True, 1, [1], {"a": 1, "b": 2}]}) == {"result": "ran"}
    swapped = call(server, "t", {"x": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]})
    assert isinstance(swapped, ts.errors.ToolArgumentsError)
    assert call(server, "e", {"x": {"id": 5}}) == {"result": "ran"}


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(levels):
        schema = {"not": schema}
    return {"type": "object", "properties": {"x": schema}}


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        (_deep(99), "t's inputSchema: properties.x" + ".not" * 99 + " is nested 101 objects"),
    ],
)
def test_a_schema_jsonschema_cannot_take_is_a_schema_error_when_listed(
    schema: dict[str, Any], named: str
) -> None:
    # This raised RecursionError out of the listing.
    failed = call(hostile({"t": {"inputSchema": schema}, "fine": {"inputSchema": OBJECT}}), "t", {})

    assert isinstance(failed, ts.SchemaError), failed
    assert named in str(failed)
    assert "include=['fine']" in str(failed)
    assert call(hostile({"t": {"inputSchema": _deep(98)}}), "t", {"x": 1}) == {"result": "ran"}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "$ref": "#"},
        {"type": "object", "$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
        {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        },
    ],
)
def test_a_ref_cycle_that_never_moves_into_the_value_is_a_schema_error_when_called(
    schema: dict[str, Any],
) -> None:
    failed = call(hostile({"t": {"inputSchema": schema}}), "t", {"x": 1})  # was RecursionError

    assert isinstance(failed, ts.SchemaError), failed
    assert str(failed).startswith("t's inputSchema: checking a value recursed without end")
    # A recursive schema that moves into the value checks values as deep as arguments go.
    tree = {"type": "object", "properties": {"c": {"$ref": "#"}}}
    value: dict[str, Any] = {}
    for _ in range(190):
        value = {"c": value}
    assert call(hostile({"t": {"inputSchema": tree}}), "t", value) == {"result": "ran"}


def test_references_that_multiply_are_a_schema_error_when_called_and_the_loop_keeps_ticking(
    hang_guard: None,
) -> None:
    # Each definition names the next twice: checking one value applied 2^40 subschemas.
    defs: dict[str, Any] = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(40)
    }
    defs["d40"] = {"type": "object"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}

    failed = call(hostile({"t": {"inputSchema": schema}}), "t", {"x": {}})

    assert isinstance(failed, ts.SchemaError), failed
    assert str(failed).startswith("t's inputSchema: checking a value applied more than 100,040 ")
    # A value of many items gets more: 20,000 objects through a $ref and anyOf check in full.
    rows = {"$ref": "#/$defs/row"}
    row = {"anyOf": [{"type": "object", "properties": {"n": {"type": "integer"}}}, {}]}
    listing = {"type": "object", "properties": {"r": {"type": "array", "items": rows}}}
    server = hostile({"t": {"inputSchema": {**listing, "$defs": {"row": row}}}})
    assert call(server, "t", {"r": [{"n": i} for i in range(20_000)]}) == {"result": "ran"}


def test_a_result_past_max_result_chars_is_refused_before_its_schema_checks_it(
    hang_guard: None,
) -> None:
    # A server's result and its outputSchema are both the server's: checking 300,000 items
    # against references that multiply took the budget of 6 million subschemas (40 s on the
    # loop) before the size was measured.
    defs: dict[str, Any] = {
        f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(30)
    }
    defs["d30"] = {}
    items = {"type": "array", "items": {"$ref": "#/$defs/d0"}}
    output = {"type": "object", "properties": {"r": items}, "$defs": defs}
    server = hostile({"t": {"inputSchema": OBJECT, "outputSchema": output}}, {"r": [0] * 300_000})

    failed = call(server, "t", {"x": 1})

    assert isinstance(failed, RemoteResultError), failed
    assert str(failed) == (
        "t returned 900007 characters, more than the limit of 100000 (max_result_chars)"
    )


def test_properties_whose_made_up_field_names_collide_each_keep_their_argument() -> None:
    # "a b" is no identifier: its field was named field_1, the name of the first property,
    # and the first property's argument was dropped.
    received: list[dict[str, Any]] = []
    listing = [
        types.Tool(
            name="t",
            input_schema={
                "type": "object",
                "properties": {"field_1": {"type": "integer"}, "a b": {"type": "string"}},
            },
        )
    ]

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def call_tool(ctx: ServerRequestContext[Any], params: Any) -> types.CallToolResult:
        received.append(params.arguments)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    server = Server("colliding", on_list_tools=list_tools, on_call_tool=call_tool)

    assert call(server, "t", {"field_1": 1, "a b": "two"}) == {"result": "ran"}
    assert received == [{"field_1": 1, "a b": "two"}]


def _objects(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_objects(v) for v in value.values())
    return sum(_objects(v) for v in value) if isinstance(value, list) else 0


def test_definitions_that_each_name_the_next_many_times_are_listed_in_bounded_size() -> None:
    # Each definition names the next one 4 times: inlining the references for the signature
    # made 4^9 = 262,144 objects (8^9 hung the listing, holding gigabytes).
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {f"p{j}": {"$ref": f"#/$defs/d{i + 1}"} for j in range(4)},
        }
        for i in range(9)
    }
    defs["d9"] = {"type": "integer"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    server = hostile({"t": {"inputSchema": schema}})

    async def body() -> Any:
        async with ts.mcp.tools(server) as remote:
            [tool] = list(remote)
            try:
                await remote.acall("t", {"x": {"p0": {"p1": 5}}})
            except ts.errors.ToolArgumentsError as exc:
                return tool, exc
            return tool, None

    tool, refused = outcome(body)

    shown = [
        m.json_schema
        for m in tool.signature.input_fields["x"].metadata
        if hasattr(m, "json_schema")
    ]
    assert 1_000 < _objects(shown) <= 5_001
    assert isinstance(refused, ts.errors.ToolArgumentsError)  # the remote schema still checks
    assert [e.path for e in refused.errors] == [("x", "p0", "p1")]


# Observations: a broken listing, an unreadable reply, the served error's URL.


def test_a_listing_with_unusable_tools_names_every_one_and_the_way_to_use_the_rest() -> None:
    server = hostile(
        {
            "ok": {"inputSchema": OBJECT},
            "bad_type": {"inputSchema": {"type": "object", "required": 5}},
            "bad_pattern": {"inputSchema": {"type": "object", "pattern": "(?=x)"}},
        }
    )

    failed = call(server, "ok", {"x": 1})

    assert isinstance(failed, ts.SchemaError), failed
    assert str(failed).startswith("2 of the MCP server's tools cannot be used: ")
    assert "bad_type's inputSchema is not valid JSON Schema" in str(failed)
    assert "bad_pattern's inputSchema: the pattern '(?=x)' at pattern" in str(failed)
    assert str(failed).endswith("; to use the others, pass include=['ok']")
    assert call(server, "ok", {"x": 1}, include=["ok"]) == {"result": "ran"}


def test_tool_names_no_endpoint_takes_or_listed_twice_are_named_with_the_way_to_the_rest() -> None:
    # Such a name was a bare ToolError without the include= that uses the other tools, and
    # for a name listed twice it said to rename the tool with @ts.tool(name=...).
    server = hostile({"a tool": {"inputSchema": OBJECT}, "ok": {"inputSchema": OBJECT}})
    twice = [types.Tool.model_validate({"name": n, "inputSchema": OBJECT}) for n in "tto"]

    async def list_twice(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=twice)

    listed_twice = Server("twice", on_list_tools=list_twice)

    failed = call(server, "ok", {"x": 1})
    doubled = call(listed_twice, "o", {"x": 1})
    picked = call(listed_twice, "t", {"x": 1}, include=["t"])

    assert isinstance(failed, ts.errors.ToolError), failed
    assert str(failed) == (
        "a tool of the MCP server cannot be used: invalid tool name 'a tool': use 1 to 64 "
        "characters from [A-Za-z0-9_-] (for example 'a_tool'); to use the others, pass "
        "include=['ok']"
    )
    assert isinstance(doubled, ts.errors.ToolError), doubled
    assert str(doubled) == (
        "a tool of the MCP server cannot be used: 't': the server lists 2 tools of this name; "
        "to use the others, pass include=['o']"
    )
    assert isinstance(picked, ts.errors.ToolError)  # not one of the two, silently
    assert "the server lists 2 tools of this name" in str(picked)
    assert call(server, "ok", {"x": 1}, include=["ok"]) == {"result": "ran"}


def test_a_listing_error_shows_a_megabyte_tool_name_cut_in_its_middle() -> None:
    # The error quoted each name whole: 2 MB of message (and of every log line with it).
    tools = {"a" * 1_000_000: OBJECT, "b" * 1_000_000 + " ": OBJECT, "fine": OBJECT}
    server = hostile({name: {"inputSchema": schema} for name, schema in tools.items()})

    failed = call(server, "fine", {"x": 1})

    assert isinstance(failed, ts.ToolError), failed
    shown = str(failed)
    assert len(shown) < 2_500
    assert shown.startswith("2 of the MCP server's tools cannot be used: invalid tool name 'aaa")
    assert shown.count("characters ...]") == 2  # each name cut in its middle, the reason kept
    assert "bbbbb ': use 1 to 64 characters from [A-Za-z0-9_-]" in shown
    assert shown.endswith("; to use the others, pass include=['fine']")


def test_a_listing_of_thousands_of_tools_is_refused_unless_include_picks_some() -> None:
    # Each tool is a schema check run on the event loop: 10,000 blocked it for about 17 s, and
    # a missing include= name listed every tool the server has in its message.
    server = hostile({f"t{i:04}": {"inputSchema": OBJECT} for i in range(1001)})

    refused = call(server, "t0000", {"x": 1})
    missing = call(server, "t0000", {"x": 1}, include=["t0000", "nope"])

    assert isinstance(refused, ts.ToolError), refused
    assert "lists 1001 tools; at most 1000 are used from a whole listing" in str(refused)
    assert "t0019 and 981 more" in str(refused)
    assert isinstance(missing, ts.ToolError) and "and 981 more" in str(missing)
    assert call(server, "t0000", {"x": 1}, include=["t0000"]) == {"result": "ran"}


@pytest.mark.parametrize("tool", ["garbled", "deep"])
def test_an_unreadable_reply_is_a_protocol_error_when_it_arrives(tool: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "hostile_mcp.py")])

    async def body() -> tuple[Any, Any]:
        async with ts.mcp.tools(params, timeout=30) as remote:
            try:
                await remote.acall(tool, {"x": 1})
            except RemoteToolError as exc:
                failed: Any = exc
            return failed, await remote.acall("echo", {"x": 1})

    failed, after = outcome(body)

    # The old code waited for the whole timeout, then said "timed out".
    assert isinstance(failed, RemoteToolError), failed
    assert failed.kind == "protocol"
    assert f"{tool}: the MCP server sent a message that is not valid JSON-RPC" in str(failed)
    assert after == {"result": "fine"}  # the connection goes on


def test_a_reply_that_is_no_call_result_is_a_result_error_and_a_crash_a_lost_connection() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "hostile_mcp.py")])

    async def body() -> list[Any]:
        failures: list[Any] = []
        async with ts.mcp.tools(params, timeout=30) as remote:
            for tool in ("invalid", "echo", "crash", "echo"):
                try:
                    failures.append(await remote.acall(tool, {"x": 1}))
                except RemoteToolError as exc:
                    failures.append(exc)
        return failures

    invalid, fine, crashed, after = outcome(body)

    assert isinstance(invalid, RemoteResultError), invalid
    assert str(invalid) == "invalid: the server's reply is not a valid tools/call result"
    assert fine == {"result": "fine"}
    # The old client said the server "answered with an error: Connection closed" (kind
    # "protocol"): a server that died is a lost connection, as the docs say.
    for lost, tool in ((crashed, "crash"), (after, "echo")):
        assert isinstance(lost, RemoteToolError) and lost.kind == "connection", lost
        assert str(lost).startswith(f"{tool}: the connection to the MCP server was lost: ")


def failing(where: str, code: int = -32001) -> Server[Any]:
    """An in-process server whose listing or call answers with an MCP error response."""

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        if where == "list":
            raise MCPError(code=-32001, message="the listing is down")
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema=OBJECT)])

    async def call_tool(ctx: ServerRequestContext[Any], params: Any) -> types.CallToolResult:
        raise MCPError(code=code, message="the tool is down")

    return Server("failing", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.mark.parametrize(
    ("where", "code", "message"),
    [
        ("list", -32001, "the MCP server could not list its tools: the listing is down"),
        ("call", -32001, "t: the MCP server answered with an error: the tool is down"),
        # JSON-RPC's generic server error, the code the SDK also gives a closed connection
        ("call", -32000, "t: the MCP server answered with an error: the tool is down"),
    ],
)
def test_an_mcp_error_response_is_a_protocol_error(where: str, code: int, message: str) -> None:
    failed = call(failing(where, code), "t", {"x": 1})

    assert isinstance(failed, RemoteToolError) and failed.kind == "protocol", failed
    assert str(failed) == message


@pytest.mark.parametrize(
    ("reply", "shown", "paths"),
    [
        ({"s": 5}, "s: 5 is not of type 'string'", [("s",)]),
        (None, "Tool t has an output schema but did not return structured content", []),
    ],
)
def test_on_a_given_client_the_sdks_own_result_check_is_a_result_error(
    reply: Any, shown: str, paths: list[tuple[str, ...]]
) -> None:
    # A given client keeps the SDK's own check of results, which raises a bare RuntimeError.
    schema = {"type": "object", "properties": {"s": {"type": "string"}}}
    server = hostile({"t": {"inputSchema": OBJECT, "outputSchema": schema}}, reply=reply)

    async def body() -> Any:
        async with Client(server) as client, ts.mcp.tools(client) as remote:
            try:
                return await remote.acall("t", {"x": 1})
            except ts.TypedspyError as exc:
                return exc

    failed = asyncio.run(body())

    assert isinstance(failed, RemoteResultError), failed
    assert str(failed) == f"t returned a result that violates its own outputSchema: {shown}"
    assert [e.path for e in failed.errors] == paths


def test_a_served_failure_does_not_show_the_internal_endpoint() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}/internal/v1"

    class Answer(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()

    lm = ts.LM("m", base_url=base_url, api_key="sk-test", max_retries=0)
    server = ts.mcp.serve(ts.Predict(Answer, lm=lm))

    async def body() -> types.CallToolResult:
        async with Client(server) as client:
            return await client.call_tool("answer", {"question": "q"})

    try:
        result = outcome(body)
    finally:
        lm.close()

    assert result.is_error
    text = result.content[0].text
    assert text.startswith("LMConnectionError: m at [url]: could not connect")
    assert result.structured_content["error"]["message"] == text
    assert str(port) not in text and "internal" not in text


# Serving: what a served tool hands back must reach the client as JSON, or as a typed failure.


def test_a_served_result_utf8_cannot_encode_arrives_repaired_and_the_server_stays_up() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "typedspy.mcp", "served_mcp:tools"],
        env={**os.environ, "PYTHONPATH": str(HERE)},
    )

    async def body() -> tuple[Any, Any, Any]:
        async with ts.mcp.tools(params, timeout=30) as remote:
            name = await remote.acall("file_name", {})
            try:
                await remote.acall("open_report", {})
            except RemoteToolError as exc:
                failed: Any = exc
            return name, failed, await remote.acall("ping", {})

    name, failed, after = outcome(body)

    # The old server could not encode the reply: its process ended and every call failed.
    assert name == {"result": "report-\ufffd.txt"}
    assert isinstance(failed, RemoteToolError), failed
    assert failed.kind == "error"
    assert str(failed) == "FileNotFoundError: no such file: report-\ufffd.txt"
    assert after == {"result": "pong"}


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_served_result_with_a_number_json_lacks_is_an_invalid_result_naming_its_path(
    number: float,
) -> None:
    def measure() -> dict[str, list[float]]:
        """Measure."""
        return {"values": [1.0, number]}

    async def body() -> types.CallToolResult:
        async with Client(ts.mcp.serve(measure)) as client:
            return await client.call_tool("measure", {})

    result = outcome(body)

    # The old server sent the text `NaN` (not JSON) and null in structuredContent.
    assert result.is_error
    error = result.structured_content["error"]
    assert error["kind"] == "invalid_result"
    assert error["errors"] == [
        {"path": ["result", "values", 1], "message": "NaN or infinity: JSON has no such number"}
    ]
    assert result.content[0].text.startswith("the result cannot be sent: result.values[1]: ")


# Calling: arguments the wire cannot carry are refused before anything is sent.


def _nested(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"x": float("nan")}, "x: nan: JSON has no such number"),
        ({"x": {"y": [1.0, float("inf")]}}, "x.y[1]: inf: JSON has no such number"),
        ({"x": "half an emoji \ud83d"}, "x: text with a lone surrogate, which UTF-8 cannot encode"),
        ('{"x": "\\ud83d"}', "x: text with a lone surrogate, which UTF-8 cannot encode"),
        ({"x": _cycle()}, "x: nested deeper than 200 levels"),
        ({"x": _nested(300)}, "x: nested deeper than 200 levels"),
        ({"x": {1, 2}}, "x: set is no JSON value"),
        ({"x": object()}, "x: object is no JSON value"),
        ({"x": {1: "a"}}, "x: the key 1 is not JSON text"),
        ({"x": {1.5: "a"}}, "x: the key 1.5 is not JSON text"),
    ],
    ids=[
        "nan",
        "inf",
        "surrogate",
        "escaped-surrogate",
        "cycle",
        "deep",
        "set",
        "object",
        "key",
        "float-key",
    ],
)
def test_arguments_json_cannot_carry_are_refused_naming_the_path_and_nothing_is_sent(
    arguments: Any, error: str
) -> None:
    sent: list[Any] = []

    async def call_tool(ctx: ServerRequestContext[Any], params: Any) -> types.CallToolResult:
        sent.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema={"type": "object"})])

    server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)

    async def body() -> Any:
        async with ts.mcp.tools(server) as remote:
            return await remote["t"].acall(arguments)

    failed = outcome(body)

    # The old client sent NaN as null and the set as a list; a lone surrogate broke a stdio
    # connection, and a cycle or deep nesting was the SDK's bare ValueError.
    assert isinstance(failed, ts.errors.ToolArgumentsError), failed
    assert [str(e) for e in failed.errors] == [error]
    assert sent == []


@pytest.mark.parametrize(
    ("option", "shown"),
    [
        ({"timeout": float("nan")}, "timeout=nan"),
        ({"timeout": "5"}, "timeout='5'"),
        ({"timeout": -1}, "timeout=-1"),
        ({"max_result_chars": 0}, "max_result_chars=0"),
        ({"max_result_chars": 1e6}, "max_result_chars=1000000.0"),
        ({"include": "ok"}, "include='ok'"),
        ({"include": [1]}, "include=[1]"),
    ],
)
def test_options_of_ts_mcp_tools_are_checked_when_built(option: dict[str, Any], shown: str) -> None:
    with pytest.raises(ts.ConfigurationError, match=re.escape(f"ts.mcp.tools({shown})")):
        ts.mcp.tools(hostile({"ok": {"inputSchema": OBJECT}}), **option)


def hostile_tool() -> str:
    """Answer."""
    return "ok"


@pytest.mark.parametrize(
    ("options", "shown"),
    [
        ({"transport": "tcp", "port": 70_000}, "run(transport='tcp')"),  # was served as HTTP
        ({"transport": "http", "port": 70_000}, "run(port=70000)"),  # was an OverflowError
        ({"transport": "http", "port": -1}, "run(port=-1)"),
    ],
)
def test_run_refuses_a_transport_or_port_it_cannot_serve(
    options: dict[str, Any], shown: str
) -> None:
    server = ts.mcp.serve(hostile_tool)
    with pytest.raises(ts.ConfigurationError, match=re.escape(shown)):
        ts.mcp.run(server, **options)


def test_a_malformed_answer_to_a_served_confirmation_is_an_is_error_result_naming_it() -> None:
    # A client the SDK does not check (raw JSON-RPC lines over stdio) answers the question with
    # an action MCP has no word for. The old server let the ValidationError reach the SDK, and
    # the caller got a JSON-RPC error for tools/call instead of the call's isError result.
    server = subprocess.Popen(
        [sys.executable, "-m", "typedspy.mcp", "served_mcp:tools"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(HERE)},
        text=True,
    )
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None and stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stdout])
    reader.start()

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        stdin.flush()

    def received() -> dict[str, Any]:
        return json.loads(lines.get(timeout=30))  # bounded: a silent server fails the test

    try:
        client = {"name": "raw", "version": "0"}
        hello: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
        }
        send({"id": 1, "method": "initialize", "params": {**hello, "clientInfo": client}})
        assert received()["id"] == 1
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "erase_report"}})
        question = received()
        assert question["method"] == "elicitation/create"
        send({"id": question["id"], "result": {"action": "maybe"}})
        answer = received()
        send({"id": 3, "method": "tools/call", "params": {"name": "ping", "arguments": {}}})
        after = received()
    finally:
        stdin.close()  # the server ends when its stdin closes; then its stdout does
        server.wait(30)
        reader.join(30)
        stdout.close()

    assert answer["id"] == 2
    result = answer["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["kind"] == "error"
    assert error["message"] == (
        "erase_report needs a person's confirmation (Erase the report?) and the client's answer "
        "is malformed (action: Input should be 'accept', 'cancel' or 'decline'), "
        "so it did not run"
    )
    assert after["result"]["structuredContent"] == {"result": "pong"}  # the server goes on


def test_an_elicitation_the_client_never_declared_is_answered_with_an_error() -> None:
    # A 2025-06-18 server asks the user a question in the middle of tools/call although the
    # client declared no elicitation. The client answers the question with a JSON-RPC error
    # (-32600, "Elicitation not supported"), not a made-up decline (nobody was asked), and the
    # call goes on to the server's own answer: no exception group, nothing left hanging (ADR-102).
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "eliciting_mcp.py")])

    async def body() -> Any:
        async with ts.mcp.tools(params, timeout=30) as remote:
            return await remote.acall("ask", {})

    answer = json.loads(outcome(body)["result"])
    assert answer == {"error": {"code": -32600, "message": "Elicitation not supported"}}

    with ts.mcp.tools(params, timeout=30) as remote:  # the sync road, on the background loop
        assert json.loads(remote.get("ask")()["result"]) == answer


def test_an_elicitation_is_answered_by_the_callback_given() -> None:
    params = StdioServerParameters(command=sys.executable, args=[str(HERE / "eliciting_mcp.py")])
    questions: list[str] = []

    async def decline(context: Any, question: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(question.message)
        return types.ElicitResult(action="decline")

    async def body() -> Any:
        async with ts.mcp.tools(params, timeout=30, elicitation_callback=decline) as remote:
            return await remote.acall("ask", {})

    assert json.loads(outcome(body)["result"]) == {"result": {"action": "decline"}}
    assert questions == ["Delete everything?"]


def test_a_call_the_server_fails_after_an_undeclared_elicitation_is_a_remote_tool_error() -> None:
    # The server's tool needed the answer and fails the call with the client's error: the
    # caller gets a typed RemoteToolError quoting it, from either road, not an exception group.
    script = [str(HERE / "eliciting_mcp.py"), "--refuse"]
    params = StdioServerParameters(command=sys.executable, args=script)

    async def body() -> Any:
        async with ts.mcp.tools(params, timeout=30) as remote:
            return await remote.acall("ask", {})

    failed = outcome(body)
    assert isinstance(failed, RemoteToolError)
    assert "the tool needed an answer" in str(failed) and "Elicitation not supported" in str(failed)

    with ts.mcp.tools(params, timeout=30) as remote, pytest.raises(RemoteToolError) as caught:
        remote.get("ask")()
    assert str(caught.value) == str(failed)
