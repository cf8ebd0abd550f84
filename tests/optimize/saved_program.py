"""A program built from code, for the saved-program round trip (imported by two processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import typedspy as ts
from typedspy.testing import TICKET_FALLBACK, TICKET_STOPWORDS, NearestDemo, RouteTicket, StandIn


class Explain(ts.Signature):
    """Explain why the ticket goes to that team."""

    ticket: str = ts.InputField()
    team: str = ts.InputField()
    note: str = ts.OutputField()


class Pipeline(ts.Module):
    def __init__(self) -> None:
        self.route = ts.ChainOfThought(RouteTicket)
        self.explain = ts.Predict(Explain)

    async def aforward(self, ticket: str) -> ts.Prediction[Any]:
        pred = await self.route.acall(ticket=ticket)
        await self.explain.acall(ticket=ticket, team=type(pred.route).__name__)
        return pred


def requests_for(program: ts.Module, tickets: list[str]) -> list[str]:
    """Every request ``program`` sends for ``tickets`` (embeddings first, then chats), as JSON."""
    answer = NearestDemo(TICKET_FALLBACK, ignore=TICKET_STOPWORDS)
    with StandIn(answer=answer) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)
        try:
            with ts.context(lm=lm):
                for ticket in tickets:
                    program(ticket=ticket)
        finally:
            lm.close()
    bodies = [*server.embedding_requests, *server.requests]
    return [json.dumps(body, ensure_ascii=False) for body in bodies]


def requests_in_a_fresh_process(build: str, path: Path, tickets: list[str]) -> list[str]:
    """`requests_for` in a new interpreter, for the program ``build`` makes and loads ``path``."""
    script = (
        "import json, sys\n"
        "import typedspy as ts\n"
        "from saved_program import Pipeline, requests_for\n"
        f"program = {build}\n"
        "program.load(sys.argv[1])\n"
        "print(json.dumps(requests_for(program, json.loads(sys.argv[2]))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path), json.dumps(tickets)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).parent,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: list[str] = json.loads(done.stdout)
    return result
