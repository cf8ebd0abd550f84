"""Shared by the MCP tests: the stdio command that serves `mcp_app`, and a ReAct script."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import respx
from mcp import StdioServerParameters

import typedspy as ts
from typedspy.testing import chat_completion

HERE = Path(__file__).parent


def stdio_params(*extra: str) -> StdioServerParameters:
    """``python -m typedspy.mcp mcp_app:tools`` as a subprocess, with this folder importable."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "typedspy.mcp", "mcp_app:tools", *extra],
        env={"PYTHONPATH": str(HERE)},
    )


class AskAboutPets(ts.Signature):
    """Answer questions about pets with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def calls_reply(call_id: str, name: str, arguments: dict[str, object]) -> httpx.Response:
    """A completion whose message makes one tool call."""
    spec = [{"id": call_id, "name": name, "arguments": arguments}]
    body = chat_completion(None, tool_calls=spec, finish_reason="tool_calls")
    return httpx.Response(200, json=body)


def script(router: respx.MockRouter) -> respx.Route:
    """The model looks Rex up (sending null for the optional limit), then answers."""
    return router.post("/chat/completions").mock(
        side_effect=[
            calls_reply("c1", "look_up_pet", {"pet_name": "Rex", "limit": None}),
            calls_reply("c2", "look_up_pet", {"pet_name": "Rex", "limit": 0}),
            calls_reply("c3", "finish", {"answer": "Rex can sit, roll and fetch"}),
        ]
    )
