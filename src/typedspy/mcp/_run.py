"""`run`: serve over stdio or streamable HTTP (what ``python -m typedspy.mcp`` calls)."""

from __future__ import annotations

import importlib
import socket
import sys
from collections.abc import Sequence
from typing import Any, Literal

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from typedspy.errors import ConfigurationError, check_int
from typedspy.mcp._serve import serve

__all__ = ["load", "run"]


def run(
    server: Server[Any],
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
) -> None:
    """Serve until stdin closes (stdio) or the process is stopped (streamable HTTP).

    Over HTTP the address served is printed to stderr once it listens (``port=0``: the port
    the system chose), so a person or a script knows where to connect.

    Args:
        server: A server from `serve`.
        transport: ``"stdio"`` or ``"http"`` (streamable HTTP at ``http://host:port/path``).
        host: The address to bind for HTTP; 127.0.0.1 unless you mean to expose it.
        port: The HTTP port.
        path: The HTTP endpoint's path.

    Raises:
        ConfigurationError: A transport that is neither, or a port outside 0 to 65535.
    """
    if transport not in ("stdio", "http"):
        raise ConfigurationError(f"run(transport={transport!r}): expected 'stdio' or 'http'")
    check_int("run", "port", port, minimum=0, optional=False)
    if port > 65535:
        raise ConfigurationError(f"run(port={port!r}): expected an int from 0 to 65535")
    if transport == "stdio":
        anyio.run(_stdio, server)
        return
    import uvicorn  # a dependency of the mcp SDK

    app = server.streamable_http_app(streamable_http_path=path, host=host)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind((host, port))
    listening.listen()
    bound = listening.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"typedspy MCP server {server.name!r}: streamable HTTP at http://{shown}:{bound}{path}"
        " (Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    try:
        web.run(sockets=[listening])
    finally:
        listening.close()


async def _stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def load(target: str, *, name: str) -> Server[Any]:
    """The server named by ``module:attribute``: a server, or what to pass to `serve`.

    The attribute may be a server from `serve`, a tool, module, function or toolset, or a list
    or tuple of those.

    Raises:
        ConfigurationError: Not ``module:attribute``, or nothing of that name.
    """
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ConfigurationError(f"expected module:attribute (e.g. my_app:tools), got {target!r}")
    try:
        value: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            value = getattr(value, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"cannot load {target}: {exc}") from exc
    if isinstance(value, Server):
        return value
    items: Sequence[Any] = value if isinstance(value, (list, tuple)) else (value,)
    return serve(*items, name=name)
