"""Errors of remote MCP tools (the client side of `typedspy.mcp`).

Both are `ToolError`s, so a ReAct agent reports them to its model as observations::

    ToolError
    └── RemoteToolError       the server reported a failure (isError), a protocol error, or
        │                     the connection is gone; ``kind`` says which
        └── RemoteResultError the server answered, but the result is unusable: it violates the
                              tool's own outputSchema, is too large, or has no usable content

Invalid arguments are the core `ToolArgumentsError`, whether caught locally before the call
(against the remote ``inputSchema``) or reported by a typedspy server.
"""

from __future__ import annotations

from collections.abc import Sequence

from typedspy._types import FieldError
from typedspy.errors import ToolError

__all__ = ["RemoteResultError", "RemoteToolError"]


class RemoteToolError(ToolError):
    """A remote MCP tool failed.

    Attributes:
        tool: The tool's name.
        kind: ``"invalid_result"``, ``"output_error"``, ``"rejected"`` or ``"error"`` as a
            typedspy server reports them; ``"protocol"`` for an MCP error response,
            ``"connection"`` when the server cannot be reached, ``"result"`` for an unusable
            result (`RemoteResultError`).
        errors: Field errors the server named (or the result's violations).
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str | None,
        kind: str = "error",
        errors: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message, tool=tool, errors=errors)
        self.kind = kind


class RemoteResultError(RemoteToolError):
    """A remote tool's result cannot be used; ``errors`` name the paths that violate its schema."""

    def __init__(self, message: str, *, tool: str, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message, tool=tool, kind="result", errors=errors)
