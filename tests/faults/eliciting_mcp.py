"""An MCP server of the 2025-06-18 revision over stdio that asks the client a question in a call.

Raw JSON-RPC lines, no SDK: it answers ``initialize`` with ``2025-06-18`` (whatever the client
asks), lists one tool, ``ask``, and on ``tools/call`` sends an ``elicitation/create`` request
first, whether the client declared elicitation or not (as a careless server may), then answers
the call with what came back: the client's result, or its error, as JSON text. Run as
``python eliciting_mcp.py``; it ends when its stdin closes. With ``--refuse`` it fails the call
instead when the client answered with an error, as a server whose tool needed the answer does.
"""

from __future__ import annotations

import json
import sys
from typing import Any

QUESTION = {
    "message": "Delete everything?",
    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    asked: dict[str, Any] = {}  # the question's id -> the tools/call it was asked for
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if method == "initialize":
            info = {"name": "eliciting", "version": "0"}
            hello = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}}
            send({"id": ident, "result": {**hello, "serverInfo": info}})
        elif method == "tools/list":
            tool = {"name": "ask", "inputSchema": {"type": "object", "properties": {}}}
            send({"id": ident, "result": {"tools": [tool]}})
        elif method == "tools/call":
            question = f"q{ident}"
            asked[question] = ident
            send({"id": question, "method": "elicitation/create", "params": QUESTION})
        elif method is None and ident in asked:  # the client's answer to a question
            answer = {k: v for k, v in message.items() if k in ("result", "error")}
            said = json.dumps(answer, sort_keys=True)
            if "--refuse" in sys.argv and "error" in answer:
                error = {"code": -32603, "message": f"the tool needed an answer: {said}"}
                send({"id": asked.pop(ident), "error": error})
            else:
                text = {"type": "text", "text": said}
                send({"id": asked.pop(ident), "result": {"content": [text]}})
        elif ident is not None and method is not None:
            send({"id": ident, "error": {"code": -32601, "message": f"no method {method}"}})


if __name__ == "__main__":
    main()
