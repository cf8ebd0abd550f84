"""``python -m typedspy.mcp my_app:tools [--http] [--host H] [--port P] [--name N]``."""

from __future__ import annotations

import argparse

from typedspy.mcp._run import load, run


def main(argv: list[str] | None = None) -> None:
    """Serve the tools named on the command line over stdio (default) or streamable HTTP."""
    parser = argparse.ArgumentParser(
        prog="python -m typedspy.mcp", description="Serve typedspy tools over MCP."
    )
    parser.add_argument("target", help="module:attribute naming a server, tool(s) or module(s)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    parser.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    parser.add_argument("--name", default="typedspy", help="the server's name")
    args = parser.parse_args(argv)
    server = load(args.target, name=args.name)
    if args.http:
        run(server, transport="http", host=args.host, port=args.port, path=args.path)
    else:
        run(server)


if __name__ == "__main__":
    main()
