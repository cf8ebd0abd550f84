"""`tools`: the tools of an MCP server as typedspy tools, over a connection scoped by a block.

One task owns the connection for its whole life (the SDK's client is built on task groups,
which must be entered and left by the same task); calls from the agent's tasks send through
it. Leaving the ``with``/``async with`` block closes the connection and ends a stdio server's
process, so an agent run inside the block never leaves a connection behind.

The server is not trusted (ADR-053): a listed tool whose schemas cannot be checked safely fails
the listing with a `SchemaError` naming it (``include=`` leaves it out); on a connection opened
here, results are checked by `RemoteTool` alone (the SDK's own check runs patterns on ``re``),
and a line the server sends that is not JSON-RPC fails the calls waiting for replies at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncGenerator, Iterable
from types import TracebackType
from typing import Any, TypeAlias, cast

import anyio
import httpx2
import mcp_types as types
import pydantic
from mcp import Client, StdioServerParameters
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from typedspy._runtime import await_on_thread, background_loop, run_in_background
from typedspy._text import cut_middle
from typedspy.errors import (
    ConfigurationError,
    SchemaError,
    ToolError,
    check_int,
    check_number,
)
from typedspy.lm import split_userinfo
from typedspy.mcp._jsonschema import violation_errors
from typedspy.mcp._remote import RemoteResultError, RemoteTool, RemoteToolError
from typedspy.tools import Toolset

__all__ = ["RemoteTools", "Source", "tools"]

Source: TypeAlias = "Client | Server[Any] | MCPServer | StdioServerParameters | str"
"""An entered ``mcp.Client`` (used as is), a server object (in-process), the parameters of
a stdio server (a subprocess), or the URL of a streamable HTTP server."""

_MAX_PAGES = 100
_MAX_TOOLS = 1000  # built from a whole listing: each is a schema check, run on the event loop
_NAMED = 20  # names an error message lists
_LOST = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
# How the SDK ends a call whose connection closed; a server's own -32000 is a generic error
_CLOSED = (types.CONNECTION_CLOSED, "Connection closed")


class RemoteTools:
    """The tools of an MCP server, for ``with``/``async with``, as a `Toolset` of `RemoteTool`.

    Example:
        ```python
        params = StdioServerParameters(command="python", args=["-m", "typedspy.mcp", "app:tools"])
        async with ts.mcp.tools(params) as remote:
            agent = ts.ReAct(Task, tools=remote)
            prediction = await agent.acall(question="...")
        # the connection is closed and the server process has ended
        ```

    Args:
        source: Where the server is (see `Source`). A given ``mcp.Client`` must already be
            entered; it is neither entered nor closed here.
        include: Only these tool names (each must exist); all tools when None (at most 1,000).
        elicitation_callback: Answers the server's elicitations (a `confirm_first` tool of a
            typedspy server asks through one); without it the client declares no elicitation
            and such tools refuse to run.
        timeout: Seconds to wait for each response (None waits for ever).
        max_result_chars: A result whose JSON is longer is a `RemoteResultError`.

    Raises:
        ToolError: On entering, an ``include`` name the server does not list, or a listing
            of more than 1,000 tools without ``include``.
        SchemaError: On entering, tools whose schemas cannot be used (each named).
    """

    def __init__(
        self,
        source: Source,
        *,
        include: Iterable[str] | None = None,
        elicitation_callback: ElicitationFnT | None = None,
        timeout: float | None = 60.0,
        max_result_chars: int = 100_000,
    ) -> None:
        """An open connection to an MCP server and its tools, opened by the block.

        Raises:
            ConfigurationError: ``timeout`` is no finite number > 0 (nor None),
                ``max_result_chars`` no int >= 1, or ``include`` no list of names.
        """
        check_number("ts.mcp.tools", "timeout", timeout, unit="seconds")
        check_int("ts.mcp.tools", "max_result_chars", max_result_chars, optional=False)
        names: list[object] | None = None
        if include is not None and not isinstance(include, str):
            names = list(include)
        if include is not None and (names is None or not all(isinstance(n, str) for n in names)):
            raise ConfigurationError(
                f"ts.mcp.tools(include={include!r}): expected a list of tool names (strings)"
            )
        self._own = not isinstance(source, Client)
        self._client = (
            source
            if isinstance(source, Client)
            else Client(
                _without_userinfo(source),
                elicitation_callback=elicitation_callback,
                read_timeout_seconds=timeout,
                message_handler=self._on_message,
            )
        )
        self._in_flight: set[anyio.CancelScope] = set()  # calls waiting for their replies
        self._garbled = ""  # what was wrong with the last message the server sent unreadable
        self._include = cast("list[str] | None", names)
        self._max_result_chars = max_result_chars
        self._closing: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop the block was entered on
        self._open = False

    async def __aenter__(self) -> Toolset:
        """Connect, list the tools and wrap them.

        Raises:
            RemoteToolError: The server cannot be reached (``kind="connection"``).
            ToolError: A tool named in ``include`` does not exist.
            SchemaError: Chosen tools whose schemas cannot be used (invalid, a ``$ref`` outside
                the schema, a pattern RE2 cannot run); the message names each one.
            ToolError: As for SchemaError, when a chosen tool's name is at fault too (one no
                endpoint takes, or listed twice).
        """
        self._loop = asyncio.get_running_loop()
        if self._own:
            await self._connect()
        else:
            try:
                self._client.session  # noqa: B018 - raises unless the client was entered
            except RuntimeError as exc:
                raise ConfigurationError(
                    "enter the mcp.Client first (async with client: ...), or pass what it "
                    "connects to and ts.mcp.tools opens and closes the connection"
                ) from exc
        self._open = True
        try:
            return await self._toolset()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the connection (a stdio server's process ends with it)."""
        self._open = False
        if self._closing is None or self._owner is None:
            return
        self._closing.set()
        owner, self._owner = self._owner, None
        try:
            await owner
        except Exception as failed:
            if exc is not None:
                return  # the block's own exception is the news; closing failed after it
            raise RemoteToolError(
                f"closing the MCP connection failed: {type(failed).__name__}: {failed}",
                tool=None,
                kind="connection",
            ) from failed

    def __enter__(self) -> Toolset:
        """`__aenter__` for synchronous code.

        The connection lives on typedspy's background event loop, which always runs, so its
        tools serve sync calls from any thread and async calls on any loop (ADR-049).
        """
        return run_in_background(self.__aenter__, async_name="async with ts.mcp.tools(...)")

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """`__aexit__` for synchronous code."""
        run_in_background(
            lambda: self.__aexit__(kind, exc, tb), async_name="async with ts.mcp.tools(...)"
        )

    async def _connect(self) -> None:
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._closing = asyncio.Event()
        self._owner = asyncio.create_task(self._hold(ready, self._closing))
        try:
            await ready
        except Exception as exc:
            cause = _leaf(exc)
            raise RemoteToolError(
                f"cannot connect to the MCP server: {type(cause).__name__}: {cause}",
                tool=None,
                kind="connection",
            ) from exc

    async def _hold(self, ready: asyncio.Future[None], closing: asyncio.Event) -> None:
        try:
            async with self._client:
                # RemoteTool checks results itself, with patterns on RE2 (ADR-053); the SDK's
                # own check of the same result uses `re` on this loop, a hostile pattern in
                # the outputSchema could stall it, so connections opened here skip it.
                session = self._client.session
                cast("Any", session).validate_tool_result = _checked_by_remote_tool
                ready.set_result(None)
                await closing.wait()
        except BaseException as exc:
            if ready.done():
                raise
            ready.set_exception(exc)

    async def _toolset(self) -> Toolset:
        listed: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            try:
                page = await self._client.list_tools(cursor=cursor)
            except MCPError as exc:
                raise RemoteToolError(
                    f"the MCP server could not list its tools: {exc}", tool=None, kind="protocol"
                ) from exc
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        by_name = {tool.name: tool for tool in listed}
        missing = sorted(set(self._include or ()) - set(by_name))
        if missing:
            raise ToolError(
                f"the MCP server has no tool named {_names(missing)}; "
                f"it has: {_names(sorted(by_name)) or 'none'}"
            )
        if self._include is None and len(listed) > _MAX_TOOLS:
            # 10,000 listed tools took about 17 s to build, the event loop blocked throughout.
            raise ToolError(
                f"the MCP server lists {len(listed)} tools; at most {_MAX_TOOLS} are used from a "
                "whole listing: name the ones to use with include=[...] "
                f"({_names(sorted(by_name))})"
            )
        chosen = [by_name[n] for n in self._include] if self._include is not None else listed
        built: list[RemoteTool] = []
        unusable: list[SchemaError | ToolError] = []
        counts = collections.Counter(tool.name for tool in listed)
        for name, tool in {tool.name: tool for tool in chosen}.items():  # a name: reported once
            try:
                if counts[name] > 1:
                    raise ToolError(
                        f"{name!r}: the server lists {counts[name]} tools of this name", tool=name
                    )
                built.append(RemoteTool(tool, self._call, max_result_chars=self._max_result_chars))
            except (SchemaError, ToolError) as exc:  # a schema, or a name no endpoint takes
                unusable.append(exc)
        if unusable:
            raise _unusable(unusable, [tool.name for tool in built])
        return Toolset(built)

    async def _on_message(self, message: types.ServerNotification | Exception) -> None:
        """A server's line that is not JSON-RPC: it may be any call's reply, so they all fail."""
        if isinstance(message, Exception):
            self._garbled = _first_line(message)
            for scope in self._in_flight:
                scope.cancel()

    async def _call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        if not self._open:
            raise RemoteToolError(
                f"{name}: the MCP connection is closed (use the tools inside the block)",
                tool=name,
                kind="connection",
            )
        if self._loop is not None and self._loop is not asyncio.get_running_loop():
            # The connection's streams belong to the loop that entered the block.
            if self._loop is not background_loop():
                raise ConfigurationError(
                    f"{name}: this MCP connection was entered on another event loop (an "
                    "`async with ts.mcp.tools(...)` block); call its tools on that loop, or "
                    "enter the block with a sync `with`, whose connection serves every loop"
                )
            return await await_on_thread(lambda: self._send(name, arguments))
        return await self._send(name, arguments)

    async def _send(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with anyio.CancelScope() as scope:
            self._in_flight.add(scope)
            try:
                return await self._client.call_tool(name, arguments)
            except MCPError as exc:
                if (exc.code, exc.message) == _CLOSED:  # the SDK's word for a lost connection
                    raise _lost(name, exc) from exc
                raise RemoteToolError(
                    f"{name}: the MCP server answered with an error: {exc}",
                    tool=name,
                    kind="protocol",
                ) from exc
            except RuntimeError as exc:  # the SDK checks results against the outputSchema too
                errors = violation_errors(exc.__cause__)
                if errors or "structured content" in str(exc):
                    shown = "; ".join(str(e) for e in errors) or str(exc)
                    raise RemoteResultError(
                        f"{name} returned a result that violates its own outputSchema: {shown}",
                        tool=name,
                        errors=errors,
                    ) from exc
                raise RemoteToolError(f"{name}: {exc}", tool=name, kind="protocol") from exc
            except pydantic.ValidationError as exc:
                raise RemoteResultError(
                    f"{name}: the server's reply is not a valid tools/call result", tool=name
                ) from exc
            except _LOST as exc:
                raise _lost(name, exc) from exc
            finally:
                self._in_flight.discard(scope)
        raise RemoteToolError(
            f"{name}: the MCP server sent a message that is not valid JSON-RPC while this call "
            f"waited for its reply ({self._garbled}); the reply was lost",
            tool=name,
            kind="protocol",
        )


tools = RemoteTools
"""`RemoteTools`: ``ts.mcp.tools(source)`` opens the block that connects to the server."""


def _without_userinfo(source: Source) -> Any:
    """``source``; a URL with ``user:password@`` as a transport sending them as basic auth.

    The HTTP library logs each request's URL at INFO: the password stays out of it (ADR-106).
    """
    if not isinstance(source, str):
        return source
    url, auth = split_userinfo(source)
    return source if auth is None else _basic_auth(url, auth)


@contextlib.asynccontextmanager
async def _basic_auth(url: str, auth: tuple[str, str]) -> AsyncGenerator[Any, None]:
    # The SDK's client for a URL (create_mcp_http_client): 30 s to connect and write, 300 s to
    # read (a held stream).
    timeout = httpx2.Timeout(30.0, read=300.0)
    async with (
        httpx2.AsyncClient(auth=httpx2.BasicAuth(*auth), timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def _checked_by_remote_tool(name: str, result: types.CallToolResult) -> None:
    """Stands in for ``ClientSession.validate_tool_result``: `RemoteTool` checks the result."""


def _unusable(errors: list[SchemaError | ToolError], usable: list[str]) -> Exception:
    """One error for every listed tool that cannot be used, with the way around.

    A `SchemaError` when only schemas are at fault, else a `ToolError` (a name). Each tool's
    part is cut to 1,000 characters in its middle: a server's tool name may be megabytes long.
    """
    shown = "; ".join(cut_middle(str(e)) for e in errors)
    hint = f"; to use the others, pass include={usable!r}" if usable else ""
    count = (
        f"{len(errors)} of the MCP server's tools"
        if len(errors) > 1
        else "a tool of the MCP server"
    )

    message = f"{count} cannot be used: {shown}{hint}"
    if all(isinstance(e, SchemaError) for e in errors):
        return SchemaError(message)
    return ToolError(message)


def _lost(name: str, exc: Exception) -> RemoteToolError:
    why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return RemoteToolError(
        f"{name}: the connection to the MCP server was lost: {why}", tool=name, kind="connection"
    )


def _first_line(exc: Exception) -> str:
    """What was wrong with the message, in one short line."""
    if isinstance(exc, pydantic.ValidationError) and exc.error_count():
        text = exc.errors(include_url=False, include_input=False)[0]["msg"]
    else:
        text = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return text[:200]


def _leaf(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups; else ``exc``."""
    for _ in range(10):  # bounded: groups nest as deep as the task groups that raised them
        if not isinstance(exc, BaseExceptionGroup):
            return exc
        group = cast("BaseExceptionGroup[BaseException]", exc)
        if len(group.exceptions) != 1:
            return group
        exc = group.exceptions[0]
    return exc


def _names(names: list[str]) -> str:
    """Up to `_NAMED` names, and how many more: a listing may hold thousands."""
    shown = ", ".join(names[:_NAMED])
    return f"{shown} and {len(names) - _NAMED} more" if len(names) > _NAMED else shown
