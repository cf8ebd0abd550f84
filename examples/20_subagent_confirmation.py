"""A confirmation asked inside a sub-agent, answered through its parent; runs offline.

Run: ``python examples/20_subagent_confirmation.py``

A concierge agent delegates bookings to a booking agent (an agent used as a tool). The booking
agent's ``book_flight`` needs a person's yes: the pause reaches the caller as one
``ConfirmationRequired`` naming the booking call, the answer is saved as signed JSON, and a fresh
concierge resumes it. The booking agent continues where it paused; no step is asked again
(ADR-099). The model is typedspy's stand-in server with scripted replies.
"""

from __future__ import annotations

import json
import secrets

import typedspy as ts
from typedspy.testing import Reply, StandIn

RESUME_SECRET = secrets.token_hex(32)
booked: list[str] = []


class Book(ts.Signature):
    """Book the flight the task names."""

    task: str = ts.InputField()
    code: str = ts.OutputField(description="the booking's confirmation code")


class Concierge(ts.Signature):
    """Help the traveller; delegate bookings."""

    request: str = ts.InputField()
    reply: str = ts.OutputField()


@ts.confirm_first(question="Book {flight} for the traveller?")
@ts.tool
def book_flight(flight: str) -> str:
    """Book a flight (charges the traveller's card)."""
    booked.append(flight)
    return f"{flight} booked, code XK42P"


def concierge(lm: ts.LM) -> ts.ReAct[Concierge]:
    booking_agent = ts.ReAct(Book, tools=[book_flight], lm=lm, max_iters=3)
    delegate = ts.Tool.from_module(booking_agent, name="book", description="Book a flight.")
    return ts.ReAct(Concierge, tools=[delegate], lm=lm, max_iters=3)


def called(name: str, arguments: dict[str, str], call_id: str) -> Reply:
    call = {"id": call_id, "name": name, "arguments": json.dumps(arguments)}
    return Reply(tool_calls=[call], finish_reason="tool_calls")


def main() -> None:
    with StandIn() as server:
        server.enqueue(
            called("book", {"task": "Book KL987"}, "concierge-1"),
            called("book_flight", {"flight": "KL987"}, "booking-1"),
        )
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        try:
            concierge(lm)(request="Book me on KL987, please.")
        except ts.ConfirmationRequired as pause:
            print(f"paused: {pause.question}  (call {pause.tool_call['id']})")
            saved = ts.ResumeState(pause, "yes").to_json(secret=RESUME_SECRET)

        server.enqueue(
            called("finish", {"code": "XK42P"}, "booking-2"),
            called("finish", {"reply": "You are on KL987, code XK42P."}, "concierge-2"),
        )
        state = ts.ResumeState.from_json(saved, secret=RESUME_SECRET)
        pred = concierge(lm)(request="Book me on KL987, please.", resume_state=state)
        print(f"reply: {pred.reply}")
        print(f"booked: {booked}; requests sent: {len(server.requests)} (none asked twice)")
        lm.close()


if __name__ == "__main__":
    main()
