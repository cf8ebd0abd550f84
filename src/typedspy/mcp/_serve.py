"""`serve`: typedspy tools and signature-bound modules as an MCP server.

Built on the SDK's low-level ``Server`` (the one ``MCPServer`` wraps): ``MCPServer`` derives
schemas from a function's parameters and validates arguments with its own model, while a
typedspy tool already has both schemas from the schema compiler (`Tool.to_mcp_tool`) and
validates its own arguments, so the low-level handlers serve those unchanged (ADR-019).

A success is ``structuredContent`` (the outputs as JSON, union members tagged with ``_type``)
plus the same JSON as one text block for clients that read only text. A failure is an
``isError`` result whose text lists ``path: message`` lines and whose ``structuredContent``
carries the same facts as data: ``{"error": {"kind", "message", "errors": [{"path", "message"}]}}``.
The client side (`typedspy.mcp.tools`) reads that shape back into typed errors. A failure the
tool did not word for its caller (``kind="error"``: an LM's, or any exception) is sent without
the URLs in its text: they name the server's internal endpoints.

A `confirm_first` tool's question becomes a form elicitation, and the protocol decides the
transport. From 2026-07-28 a ``tools/call`` that needs an answer returns an
``InputRequiredResult`` and the client calls again with ``inputResponses``; older revisions
send an ``elicitation/create`` request in the middle of the call. Either way the answer is
keyed by the call's ``confirmation_id`` (tool name plus canonical arguments), so an answer
given for other arguments never approves this call. A client that declared no form
elicitation, or answers that it has no such method, gets a clear refusal; a question the client
fails to answer (an error reply, a malformed answer, a lost connection) is an ``isError``
result naming the failure: either way the tool does not run (ADR-097).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeAlias

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least
from pydantic import ValidationError

from typedspy._json import first_not_json
from typedspy._text import encodable
from typedspy._types import FieldError, first_error
from typedspy._version import __version__
from typedspy.errors import OutputError, ToolArgumentsError, ToolError, ToolNotFoundError
from typedspy.modules import Module
from typedspy.tools import (
    ConfirmationRejected,
    ConfirmationRequired,
    ResumeState,
    Tool,
    Toolset,
    resume,
)

__all__ = ["Servable", "serve"]

Servable: TypeAlias = "Tool | Module | Callable[..., Any] | Toolset"
"""What `serve` takes: tools, signature-bound module instances, plain functions, toolsets."""

# A URL; the scheme's length is bounded so a long word is scanned once, not once per letter.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>]*[^\s'\"<>.,:;)]")

ErrorKind = Literal["invalid_arguments", "invalid_result", "output_error", "rejected", "error"]
"""Why a served call failed: arguments, the tool's own result, the model's output, a person's
refusal, or anything else the tool raised."""

_INPUT_REQUIRED_VERSION = "2026-07-28"  # first revision that elicits inside tools/call results
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run the tool with the arguments shown",
        }
    },
    "required": ["approve"],
}

Answer = bool | types.InputRequiredResult
"""True (approved), False (declined, cancelled or not approved), or the round trip to ask."""


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
        needs = f"{tool.name} needs a person's confirmation ({paused.question}) and "
        if not supports_elicitation(ctx):
            return error_result(
                "rejected",
                f"{needs}this client cannot ask for one (it declared no MCP form elicitation), "
                "so it did not run",
            )
        try:
            answer = await ask(ctx, params, paused)
        except Exception as exc:  # the client's error reply, a malformed answer, a lost link
            if isinstance(exc, MCPError) and exc.code == types.METHOD_NOT_FOUND:
                why = "this client cannot ask for one (it does not handle MCP elicitation)"
                return error_result("rejected", f"{needs}{why}, so it did not run")
            if isinstance(exc, ValidationError):
                why = f"the client's answer is malformed ({first_error(exc)})"
            else:
                why = f"asking the client failed ({_described(exc)})"
            return error_result("error", f"{needs}{why}, so it did not run")
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


def success_result(structured: dict[str, Any]) -> types.CallToolResult:
    """The outputs as ``structuredContent`` and as one JSON text block.

    Text UTF-8 cannot encode (a lone surrogate: a file name read with ``surrogateescape``)
    gets U+FFFD, as in what typedspy sends an LM: over stdio it stopped the server. A NaN or
    infinity is an ``invalid_result``: JSON has no such number.
    """
    try:
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:
        found = first_not_json(structured)
        at = FieldError(found[0] if found else (), "NaN or infinity: JSON has no such number")
        return error_result("invalid_result", f"the result cannot be sent: {at}", [at])
    if encodable(text) is not text:
        text = encodable(text)
        structured = json.loads(text)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def error_result(
    kind: ErrorKind, message: str, errors: Sequence[FieldError] = ()
) -> types.CallToolResult:
    """An ``isError`` result: the message and ``path: message`` lines, as text and as data."""
    message = encodable(message)
    listed = [{"path": list(e.path), "message": encodable(e.message)} for e in errors]
    text = encodable("\n".join([message, *(f"- {e}" for e in errors)]))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"error": {"kind": kind, "message": message, "errors": listed}},
        is_error=True,
    )


def failure_result(exc: Exception) -> types.CallToolResult:
    """The ``isError`` result for what a tool raised (typed failures keep their field paths)."""
    if isinstance(exc, ToolArgumentsError):
        return error_result("invalid_arguments", str(exc), exc.errors)
    if isinstance(exc, ConfirmationRejected):
        return error_result("rejected", str(exc))
    if isinstance(exc, OutputError):
        return error_result("output_error", str(exc), exc.errors)
    if isinstance(exc, ToolError):
        return error_result("invalid_result", str(exc), exc.errors)
    return error_result("error", _described(exc))


def _described(exc: Exception) -> str:
    """``"KindOfError: message"`` without the URLs: they name the server's internal endpoints."""
    return _URL.sub("[url]", f"{type(exc).__name__}: {exc}")


def supports_elicitation(ctx: ServerRequestContext[Any]) -> bool:
    """Whether the client declared form elicitation (a bare ``elicitation: {}`` counts)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


async def ask(
    ctx: ServerRequestContext[Any],
    params: types.CallToolRequestParams,
    paused: ConfirmationRequired,
) -> Answer:
    """Ask the client's user about ``paused``: the answer, or the result that asks for one."""
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=paused.question, requested_schema=_SCHEMA)
    )
    if is_version_at_least(ctx.protocol_version, _INPUT_REQUIRED_VERSION):
        key = f"confirm-{paused.confirmation_id}"
        answer = (params.input_responses or {}).get(key)
        if answer is None:
            return types.InputRequiredResult(input_requests={key: request})
        return isinstance(answer, types.ElicitResult) and _approved(answer)
    result = await ctx.session.elicit_form(
        paused.question, _SCHEMA, related_request_id=ctx.request_id
    )
    return _approved(result)


def _approved(result: types.ElicitResult) -> bool:
    return result.action == "accept" and (result.content or {}).get("approve") is True
