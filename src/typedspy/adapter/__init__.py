from typedspy.adapter._chat import (
    Mode,
    build_request,
    format_inputs,
    format_outputs,
    output_schema,
    render_value,
    with_history,
)

__all__ = [
    "Mode",
    "build_request",
    "format_inputs",
    "format_outputs",
    "output_schema",
    "render_value",
    "with_history",
]
