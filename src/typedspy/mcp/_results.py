"""What a served tool's call returns over MCP: structured outputs, or an error that names paths.

A success is ``structuredContent`` (the outputs as JSON, union members tagged with ``_type``)
plus the same JSON as one text block for clients that read only text. A failure is an
``isError`` result whose text lists ``path: message`` lines and whose ``structuredContent``
carries the same facts as data: ``{"error": {"kind", "message", "errors": [{"path", "message"}]}}``.
The client side (`typedspy.mcp.tools`) reads that shape back into typed errors. A failure the
tool did not word for its caller (``kind="error"``: an LM's, or any exception) is sent without
the URLs in its text: they name the server's internal endpoints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Literal

import mcp_types as types

from typedspy._types import FieldError
from typedspy.errors import OutputError, ToolArgumentsError, ToolError
from typedspy.tools import ConfirmationRejected

__all__ = ["ErrorKind", "error_result", "failure_result", "success_result"]

# A URL; the scheme's length is bounded so a long word is scanned once, not once per letter.
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s'\"<>]*[^\s'\"<>.,:;)]")

ErrorKind = Literal["invalid_arguments", "invalid_result", "output_error", "rejected", "error"]
"""Why a served call failed: arguments, the tool's own result, the model's output, a person's
refusal, or anything else the tool raised."""


def success_result(structured: dict[str, Any]) -> types.CallToolResult:
    """The outputs as ``structuredContent`` and as one JSON text block."""
    text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def error_result(
    kind: ErrorKind, message: str, errors: Sequence[FieldError] = ()
) -> types.CallToolResult:
    """An ``isError`` result: the message and ``path: message`` lines, as text and as data."""
    listed = [{"path": list(e.path), "message": e.message} for e in errors]
    text = "\n".join([message, *(f"- {e}" for e in errors)])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"error": {"kind": kind, "message": message, "errors": listed}},
        is_error=True,
    )


def failure_result(exc: Exception) -> types.CallToolResult:
    """The ``isError`` result for what a tool raised (typed failures keep their field paths)."""
    if isinstance(exc, ToolArgumentsError):
        return error_result("invalid_arguments", str(exc), exc.errors)
    if isinstance(exc, ConfirmationRejected):
        return error_result("rejected", str(exc))
    if isinstance(exc, OutputError):
        return error_result("output_error", str(exc), exc.errors)
    if isinstance(exc, ToolError):
        return error_result("invalid_result", str(exc), exc.errors)
    return error_result("error", _URL.sub("[url]", f"{type(exc).__name__}: {exc}"))
