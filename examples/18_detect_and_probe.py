"""Which server is it, and what does it enforce? Offline, against the bundled stand-in.

An LM given no ``profile=`` asks the server at its base URL once which it is (``GET
/v1/models``) and takes that server's profile (ADR-084). ``lm.probe()`` then sends one canary
request per capability, whose schema a model cannot satisfy by accident, and reports what the
server enforces, ignores or refuses (ADR-085); the report refines the profile.

Run: ``python examples/18_detect_and_probe.py``
"""

from __future__ import annotations

import typedspy as ts
from typedspy.testing import Quirks, StandIn


class Triage(ts.Signature):
    """Rate the ticket's urgency from 1 to 5."""

    ticket: str = ts.InputField()
    urgency: int = ts.OutputField(ge=1, le=5)


def identify(server: str) -> None:
    with StandIn(server=server) as standin:
        lm = ts.LM("local", base_url=standin.base_url, api_key="offline")
        pred = ts.Predict(Triage, lm=lm)(ticket="The printer jams.")  # asks first, then calls
        lm.close()
    print(f"a server answering like {server:<16} -> profile {lm.profile.name!r}, {pred.urgency=}")


def probe(title: str, quirks: Quirks) -> None:
    with StandIn(server="ollama", quirks=quirks) as standin:
        lm = ts.LM("llama3.2", base_url=standin.base_url, api_key="offline")
        report = lm.probe(timeout=10)
        lm.close()
    print(f"\n{title}\n{report}")
    print(f"auto now tries: {', '.join(lm.profile.modes)}")


def main() -> None:
    for server in ("llama.cpp", "vllm", "ollama", "lmstudio", "llama-cpp-python", "unknown"):
        identify(server)
    probe("A server that enforces what it accepts:", Quirks())
    probe(
        "A server that accepts response_format and ignores it:",
        Quirks(ignores_response_format=True),
    )
    probe("A server whose grammar fails open:", Quirks(fails_open=True))


if __name__ == "__main__":
    main()
