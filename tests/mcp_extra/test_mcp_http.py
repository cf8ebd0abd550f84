"""Streamable HTTP: the served app on a real socket on 127.0.0.1, the SDK client by URL."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
from typing import Any

import pytest
import uvicorn
from mcp_app import tools

import typedspy as ts
import typedspy.mcp

PASSWORD = "hunter2-very-secret"


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


def test_a_password_in_an_mcp_url_goes_as_basic_auth_and_into_no_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Was: the SDK's HTTP library logged every request's URL at INFO with `user:password@`
    # in it ("HTTP Request: POST http://us%40er:<password>@host/mcp"), as LM did (ADR-106).
    server = ts.mcp.serve(*tools, name="pets")
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    seen: list[str] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            token = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")[2]
            seen.append(base64.b64decode(token).decode())
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    web = uvicorn.Server(uvicorn.Config(recording, log_level="warning", lifespan="on"))

    async def main() -> dict[str, Any]:
        serving = asyncio.create_task(web.serve(sockets=[sock]))
        try:
            url = f"http://us%40er:{PASSWORD}@127.0.0.1:{port}/mcp"
            async with ts.mcp.tools(url) as remote:
                return await remote.acall("look_up_pet", {"pet_name": "Tom"})
        finally:
            web.should_exit = True
            await serving

    with caplog.at_level(logging.DEBUG):
        found = asyncio.run(main())
    sock.close()
    assert found == {"pet": {"_type": "Cat", "lives": 9}, "owner": "Bo"}
    assert seen and set(seen) == {f"us@er:{PASSWORD}"}  # every request authenticated
    assert any(f"POST http://127.0.0.1:{port}/mcp" in r.getMessage() for r in caplog.records)
    assert not [r.getMessage() for r in caplog.records if PASSWORD in r.getMessage()]


def test_the_command_line_server_says_where_it_listens() -> None:
    # Issue 23: `python -m typedspy.mcp ... --http` printed nothing, not even its URL.
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "typedspy.mcp", "mcp_app:tools", "--http", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        url = line.split(" at ", 1)[1].split(" ", 1)[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def names() -> list[str]:
            async with ts.mcp.tools(url) as remote:
                return remote.names

        assert "look_up_pet" in asyncio.run(names())
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
