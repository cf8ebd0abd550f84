from typedspy.adapter._chat import (
    Mode,
    build_request,
    format_inputs,
    format_outputs,
    output_schema,
    render_value,
    with_history,
)

# The package's interface to typedspy's other packages (not public API): they import from the
# package, never from its modules (ADR-034, checked by import-linter).
from typedspy.adapter._chat import draft_request as draft_request
from typedspy.adapter._chat import field_section as field_section
from typedspy.adapter._chat import function_tool as function_tool
from typedspy.adapter._chat import written_as_outputs as written_as_outputs
from typedspy.adapter._parts import user_content as user_content

__all__ = [
    "Mode",
    "build_request",
    "format_inputs",
    "format_outputs",
    "output_schema",
    "render_value",
    "with_history",
]
