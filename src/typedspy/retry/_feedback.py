"""The feedback turn sent after a failed attempt: labelled, compact, with the schema."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from typedspy._types import FailureKind, FieldError
from typedspy.lm import ChatMessage, ToolCall

__all__ = ["FEEDBACK_LABEL", "MAX_ERROR_LINES", "feedback_messages", "feedback_text"]

MAX_ERROR_LINES = 10
FEEDBACK_LABEL = (
    "[Automated feedback from typedspy's output validation, not a message from the user.]"
)
"""Opens every feedback turn (failed outputs and loop remedies), so no user seems to speak."""


def feedback_text(
    kind: FailureKind, errors: Sequence[FieldError], schema: dict[str, Any] | None
) -> str:
    """The text of one feedback turn: what failed, at most ten ``path: message`` lines, schema."""
    if kind == "decode_failed":
        head = "Your previous reply could not be decoded as a JSON object:"
    else:
        head = "Your previous reply was valid JSON but failed validation:"
    lines = [f"- {error}" for error in errors[:MAX_ERROR_LINES]]
    if len(errors) > MAX_ERROR_LINES:
        lines.append(f"- ... and {len(errors) - MAX_ERROR_LINES} more")
    parts = [FEEDBACK_LABEL, head, *lines]
    if schema is not None:
        parts += [
            "Reply again with the complete output as one JSON object matching this schema:",
            json.dumps(schema, ensure_ascii=False, separators=(",", ":")),
        ]
    else:
        parts.append("Reply again with the complete output as one JSON object.")
    return "\n".join(parts)


def feedback_messages(
    raw: str,
    tool_call: ToolCall | None,
    kind: FailureKind,
    errors: Sequence[FieldError],
    schema: dict[str, Any] | None,
) -> list[ChatMessage]:
    """The failed reply and its feedback, to append to the first request's messages.

    A forced tool call is answered by a ``tool`` message, as the API requires; any other reply
    by a user turn. Only the latest failure is ever sent (ADR-004: replace, don't pile up).
    """
    text = feedback_text(kind, errors, schema)
    if tool_call is not None:
        call_id = tool_call.id or "call_1"  # a server that sent none: the API needs one to answer
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": tool_call.name, "arguments": tool_call.arguments},
        }
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": text},
        ]
    return [{"role": "assistant", "content": raw}, {"role": "user", "content": text}]
