"""What a truncated completion was doing when it hit the token limit.

A completion cut off at ``max_tokens`` is one of three things: a genuinely long answer, a
whitespace loop (grammars that allow unbounded whitespace, reference/local-servers.md: vLLM),
or a repetition loop inside a string (small local models repeating a phrase or an emoji until
the cap). Only the tail is examined, so the cost is bounded for any input.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["RunawayKind", "runaway_kind"]

RunawayKind = Literal["whitespace_loop", "repetition_loop"]

_TAIL = 4000  # characters examined at most
_MAX_PERIOD = 200  # the longest repeated unit looked for (a sentence or two)
_MIN_RUN = 48  # a loop covers at least this many characters past its first copy
_MIN_WHITESPACE = 32
_SPACES = re.compile(r"\s+")


def runaway_kind(text: str) -> RunawayKind | None:
    """Tell a runaway completion from a long one, by its tail.

    Returns:
        ``"whitespace_loop"`` when the tail is only whitespace (at least 32 characters, or four
        line breaks); ``"repetition_loop"`` when the tail repeats one unit of up to 200
        characters at least three times over 48 characters or more, its copies compared with
        each run of whitespace as one space (a small model's loop breaks into paragraphs now
        and then); else ``None`` (a long answer, or too little to tell).
    """
    tail = text[-_TAIL:]
    stripped = tail.rstrip()
    trailing = tail[len(stripped) :]
    if len(trailing) >= _MIN_WHITESPACE or trailing.count("\n") >= 4:
        return "whitespace_loop"
    tail = _SPACES.sub(" ", tail)
    end = len(tail)
    for period in range(1, min(_MAX_PERIOD, end // 3) + 1):
        run = 0
        index = end - 1
        while index - period >= 0 and tail[index] == tail[index - period]:
            run += 1
            index -= 1
        if run >= max(2 * period, _MIN_RUN) and tail[end - period :].strip():
            return "repetition_loop"
    return None
