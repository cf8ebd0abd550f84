"""OpenTelemetry tracing with the GenAI semantic conventions (the ``typedspy[otel]`` extra)."""

from typedspy.tracing._otel import OpenTelemetry

__all__ = ["OpenTelemetry"]
