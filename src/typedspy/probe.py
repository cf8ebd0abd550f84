"""``python -m typedspy.probe BASE_URL [--model M]``: what an endpoint enforces, as a table.

The server is identified (ADR-084), then probed with one canary request per capability
(ADR-085, `LM.probe`); the table goes to stdout, the report optionally to a JSON file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from typedspy._text import printable
from typedspy.errors import TypedspyError
from typedspy.lm import LM

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Probe the endpoint named on the command line and print the verdicts.

    Returns:
        The exit status: 0 when probed, 2 for an endpoint that could not be used.
    """
    parser = argparse.ArgumentParser(
        prog="python -m typedspy.probe",
        description="Prove what an OpenAI-compatible endpoint enforces, with canary requests.",
    )
    parser.add_argument("base_url", help="the endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="default", help="the model name to send")
    parser.add_argument("--api-key", default=None, help="defaults to OPENAI_API_KEY")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request")
    parser.add_argument("--save", default=None, help="write the report to this JSON file")
    args = parser.parse_args(argv)
    try:
        lm = LM(args.model, base_url=args.base_url, api_key=args.api_key, max_retries=0)
        profile = lm.identify()
        print(f"identified: profile {profile.name!r}")
        report = lm.probe(timeout=args.timeout, save=args.save)
    except TypedspyError as exc:
        print(printable(f"typedspy.probe: {exc}"), file=sys.stderr)
        return 2
    print(printable(report.table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
