"""Streamable HTTP: the served app on a real socket on 127.0.0.1, the SDK client by URL."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import uvicorn
from mcp_app import tools

import typedspy as ts
import typedspy.mcp


def test_tools_over_streamable_http_keep_structured_results_and_paths() -> None:
    server = ts.mcp.serve(*tools, name="pets")
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    # Bound and listening before uvicorn starts: the client's connection waits in the
    # backlog until the app is ready, so there is nothing to poll.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def main() -> tuple[list[str], dict[str, Any], BaseException]:
        serving = asyncio.create_task(web.serve(sockets=[sock]))
        try:
            async with ts.mcp.tools(f"http://127.0.0.1:{port}/mcp") as remote:
                found = await remote.acall("look_up_pet", {"pet_name": "Tom"})
                try:
                    await remote.acall("broken_count", {"word": "x"})
                except typedspy.mcp.RemoteToolError as exc:
                    return remote.names, found, exc
                raise AssertionError("broken_count did not fail")
        finally:
            web.should_exit = True
            await serving

    names, found, error = asyncio.run(main())
    sock.close()
    assert names == ["look_up_pet", "broken_count", "delete_file", "server_pid", "roll_dice"]
    assert found == {"pet": {"_type": "Cat", "lives": 9}, "owner": "Bo"}
    assert isinstance(error, typedspy.mcp.RemoteToolError) and error.kind == "invalid_result"
    assert [e.path for e in error.errors] == [("total",)]
