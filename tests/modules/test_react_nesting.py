"""Tool calls nest a bounded number of levels: an agent that calls itself through a tool stops.

A model can drive an agent wired as its own tool (a sub-agent that delegates) as deep as it likes:
each sync tool level holds a thread, and only a deadline or a budget ended it. The level past
`typedspy.tools.MAX_TOOL_DEPTH` is not run; its `ToolError` is the deepest agent's observation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import Reply, StandIn


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def delegating_model(body: dict[str, Any]) -> Reply:
    """Delegates every question; answers once a tool's observation comes back (or after 40 asks)."""
    last = body["messages"][-1]
    asked = sum(1 for m in body["messages"] if m["role"] == "user")
    if last["role"] == "tool" or delegating_model.asks >= 40:  # type: ignore[attr-defined]
        said = json.dumps({"answer": str(last.get("content", ""))[:200]})
        return Reply(tool_calls=[{"name": "finish", "arguments": said}], finish_reason="tool_calls")
    delegating_model.asks += asked  # type: ignore[attr-defined]
    args = json.dumps({"task": "the same question"})
    return Reply(tool_calls=[{"name": "delegate", "arguments": args}], finish_reason="tool_calls")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_agent_calling_itself_through_a_tool_stops_at_the_bound(kind: str) -> None:
    delegating_model.asks = 0  # type: ignore[attr-defined]
    ran: list[int] = []
    with StandIn(answer=delegating_model) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)

        def delegate(task: str) -> str:
            """Hand the task to a fresh run of the same agent (a thread a level)."""
            ran.append(1)
            return agent(question=task).answer

        async def adelegate(task: str) -> str:
            """Hand the task to a fresh run of the same agent."""
            ran.append(1)
            return (await agent.acall(question=task)).answer

        chosen = ts.tool(delegate) if kind == "sync" else ts.tool(name="delegate")(adelegate)
        agent = ts.ReAct(Ask, tools=[chosen], lm=lm, max_iters=3)
        pred = agent(question="what is it?")
        lm.close()
    assert len(ran) == ts.tools.MAX_TOOL_DEPTH
    assert f"nest {ts.tools.MAX_TOOL_DEPTH} deep" in pred.answer
