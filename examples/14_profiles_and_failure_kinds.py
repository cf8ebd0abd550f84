"""Endpoint profiles and typed failure kinds, offline against the bundled stand-in.

Shows what a profile changes on the wire (schema target, shape hint, token cap), a custom
profile, and the typed outcome of silent server failures: a schema not enforced, a whitespace
loop, a repetition loop (each with its bounded remedy) and a genuinely long answer; then each
profile against a stand-in impersonating its server's quirks.

Run: ``python examples/14_profiles_and_failure_kinds.py``
"""

from __future__ import annotations

import json

import typedspy as ts
from typedspy.testing import Quirks, Reply, StandIn


class Triage(ts.Signature):
    """Summarise the ticket and rate its urgency from 1 to 5."""

    ticket: str = ts.InputField()
    summary: str = ts.OutputField()
    urgency: int = ts.OutputField(ge=1, le=5)


TICKET = "The printer on floor 3 jams on every duplex job since this morning."
GOOD = json.dumps({"summary": "Printer on floor 3 jams on duplex jobs.", "urgency": 3})


def wire(profile: str | ts.Profile) -> None:
    with StandIn() as server:
        lm = ts.LM("local", base_url=server.base_url, api_key="offline", profile=profile)
        ts.Predict(Triage, lm=lm)(ticket=TICKET)
        body = server.requests[0]
        lm.close()
    rf = body["response_format"]["json_schema"]
    hinted = "of this shape" in body["messages"][0]["content"]
    print(
        f"{lm.profile.name:>10}: strict={rf['strict']}, shape in prompt={hinted}, "
        f"max_tokens={body.get('max_tokens')}"
    )


def outcome(profile: str, *replies: Reply | str) -> None:
    with StandIn() as server:
        server.enqueue(*replies)
        lm = ts.LM("local", base_url=server.base_url, api_key="offline", profile=profile)
        result = ts.Predict(Triage, lm=lm).try_call(ticket=TICKET)
        sent = len(server.requests)
        lm.close()
    if isinstance(result, ts.OutputError):
        kinds = [a.kind for a in result.attempts]
        print(f"  {type(result).__name__} kind={result.kind} attempts={kinds} requests={sent}")
    else:
        kinds = [a.kind for a in result.attempts]
        print(f"  urgency={result.urgency} attempts={kinds} requests={sent}")


def impersonated(profile: str) -> None:
    """The profile against a stand-in failing the way that profile's server fails, once."""
    with StandIn(quirks=Quirks.of(profile, times=1)) as server:
        lm = ts.LM("local", base_url=server.base_url, api_key="offline", profile=profile)
        result = ts.Predict(Triage, lm=lm).try_call(ticket=TICKET)
        lm.close()
    shown = result if isinstance(result, ts.TypedspyError) else [a.kind for a in result.attempts]
    print(f"{profile:>10}: {shown}")


def main() -> None:
    print("== what each profile sends for the same call")
    for name in ("openai", "vllm", "llama.cpp"):
        wire(name)
    wire(ts.Profile.named("llama.cpp").derive(name="my-server", max_tokens=200))

    print("\n== a reply outside the accepted schema (urgency 10): not_enforced, then fixed")
    outcome("llama.cpp", json.dumps({"summary": "Jams.", "urgency": 10}), GOOD)
    print("== a whitespace loop: one compact re-ask")
    outcome("vllm", Reply(content='{"summary": ' + " " * 400, finish_reason="length"), GOOD)
    print("== a repetition loop: one re-ask with frequency_penalty and short strings")
    looped = '{"summary": "' + "jams again! " * 40
    outcome("llama.cpp", Reply(content=looped, finish_reason="length"), GOOD)
    print("== a genuinely long answer: truncated, not retried")
    long = '{"summary": "' + " ".join(f"detail {i}" for i in range(200))
    outcome("llama.cpp", Reply(content=long, finish_reason="length"))

    print("\n== each profile against a server with its quirks (Quirks.of), failing once")
    for name in ("openai", "vllm", "llama.cpp", "ollama", "lmstudio"):
        impersonated(name)


if __name__ == "__main__":
    main()
