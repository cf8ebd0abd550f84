"""Issue 21, D14: a span is never lost to its attributes, and holds no credential.

An LM whose base URL carries ``user:password@`` once lost every ``chat`` span (its redacted
endpoint did not parse as a URL); an LM that cannot be hashed, or content that cannot be
rendered as JSON, lost theirs the same way. Spans are read back with the SDK's in-memory
exporter; requests go to the stand-in over a real socket.
"""

from __future__ import annotations

import json
import logging
from typing import Any, cast
from urllib.parse import urlsplit

import httpx
import openai
import pytest
import respx

import typedspy as ts
from typedspy.testing import FakeLM, StandIn, chat_completion
from typedspy.tracing import OpenTelemetry
from wire import BASE_URL, tls_context

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk (dev)")
sdk_export = pytest.importorskip("opentelemetry.sdk.trace.export")
in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")

PASSWORD = "secret-hunter2"


class Ask(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def traced(capture_content: bool = False) -> tuple[OpenTelemetry, Any]:
    exporter = in_memory.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(sdk_export.SimpleSpanProcessor(exporter))
    return OpenTelemetry(tracer_provider=provider, capture_content=capture_content), exporter


def spans(exporter: Any) -> dict[str, dict[str, Any]]:
    return {span.name: dict(span.attributes) for span in exporter.get_finished_spans()}


def no_callback_failed(caplog: pytest.LogCaptureFixture) -> bool:
    return not [r for r in caplog.records if "callback" in r.getMessage()]


def test_a_password_in_the_base_url_keeps_the_chat_span_and_shows_in_no_attribute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    callback, exporter = traced(capture_content=True)
    with StandIn() as server:
        url = server.base_url.replace("http://", f"http://user:{PASSWORD}@")
        lm = ts.LM("standin-1", base_url=url, api_key="sk-offline-0000", max_retries=0)
        with caplog.at_level(logging.WARNING), ts.context(callbacks=[callback]):
            ts.Predict(Ask, lm=lm)(question="q")
        lm.close()
        server_at = ("127.0.0.1", urlsplit(server.base_url).port)
    assert len(server.requests) == 1
    found = spans(exporter)
    chat = found["chat standin-1"]
    assert (chat["server.address"], chat["server.port"]) == server_at
    assert chat["gen_ai.request.model"] == "standin-1"
    assert PASSWORD not in json.dumps(found, default=str)  # in no attribute of any span
    assert no_callback_failed(caplog)


def test_an_https_endpoint_without_a_port_reports_port_443() -> None:
    # The conventions want server.port beside server.address; the URL names none here.
    callback, exporter = traced()
    client = openai.AsyncOpenAI(
        base_url=BASE_URL.replace("https://", f"https://user:{PASSWORD}@"),
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient(verify=tls_context())),
    )
    with respx.mock(base_url=BASE_URL) as router, ts.context(callbacks=[callback]):
        router.post("/chat/completions").mock(
            return_value=httpx.Response(200, json=chat_completion('{"answer": "a"}'))
        )
        ts.Predict(Ask, lm=ts.LM("m", client=client))(question="q")
    chat = spans(exporter)["chat m"]
    assert (chat["server.address"], chat["server.port"]) == ("llm.test", 443)
    assert PASSWORD not in json.dumps(spans(exporter), default=str)


class ValueLM(FakeLM):
    """A user's LM with value equality, hence not hashable."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ValueLM) and other.model == self.model


def test_an_lm_that_cannot_be_hashed_keeps_its_chat_span(caplog: pytest.LogCaptureFixture) -> None:
    callback, exporter = traced()
    lm = ValueLM([json.dumps({"answer": "a"})])
    with caplog.at_level(logging.WARNING), ts.context(callbacks=[callback]):
        assert ts.Predict(Ask, lm=lm)(question="q").answer == "a"
    chat = spans(exporter)["chat fake"]
    assert chat["gen_ai.request.model"] == "fake"
    assert chat["gen_ai.usage.output_tokens"] > 0
    assert no_callback_failed(caplog)


class Echo(ts.Module):
    async def aforward(self, value: object) -> str:
        return "ok"


def circular() -> dict[str, object]:
    loop: dict[str, object] = {}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize(
    ("value", "recorded"),
    [(circular(), '"<dict: not serialisable>"'), (object(), '{"value": "<object object')],
    ids=["circular", "unknown-type"],
)
def test_content_that_cannot_be_rendered_keeps_the_span(
    value: object, recorded: str, caplog: pytest.LogCaptureFixture
) -> None:
    callback, exporter = traced(capture_content=True)
    with caplog.at_level(logging.WARNING), ts.context(callbacks=[callback]):
        assert Echo()(value=value) == "ok"
    span = spans(exporter)["invoke_workflow Echo"]
    assert span["gen_ai.workflow.name"] == "Echo"
    assert span["typedspy.inputs"].startswith(recorded)
    assert no_callback_failed(caplog)


def utf8_failures(exporter: Any) -> list[str]:
    """The attributes of the finished spans an exporter could not encode as UTF-8."""
    failures = []
    for span in exporter.get_finished_spans():
        for key, value in dict(span.attributes).items():
            for text in value if isinstance(value, tuple) else (value,):
                if isinstance(text, str):
                    try:
                        text.encode()
                    except UnicodeEncodeError:
                        failures.append(f"{span.name}: {key}")
    return failures


def test_a_lone_surrogate_in_prompt_or_reply_reaches_no_span_attribute() -> None:
    callback, exporter = traced(capture_content=True)
    with StandIn() as server:
        server.enqueue('{"answer": "half \ud83d an emoji"}')  # sent escaped in the body's JSON
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", max_retries=0)
        try:
            with ts.context(callbacks=[callback]):
                ts.Predict(Ask, lm=lm)(question="half \ud800 an emoji")
        finally:
            lm.close()
    assert utf8_failures(exporter) == []
    chat = spans(exporter)["chat standin-1"]
    assert "half \ufffd an emoji" in chat["gen_ai.input.messages"]
    assert "half \ufffd an emoji" in chat["gen_ai.output.messages"]
