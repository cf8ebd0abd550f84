"""Shared by the ReAct tests: an LM over respx, and the wire shapes of tool-calling turns."""

from __future__ import annotations

import json
from typing import Any, cast

import httpx
import openai
import respx

import typedspy as ts
from typedspy.testing import chat_completion

BASE_URL = "https://llm.test/v1"

Call = tuple[str, str, dict[str, Any]]
"""(tool_call_id, function name, arguments)."""


def make_lm(profile: str | ts.Profile | None = None, **defaults: Any) -> ts.LM:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient()),  # P1: respx patches httpx, not httpx2
    )
    return ts.LM("gpt-test", client=client, profile=profile, **defaults)


TOOLS_ONLY = ts.Profile.named("openai").derive(
    name="openai-tools-only", response_format_with_tools=False
)
"""OpenAI's profile, but no ``response_format`` beside tools: steps must call a tool."""


def calls_reply(*calls: Call) -> httpx.Response:
    """A completion whose message makes these tool calls."""
    spec = [{"id": i, "name": n, "arguments": a} for i, n, a in calls]
    body = chat_completion(None, tool_calls=spec, finish_reason="tool_calls")
    return httpx.Response(200, json=body)


def finish_reply(call_id: str = "call_end", **outputs: Any) -> httpx.Response:
    return calls_reply((call_id, "finish", outputs))


def assistant(*calls: Call) -> dict[str, Any]:
    """The assistant message ReAct must send back for a turn with these calls."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": i,
                "type": "function",
                "function": {"name": n, "arguments": json.dumps(a, separators=(",", ":"))},
            }
            for i, n, a in calls
        ],
    }


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def bodies(route: respx.Route) -> list[dict[str, Any]]:
    """The JSON bodies of every request the route answered, in order."""
    return [json.loads(call.request.content) for call in route.calls]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body["tools"]]
