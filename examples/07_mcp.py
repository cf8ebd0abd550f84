"""Typed tools served over MCP, and a ReAct agent that uses them through the MCP client; offline.

Run: ``python examples/07_mcp.py`` (needs the extra: ``pip install 'typedspy[mcp]'``)

The same file is both sides. Started with ``--serve`` it is an MCP server over stdio (what
``python -m typedspy.mcp my_app:tools`` does for an importable module). Without it, it starts
that server as a subprocess, turns its tools into typedspy tools with ``ts.mcp.tools``, and
runs an agent whose model is typedspy's stand-in server with scripted replies. The refund tool
is ``confirm_first``: the server asks through MCP elicitation, and this client answers.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any, Literal

if importlib.util.find_spec("mcp") is None:
    print("skipped: this example needs the MCP SDK: pip install 'typedspy[mcp]'")
    raise SystemExit(0)

import mcp_types
from mcp import StdioServerParameters
from pydantic import BaseModel

import typedspy as ts
import typedspy.mcp
from typedspy.testing import Reply, StandIn


class Order(BaseModel):
    order_id: str
    status: Literal["shipped", "delivered", "lost"]
    total_eur: float


class LookUpOrder(ts.Signature):
    """Find an order by its id."""

    order_id: str = ts.InputField(description="like A-1001", pattern=r"^A-\d{4}$")
    order: Order = ts.OutputField()


class OrderLookup(ts.Module):
    signature = LookUpOrder

    async def aforward(self, order_id: str) -> dict[str, Any]:
        return {"order": Order(order_id=order_id, status="lost", total_eur=42.5)}


@ts.confirm_first(question="Refund {amount_eur} EUR for order {order_id}?")
@ts.tool
def refund_order(order_id: str, amount_eur: float) -> str:
    """Refund an order (moves money)."""
    return f"refunded {amount_eur} EUR for {order_id}"


class HandleTicket(ts.Signature):
    """Resolve the customer's ticket with the tools."""

    ticket: str = ts.InputField()
    refunded: bool = ts.OutputField()
    reply: str = ts.OutputField(description="what to tell the customer")


def serve() -> None:
    ts.mcp.run(ts.mcp.serve(OrderLookup(), refund_order, name="orders"))


async def ask_the_person(context: Any, params: Any) -> mcp_types.ElicitResult:
    print(f"  server asks: {params.message} -> a person would answer here; approving")
    return mcp_types.ElicitResult(action="accept", content={"approve": True})


def script(server: StandIn) -> None:
    """What the 'model' answers, step by step."""
    steps = [
        ("look_up_order", {"order_id": "1001"}),  # bad id: caught before the call
        ("look_up_order", {"order_id": "A-1001"}),
        ("refund_order", {"order_id": "A-1001", "amount_eur": 42.5}),
        ("finish", {"refunded": True, "reply": "Your lost order A-1001 was refunded."}),
    ]
    for name, arguments in steps:
        call = {"name": name, "arguments": arguments}
        server.enqueue(Reply(tool_calls=[call], finish_reason="tool_calls"))


def main() -> None:
    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve"])
    with StandIn() as llm, ts.mcp.tools(params, elicitation_callback=ask_the_person) as remote:
        script(llm)
        for tool in remote:
            print(f"remote tool {tool.name}: {tool.description}")
            print(f"  outputSchema: {tool.to_mcp_tool().get('outputSchema')}")
        lm = ts.LM("standin-1", base_url=llm.base_url, api_key="offline")
        agent = ts.ReAct(HandleTicket, tools=remote, max_iters=6, lm=lm)
        pred = agent(ticket="My order A-1001 never arrived.")
        lm.close()
    print("trajectory:")
    for number, step in enumerate(pred.trajectory, 1):
        for call in step.calls:
            print(f"  {number}. {call.name}({call.arguments}) -> {call.observation}")
    print(f"refunded: {pred.refunded!r}; reply: {pred.reply}")
    print("the server process ended with the `with` block")
    assert pred.refunded is True and "does not match" in pred.trajectory[0].calls[0].observation


if __name__ == "__main__":
    serve() if "--serve" in sys.argv else main()
