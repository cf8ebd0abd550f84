"""ReAct on profiles without dependable tool calling: one strict step schema under
``response_format``, against the stand-in impersonating such a server (a real socket)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import Quirks, StandIn


class Lookup(ts.Signature):
    """Answer about an order."""

    question: str = ts.InputField()
    status: str = ts.OutputField()


def _steps(body: dict[str, Any]) -> str:
    """A scripted model: look the order up first, then finish with what the tool said."""
    text = json.dumps(body["messages"])
    if "shipped on Monday" in text:
        step = {"_type": "finish", "status": "shipped"}
    else:
        step = {"_type": "order_status", "order": 7}
    return json.dumps({"reasoning": "one step at a time", "next": step})


@pytest.mark.parametrize("profile", ["llama.cpp", "ollama", "lmstudio", "generic"])
def test_the_profile_chooses_the_strict_union_step(profile: str) -> None:
    ran: list[int] = []

    @ts.tool
    def order_status(order: int) -> str:
        """The status of an order."""
        ran.append(order)
        return "Order 7 shipped on Monday."

    quirks = Quirks.of(profile, times=0)  # a server that behaves: the schema is what matters
    with StandIn(quirks=quirks, answer=_steps) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile)
        try:
            pred = ts.ReAct(Lookup, tools=[order_status], lm=lm)(question="Where is order 7?")
        finally:
            lm.close()

    assert pred.status == "shipped"
    assert pred.finished is True
    assert ran == [7]
    assert len(server.requests) == 2
    for body in server.requests:
        assert "tools" not in body  # no native tool calling on this profile
        assert body["response_format"]["type"] == "json_schema"
        schema = body["response_format"]["json_schema"]["schema"]
        members = [
            schema["$defs"][m["$ref"].rsplit("/", 1)[-1]]
            for m in schema["properties"]["next"]["anyOf"]
        ]
        tags = [m["properties"]["_type"]["const"] for m in members]
        assert tags == ["order_status", "finish"]


def test_a_dependable_profile_keeps_native_tool_calling() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="vllm")
        try:
            ts.ReAct(Lookup, tools=[], lm=lm, max_iters=1)(question="?")
        finally:
            lm.close()
    assert "tools" in server.requests[0]
    assert "response_format" not in server.requests[0]
