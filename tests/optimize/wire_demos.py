"""Read the demos a chat request carried (user/assistant pairs between system and query)."""

from __future__ import annotations

import json
import re
from typing import Any

_TICKET = re.compile(r"<ticket>\n(.*?)\n</ticket>", re.DOTALL)


def demos_sent(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(ticket, assistant JSON)`` for every demo in the request, in order."""
    turns = [m for m in body["messages"] if m["role"] != "system"][:-1]
    out = []
    for user, assistant in zip(turns[::2], turns[1::2], strict=True):
        match = _TICKET.search(user["content"])
        assert match, user["content"]
        out.append((match.group(1), json.loads(assistant["content"])))
    return out


def query_of(body: dict[str, Any]) -> str:
    """The ticket the request asks about."""
    match = _TICKET.search(body["messages"][-1]["content"])
    assert match
    return match.group(1)
