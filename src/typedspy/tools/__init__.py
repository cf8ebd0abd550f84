"""Tools: signature-bound callables a model can call, exported to OpenAI and MCP.

Confirmations live here too, next to the `Tool` that asks for them (ADR-042): `confirm_first`
marks a tool, `ConfirmationRequired` pauses a call, `ResumeState` carries a person's answer.
"""

from typedspy.tools._approvals import (
    ConfirmationRejected,
    ConfirmationRequired,
    resume,
)

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.tools._approvals import ResumeAction as ResumeAction
from typedspy.tools._approvals import confirmation_id as confirmation_id
from typedspy.tools._confirm import confirm_first
from typedspy.tools._names import sent_name as sent_name
from typedspy.tools._names import tool_name
from typedspy.tools._resume_state import ResumeState
from typedspy.tools._tool import MAX_TOOL_DEPTH, Tool, tool
from typedspy.tools._toolset import Toolset

__all__ = [
    "MAX_TOOL_DEPTH",
    "ConfirmationRejected",
    "ConfirmationRequired",
    "ResumeState",
    "Tool",
    "Toolset",
    "confirm_first",
    "resume",
    "tool",
    "tool_name",
]
