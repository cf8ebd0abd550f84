"""`NearestDemo`: a stand-in model that answers like its closest few-shot demo.

It knows nothing about the task by itself: it reads the demos in the request (each a user turn
followed by an assistant turn) and copies the answer of the demo whose user turn shares the most
words with the final user turn. Without demos, or with no demo sharing a word, it answers
``fallback``. Output fields the copied answer lacks (a `ChainOfThought`'s ``reasoning``, say)
are filled with generated data when the request carries a JSON schema. So its score on a
dataset is moved by the demos and nothing else: the honest model for testing optimizers
offline.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from typedspy.testing._payloads import requested_schema

__all__ = ["NearestDemo"]

_WORD = re.compile(r"\w+")
_TAG = re.compile(r"</?\w+>")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(_TAG.sub(" ", text).lower()))


class NearestDemo:
    """Pass as ``StandIn(answer=NearestDemo(fallback))``; it also records what it saw.

    Args:
        fallback: The reply (assistant content, usually a JSON object) when no demo helps.
        ignore: Words that do not count toward similarity (e.g. common words of the task).

    Attributes:
        seen_demos: For each request answered, how many demos it carried.
    """

    def __init__(self, fallback: str, *, ignore: Sequence[str] = ()) -> None:
        self.fallback = fallback
        self.ignore = {w.lower() for w in ignore}
        self.seen_demos: list[int] = []
        self._lock = threading.Lock()

    def __call__(self, request: Mapping[str, Any]) -> str:
        """The reply to one chat-completions request body."""
        turns = [m for m in request.get("messages") or [] if m.get("role") != "system"]
        query = _words(str(turns[-1].get("content") or "")) - self.ignore if turns else set()
        pairs = [
            (str(turns[i].get("content") or ""), str(turns[i + 1].get("content") or ""))
            for i in range(0, len(turns) - 1, 2)
            if turns[i].get("role") == "user" and turns[i + 1].get("role") == "assistant"
        ]
        with self._lock:
            self.seen_demos.append(len(pairs))
        best, best_overlap = self.fallback, 0
        for user, assistant in pairs:
            overlap = len(query & (_words(user) - self.ignore))
            if overlap > best_overlap:
                best, best_overlap = assistant, overlap
        return _complete(best, request)


def _complete(reply: str, request: Mapping[str, Any]) -> str:
    """``reply`` with the schema's missing top-level properties generated (if it has one)."""
    from typedspy.testing._datagen import generate_instance

    schema = requested_schema(request)
    try:
        data = json.loads(reply)
    except ValueError:
        return reply
    if schema is None or not isinstance(data, dict):
        return reply
    generated = generate_instance(schema, seed=0)
    if not isinstance(generated, dict):
        return reply
    merged = {k: data.get(k, v) for k, v in generated.items()}
    return json.dumps(merged, separators=(",", ":"))
