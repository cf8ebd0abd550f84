"""The stand-in's command line: ``python -m typedspy.testing.standin``."""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Sequence
from types import FrameType

from typedspy.testing._quirks import Quirks
from typedspy.testing.standin import StandIn

__all__ = ["run"]


def run(argv: Sequence[str] | None = None) -> int:
    """Run the stand-in from the command line until Ctrl-C or SIGTERM.

    Args:
        argv: Arguments (defaults to ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(
        prog="python -m typedspy.testing.standin",
        description="Offline OpenAI-compatible server for typedspy tests and demos.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="standin-1")
    parser.add_argument("--no-json-schema", action="store_true", help="reject json_schema")
    parser.add_argument("--no-tools", action="store_true", help="reject tools")
    parser.add_argument("--quirks", metavar="PROFILE", help="misbehave like that profile's server")
    args = parser.parse_args(argv)
    quirks = Quirks.of(args.quirks) if args.quirks else None
    server = StandIn(
        host=args.host,
        port=args.port,
        supports_json_schema=not args.no_json_schema,
        supports_tools=not args.no_tools,
        seed=args.seed,
        model=args.model,
        quirks=quirks,
    )
    done = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, _on_signal)
    with server:
        print(f"typedspy stand-in listening on {server.base_url}", flush=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0
