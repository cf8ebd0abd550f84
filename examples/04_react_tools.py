"""A tool-using agent that asks a person before it books anything; runs offline.

Run: ``python examples/04_react_tools.py``

The model is typedspy's stand-in server (real HTTP on 127.0.0.1) with scripted replies, so the
run is the same every time: the agent searches flights, wants to book one, pauses for a
confirmation, is resumed from signed JSON by a brand-new agent object (as a web app would after a
restart), and finishes with a typed answer.
"""

from __future__ import annotations

import secrets
from collections import Counter

from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import Reply, StandIn

ran: Counter[str] = Counter()
# The key saved states are signed with, so nobody can edit one on its way (docs/confirmations.md,
# trust model). A web app reads it from its configuration: the same in every process.
RESUME_SECRET = secrets.token_hex(32)


class Booking(BaseModel):
    flight: str
    price_eur: int


class PlanTrip(ts.Signature):
    """Book the cheapest direct flight for the traveller's request."""

    request: str = ts.InputField(description="what the traveller asked for")
    booking: Booking | None = ts.OutputField(description="the booked flight, if any")
    message: str = ts.OutputField(description="a short note for the traveller")


@ts.tool
def search_flights(origin: str, destination: str) -> list[dict[str, object]]:
    """Find direct flights.

    Args:
        origin: IATA code of the departure airport.
        destination: IATA code of the arrival airport.
    """
    ran["search_flights"] += 1
    return [
        {"flight": "AF1234", "price_eur": 189},
        {"flight": "KL987", "price_eur": 164},
    ]


@ts.confirm_first(question="Book {flight} for the traveller?")
@ts.tool
def book_flight(flight: str) -> str:
    """Book a flight (charges the traveller's card)."""
    ran["book_flight"] += 1
    return f"{flight} booked, confirmation code XK42P"


def script(server: StandIn) -> None:
    """What the 'model' will answer, step by step."""
    search = {"name": "search_flights", "arguments": {"origin": "CDG", "destination": "AMS"}}
    book = {"name": "book_flight", "arguments": {"flight": "KL987"}}
    finish = {
        "name": "finish",
        "arguments": {
            "booking": {"flight": "KL987", "price_eur": 164},
            "message": "Booked KL987 (EUR 164), code XK42P.",
        },
    }
    for call in (search, book, finish):
        server.enqueue(Reply(tool_calls=[call], finish_reason="tool_calls"))


def main() -> None:
    with StandIn() as server:
        script(server)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        agent = ts.ReAct(PlanTrip, tools=[search_flights, book_flight], max_iters=5, lm=lm)
        request = "Cheapest direct flight Paris to Amsterdam tomorrow, please."

        print(f"traveller: {request}")
        try:
            agent(request=request)
        except ts.ConfirmationRequired as pause:
            print(f"agent paused at step {pause.context['react'].step + 1}: {pause.question}")
            print(f"  pending call: {pause.tool_call}")
            answer = "yes"  # a person would be asked here
            saved = ts.ResumeState(pause, answer).to_json(secret=RESUME_SECRET)
            print(f"  person answered {answer!r}; signed state saved ({len(saved)} characters)")

        # Later, maybe in another process: a fresh agent continues from the saved state.
        fresh = ts.ReAct(PlanTrip, tools=[search_flights, book_flight], max_iters=5, lm=lm)
        pred = fresh(resume_state=ts.ResumeState.from_json(saved, secret=RESUME_SECRET))

        print("\ntrajectory:")
        for number, step in enumerate(pred.trajectory, 1):
            for call in step.calls:
                print(f"  {number}. {call.name}({call.arguments}) -> {call.observation}")
        print(f"\nbooking: {pred.booking!r}")
        print(f"message: {pred.message}")
        print(f"finished={pred.finished}, requests sent={len(server.requests)}")
        print(f"tool runs: {dict(ran)} (the search was not repeated on resume)")
        lm.close()


if __name__ == "__main__":
    main()
