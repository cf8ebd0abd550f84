"""OpenTelemetry spans for a Predict call and a ReAct run, offline.

Run: ``python examples/10_tracing.py`` (needs ``pip install "typedspy[otel]" opentelemetry-sdk``).
Records spans in memory with the OpenTelemetry SDK and prints them as a tree: the module call,
each attempt (with its failure kind), and each tool call.
"""

from __future__ import annotations

import importlib.util
import json

if importlib.util.find_spec("opentelemetry.sdk") is None:
    print('skipped: this example needs pip install "typedspy[otel]" opentelemetry-sdk')
    raise SystemExit(0)

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import typedspy as ts
from typedspy.testing import Reply, StandIn
from typedspy.tracing import OpenTelemetry


class Add(ts.Signature):
    """Add the numbers."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


@ts.tool
def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression."""
    return 4.0


def show(spans: tuple[ReadableSpan, ...]) -> None:
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in spans:
        children.setdefault(span.parent.span_id if span.parent else None, []).append(span)

    def walk(parent: int | None, depth: int) -> None:
        for span in sorted(children.get(parent, []), key=lambda s: s.start_time or 0):
            keep = ("typedspy.failure_kind", "gen_ai.usage.output_tokens", "gen_ai.tool.name")
            attributes = {k: v for k, v in (span.attributes or {}).items() if k in keep}
            print(f"{'  ' * depth}{span.name} {attributes or ''}")
            walk(span.context.span_id, depth + 1)

    walk(None, 0)


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with StandIn() as server, ts.context(callbacks=[OpenTelemetry(tracer_provider=provider)]):
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        server.enqueue(json.dumps({"answer": "four"}), json.dumps({"answer": 4}))
        print("answer:", ts.Predict(Add, lm=lm)(question="2 + 2?").answer)

        call = {"name": "calculator", "arguments": json.dumps({"expression": "2 + 2"})}
        server.enqueue(Reply(tool_calls=[call], finish_reason="tool_calls"))
        done = {"name": "finish", "arguments": json.dumps({"answer": 4})}
        server.enqueue(Reply(tool_calls=[done], finish_reason="tool_calls"))
        print("agent:", ts.ReAct(Add, tools=[calculator], lm=lm)(question="2 + 2?").answer)
        lm.close()
    show(exporter.get_finished_spans())


if __name__ == "__main__":
    main()
