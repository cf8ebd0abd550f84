from typedspy.adapter._chat import Mode, build_request, format_inputs, format_outputs, render_value

__all__ = ["Mode", "build_request", "format_inputs", "format_outputs", "render_value"]
