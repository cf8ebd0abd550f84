"""OpenTelemetry spans read back with the SDK's in-memory exporter; HTTP answered by respx."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import typedspy as ts
from modules.react_wire import BASE_URL, calls_reply, finish_reply, make_lm
from typedspy.testing import chat_completion
from typedspy.tools import tool
from typedspy.tracing import OpenTelemetry


class Add(ts.Signature):
    """Add the numbers."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


class Ask(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@tool
def search(query: str) -> str:
    """Search the web."""
    return f"found {query}"


@tool
def calculator(expression: str) -> float:
    """Evaluate an arithmetic expression."""
    return 4.2


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def tracing(exporter: InMemorySpanExporter, *, content: bool = False) -> OpenTelemetry:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetry(tracer_provider=provider, capture_content=content)


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def reply(content: str, prompt: int = 11, completion: int = 5) -> httpx.Response:
    body = chat_completion(content)
    body["usage"] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    return httpx.Response(200, json=body)


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def test_predict_with_a_failed_and_a_good_attempt(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    router.post("/chat/completions").mock(
        side_effect=[reply(json.dumps({"answer": "four"})), reply(json.dumps({"answer": 4}), 20)]
    )
    with ts.context(callbacks=[tracing(exporter)]):
        pred = ts.Predict(Add, lm=make_lm())(question="2 + 2?")
    assert pred.answer == 4
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["chat gpt-test", "chat gpt-test", "invoke_workflow Predict"]
    first, second, module = spans
    assert attrs(module)["gen_ai.operation.name"] == "invoke_workflow"
    for span in (first, second):
        assert span.parent is not None and span.parent.span_id == module.context.span_id
    assert (
        attrs(first)["typedspy.failure_kind"] == "not_enforced"
    )  # the stand-in accepted the strict schema
    assert "typedspy.failure_kind" not in attrs(second)
    assert attrs(first)["typedspy.attempt"] == 1 and attrs(second)["typedspy.attempt"] == 2
    got = attrs(second)
    assert got["gen_ai.operation.name"] == "chat"
    assert got["gen_ai.request.model"] == "gpt-test"
    assert (got["gen_ai.usage.input_tokens"], got["gen_ai.usage.output_tokens"]) == (20, 5)
    assert got["gen_ai.response.finish_reasons"] == ("stop",)
    assert got["server.address"] == "llm.test"
    # Content and credentials stay out unless asked for (and credentials always).
    text = json.dumps([attrs(s) for s in spans])
    assert "2 + 2?" not in text and "four" not in text and "sk-test" not in text


@pytest.mark.parametrize(
    ("lm_defaults", "module_params", "cap"),
    [
        ({}, {"max_tokens": 64}, 64),
        ({"max_completion_tokens": 300}, {}, 300),  # the LM's own default, the newer name
        ({"max_tokens": 300}, {"max_tokens": 64}, 64),  # the call's own wins
    ],
)
def test_the_span_shows_the_completion_cap_that_was_sent(
    router: respx.MockRouter,
    exporter: InMemorySpanExporter,
    lm_defaults: dict[str, int],
    module_params: dict[str, int],
    cap: int,
) -> None:
    route = router.post("/chat/completions").mock(return_value=reply(json.dumps({"answer": 4})))
    lm = make_lm(temperature=0.5, **lm_defaults)
    with ts.context(callbacks=[tracing(exporter)]):
        ts.Predict(Add, lm=lm, **module_params)(question="2 + 2?")  # type: ignore[arg-type]
    sent = json.loads(route.calls[0].request.content)
    assert cap in (sent.get("max_tokens"), sent.get("max_completion_tokens"))
    chat = by_name(exporter.get_finished_spans())["chat gpt-test"][0]
    assert attrs(chat)["gen_ai.request.max_tokens"] == cap
    assert attrs(chat)["gen_ai.request.temperature"] == 0.5


def test_content_is_captured_only_on_opt_in(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    router.post("/chat/completions").mock(return_value=reply(json.dumps({"answer": 4})))
    with ts.context(callbacks=[tracing(exporter, content=True)]):
        ts.Predict(Add, lm=make_lm())(question="2 + 2?")
    chat = exporter.get_finished_spans()[0]
    assert "2 + 2?" in attrs(chat)["gen_ai.input.messages"]
    (answer,) = json.loads(attrs(chat)["gen_ai.output.messages"])
    assert json.loads(answer["parts"][0]["content"]) == {"answer": 4}
    assert "sk-test" not in json.dumps([attrs(s) for s in exporter.get_finished_spans()])


def test_a_react_run_with_two_tool_calls(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_a", "search", {"query": "paris"})),
            calls_reply(("call_b", "calculator", {"expression": "2.1 * 2"})),
            finish_reply(answer="4.2"),
        ]
    )
    agent = ts.ReAct(Ask, tools=[search, calculator], lm=make_lm())
    with ts.context(callbacks=[tracing(exporter)]):
        assert agent(question="twice Paris?").answer == "4.2"
    spans = by_name(exporter.get_finished_spans())
    (root,) = spans["invoke_agent ReAct"]
    assert attrs(root)["gen_ai.agent.name"] == "ReAct"
    tools = spans["execute_tool search"] + spans["execute_tool calculator"]
    assert [attrs(s)["gen_ai.tool.name"] for s in tools] == ["search", "calculator"]
    assert all(attrs(s)["gen_ai.operation.name"] == "execute_tool" for s in tools)
    chats = spans["chat gpt-test"]
    assert len(chats) == 3
    all_spans = exporter.get_finished_spans()
    root_id = root.context.span_id
    ids = {s.context.span_id: s for s in all_spans}

    def under_root(span: ReadableSpan) -> bool:
        while span.parent is not None:
            if span.parent.span_id == root_id:
                return True
            span = ids[span.parent.span_id]
        return False

    assert all(under_root(s) for s in [*tools, *chats])
    assert [attrs(c)["gen_ai.response.finish_reasons"] for c in chats] == [("tool_calls",)] * 3


def test_a_streamed_call(router: respx.MockRouter, exporter: InMemorySpanExporter) -> None:
    text = json.dumps({"answer": 4})
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": text[:6]}}]},
        {"choices": [{"index": 0, "delta": {"content": text[6:]}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}},
    ]
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, text=sse, headers={"content-type": "text/event-stream"})
    )
    with ts.context(callbacks=[tracing(exporter)]):
        events = list(ts.Predict(Add, lm=make_lm()).stream(question="2 + 2?"))
    assert events[-1].answer == 4
    spans = by_name(exporter.get_finished_spans())
    (chat,) = spans["chat gpt-test"]
    (module,) = spans["invoke_workflow Predict"]
    assert chat.parent is not None and chat.parent.span_id == module.context.span_id
    got = attrs(chat)
    assert (got["gen_ai.usage.input_tokens"], got["gen_ai.usage.output_tokens"]) == (9, 3)
    assert got["gen_ai.response.finish_reasons"] == ("stop",)


def test_a_failed_call_marks_the_spans(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(None, refusal="no"))
    )
    with ts.context(callbacks=[tracing(exporter)]), pytest.raises(ts.errors.RefusalError):
        ts.Predict(Add, lm=make_lm())(question="q")
    chat, module = exporter.get_finished_spans()
    assert attrs(chat)["typedspy.failure_kind"] == "RefusalError"
    assert attrs(module)["error.type"] == "RefusalError"
    assert module.status.status_code.name == "ERROR"


def test_without_opentelemetry_api_the_callback_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    with pytest.raises(ts.ConfigurationError, match=r'pip install "typedspy\[otel\]"'):
        OpenTelemetry()
