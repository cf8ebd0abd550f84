"""Issue 23 item 5: spans a GenAI-aware viewer renders natively (ADR-079).

Attribute names and well-known values are checked against the constants of the
``opentelemetry-semantic-conventions`` package where it has them. Spans are read back with the
SDK's in-memory exporter; the model is the stand-in over a real socket, or respx under the real
``openai`` client.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import respx
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import SpanKind
from pydantic import BaseModel

import typedspy as ts
from modules.react_wire import BASE_URL, bodies, calls_reply, finish_reply, make_lm
from typedspy.lm import LMRequest, LMResponse
from typedspy.prediction import Usage
from typedspy.testing import FakeLM, StandIn, chat_completion
from typedspy.tracing import OpenTelemetry

CHAT = ga.GenAiOperationNameValues.CHAT.value
EXECUTE_TOOL = ga.GenAiOperationNameValues.EXECUTE_TOOL.value
INVOKE_AGENT = ga.GenAiOperationNameValues.INVOKE_AGENT.value
OPENAI = ga.GenAiProviderNameValues.OPENAI.value
EXAMPLE = Path(__file__).parents[2] / "examples" / "04_react_tools.py"


def tracing(exporter: InMemorySpanExporter, *, content: bool = True) -> OpenTelemetry:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OpenTelemetry(tracer_provider=provider, capture_content=content)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan | None:
    parent = span.parent
    return next((s for s in spans if parent and s.context.span_id == parent.span_id), None)


def ancestors(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> list[ReadableSpan]:
    out: list[ReadableSpan] = []
    current = parent_of(span, spans)
    while current is not None:
        out.append(current)
        current = parent_of(current, spans)
    return out


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


class Add(ts.Signature):
    """Add the numbers."""

    question: str = ts.InputField()
    answer: int = ts.OutputField()


def test_a_model_call_is_a_client_span_with_the_conventions_attributes(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    body = chat_completion(json.dumps({"answer": 4}))
    body |= {"id": "chatcmpl-42", "model": "gpt-test-0611"}
    body["usage"] = {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    router.post("/chat/completions").mock(return_value=httpx.Response(200, json=body))
    lm = make_lm(temperature=0.25, top_p=0.5, seed=7, stop=["END"])
    with ts.context(callbacks=[tracing(exporter, content=False)]):
        ts.Predict(Add, lm=lm)(question="2 + 2?")
    chat, module = exporter.get_finished_spans()
    assert (chat.name, chat.kind) == ("chat gpt-test", SpanKind.CLIENT)
    assert module.kind == SpanKind.INTERNAL
    got = attrs(chat)
    assert got[ga.GEN_AI_OPERATION_NAME] == CHAT
    assert got[ga.GEN_AI_PROVIDER_NAME] == OPENAI
    assert got[ga.GEN_AI_REQUEST_MODEL] == "gpt-test"
    assert got[ga.GEN_AI_REQUEST_TEMPERATURE] == 0.25
    assert got[ga.GEN_AI_REQUEST_TOP_P] == 0.5
    assert got[ga.GEN_AI_REQUEST_SEED] == 7
    assert got[ga.GEN_AI_REQUEST_STOP_SEQUENCES] == ("END",)
    assert got[ga.GEN_AI_RESPONSE_MODEL] == "gpt-test-0611"
    assert got[ga.GEN_AI_RESPONSE_ID] == "chatcmpl-42"
    assert got[ga.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert (got[ga.GEN_AI_USAGE_INPUT_TOKENS], got[ga.GEN_AI_USAGE_OUTPUT_TOKENS]) == (11, 5)
    assert got[server_attributes.SERVER_ADDRESS] == "llm.test"
    assert got[server_attributes.SERVER_PORT] == 443


class Flight(BaseModel):
    flight: str
    price_eur: int


class Plan(ts.Signature):
    """Find the flight."""

    request: str = ts.InputField()
    flight: str = ts.OutputField()


@ts.tool
def cheapest(origin: str) -> Flight:
    """The cheapest flight from an airport."""
    return Flight(flight="KL987", price_eur=164)


def test_messages_are_in_the_parts_format_with_tool_calls_and_results_as_exchanged(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_a", "cheapest", {"origin": "CDG"})),
            finish_reply(flight="KL987"),
        ]
    )
    agent = ts.ReAct(Plan, tools=[cheapest], lm=make_lm())
    with ts.context(callbacks=[tracing(exporter)]):
        assert agent(request="Paris, cheap").flight == "KL987"
    spans = exporter.get_finished_spans()
    first, second = named(spans, "chat gpt-test")
    sent = bodies(route)[1]["messages"]  # what the model read on its second step
    observation = next(m["content"] for m in sent if m["role"] == "tool")

    asked = json.loads(attrs(first)[ga.GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in asked] == ["system", "user"]
    assert asked[1]["parts"] == [
        {"type": "text", "content": bodies(route)[0]["messages"][1]["content"]}
    ]
    answered = json.loads(attrs(first)[ga.GEN_AI_OUTPUT_MESSAGES])
    assert answered == [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": "call_a",
                    "name": "cheapest",
                    "arguments": {"origin": "CDG"},
                }
            ],
            "finish_reason": "tool_call",
        }
    ]
    history = json.loads(attrs(second)[ga.GEN_AI_INPUT_MESSAGES])
    assert history[2]["parts"] == answered[0]["parts"]  # the arguments an object, not a string
    assert history[3] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_a", "response": observation}],
    }
    (tool,) = named(spans, "execute_tool cheapest")
    assert tool.kind == SpanKind.INTERNAL
    got = attrs(tool)
    assert got[ga.GEN_AI_OPERATION_NAME] == EXECUTE_TOOL
    assert got[ga.GEN_AI_TOOL_NAME] == "cheapest"
    assert got[ga.GEN_AI_TOOL_DESCRIPTION] == "The cheapest flight from an airport."
    assert json.loads(got[ga.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"origin": "CDG"}  # not re-quoted
    # The result as the model read it: no `_type` on a model that is in no union.
    assert got[ga.GEN_AI_TOOL_CALL_RESULT] == observation
    assert "_type" not in observation


class Booking(BaseModel):
    flight: Flight
    code: str


@ts.tool
def book(origin: str) -> Booking:
    """Book the cheapest flight from an airport."""
    return Booking(flight=Flight(flight="KL987", price_eur=164), code="XK42P")


def test_a_tool_result_of_several_outputs_is_recorded_as_the_model_read_it(
    router: respx.MockRouter, exporter: InMemorySpanExporter
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            calls_reply(("call_a", "book", {"origin": "CDG"})),
            finish_reply(flight="KL987"),
        ]
    )
    agent = ts.ReAct(Plan, tools=[book], lm=make_lm())
    with ts.context(callbacks=[tracing(exporter)]):
        agent(request="Paris, cheap")
    sent = bodies(route)[1]["messages"]
    observation = next(m["content"] for m in sent if m["role"] == "tool")
    (tool,) = named(exporter.get_finished_spans(), "execute_tool book")
    # Dumped by the tool's output types, as the model read it: no `_type` on the flight.
    assert attrs(tool)[ga.GEN_AI_TOOL_CALL_RESULT] == observation
    assert "_type" not in observation


def load_example(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("react_tools_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its annotations name its own models
    spec.loader.exec_module(module)
    return module


def test_the_readme_agent_example_paused_and_resumed(
    exporter: InMemorySpanExporter,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """examples/04_react_tools.py: search, pause before booking, resume from signed JSON."""
    example = load_example(monkeypatch)
    secret = "s" * 64
    tools = [example.search_flights, example.book_flight]
    with (
        StandIn() as server,
        caplog.at_level(logging.WARNING),
        ts.context(callbacks=[tracing(exporter)]),
    ):
        example.script(server)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="offline")
        with pytest.raises(ts.ConfirmationRequired) as paused:
            ts.ReAct(example.PlanTrip, tools=tools, lm=lm)(request="CDG to AMS")
        saved = ts.ResumeState(paused.value, "yes").to_json(secret=secret)
        fresh = ts.ReAct(example.PlanTrip, tools=tools, lm=lm)
        pred = fresh(resume_state=ts.ResumeState.from_json(saved, secret=secret))
        lm.close()
    assert pred.booking == example.Booking(flight="KL987", price_eur=164)
    assert not [r for r in caplog.records if "callback" in r.getMessage()]
    spans = exporter.get_finished_spans()
    first_run, resumed = named(spans, f"{INVOKE_AGENT} ReAct")
    pausing, ran = named(spans, "execute_tool book_flight")

    # The pause is no error: both spans it ended say so and keep an OK status.
    for span in (pausing, first_run):
        assert span.status.is_ok, span.name
        assert attrs(span)["typedspy.paused"] is True
        assert error_attributes.ERROR_TYPE not in attrs(span)
        (event,) = [e for e in span.events if e.name == "typedspy.paused"]
        assert (
            dict(event.attributes or {})["typedspy.confirmation_id"] == paused.value.confirmation_id
        )
        assert dict(event.attributes or {})[ga.GEN_AI_TOOL_NAME] == "book_flight"
    assert parent_of(pausing, spans) is first_run

    # The resumed run has its own agent span, over the booking and the last model call.
    assert attrs(resumed)["typedspy.resumed"] is True
    assert attrs(resumed)["typedspy.confirmation_id"] == paused.value.confirmation_id
    assert attrs(resumed)[ga.GEN_AI_AGENT_NAME] == "ReAct"
    assert resumed.status.is_ok and "typedspy.paused" not in attrs(resumed)
    assert parent_of(ran, spans) is resumed
    assert attrs(ran)[ga.GEN_AI_TOOL_CALL_RESULT] == "KL987 booked, confirmation code XK42P"

    chats = named(spans, "chat standin-1")
    assert len(chats) == 3
    assert [first_run, first_run, resumed] == [ancestors(c, spans)[-1] for c in chats]
    for chat in chats:
        assert chat.kind == SpanKind.CLIENT
        assert attrs(chat)[ga.GEN_AI_OPERATION_NAME] == CHAT
        for key in (ga.GEN_AI_INPUT_MESSAGES, ga.GEN_AI_OUTPUT_MESSAGES):
            for message in json.loads(attrs(chat)[key]):
                assert {"role", "parts"} <= set(message)
                assert all(isinstance(p, dict) and "type" in p for p in message["parts"])
    last = json.loads(attrs(chats[-1])[ga.GEN_AI_OUTPUT_MESSAGES])[0]["parts"][0]
    assert last["name"] == "finish"
    assert last["arguments"]["booking"] == {"flight": "KL987", "price_eur": 164}


class Hostile:
    def __str__(self) -> str:
        raise RuntimeError("no str")


class Echo(ts.Module):
    async def aforward(self, value: object) -> str:
        return "ok"


def hostile_values() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    pause = ts.ConfirmationRequired("Book?", confirmation_id="c1", tool_call={"name": "book"})
    return [
        pause,
        b"\x00\xffbytes",
        Flight(flight="KL987", price_eur=164),
        loop,
        Hostile(),
        {1: {2, 3}, (4,): float("nan")},
    ]


@pytest.mark.parametrize("value", hostile_values(), ids=lambda v: type(v).__name__)
def test_capture_content_never_fails_on_any_value(
    value: object, exporter: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    callback = tracing(exporter)
    with caplog.at_level(logging.WARNING), ts.context(callbacks=[callback]):
        assert Echo()(value=value) == "ok"
    # Every hook that records content, given the value where content goes.
    lm = FakeLM(["x"])
    messages = (
        {"role": "user", "content": value},
        {"role": "user", "content": [value, {"type": "image_url", "image_url": value}]},
        {"role": "assistant", "tool_calls": [value, {"function": {"arguments": value}}]},
        {"role": "tool", "tool_call_id": value, "content": value},
        value,
    )
    callback.on_lm_start("lm", lm, LMRequest(messages=messages))  # type: ignore[arg-type]
    callback.on_lm_end("lm", None, None)
    callback.on_tool_start("tool", cheapest, value)
    callback.on_tool_end("tool", {"flight": value}, None)
    callback.on_tool_start("tool2", cheapest, {"origin": value})
    callback.on_tool_end("tool2", value, None)
    assert not [r for r in caplog.records if "callback" in r.getMessage()]
    spans = {s.name: attrs(s) for s in exporter.get_finished_spans()}
    assert isinstance(spans["invoke_workflow Echo"]["typedspy.inputs"], str)
    assert isinstance(spans["chat fake"][ga.GEN_AI_INPUT_MESSAGES], str)
    assert isinstance(spans["execute_tool cheapest"][ga.GEN_AI_TOOL_CALL_RESULT], str)


def test_every_kind_of_message_part_is_recorded_in_the_parts_format(
    exporter: InMemorySpanExporter,
) -> None:
    callback = tracing(exporter)
    parts = [
        {"type": "text", "text": "Look:"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QQ=="}},
        {"type": "image_url", "image_url": {"url": "https://img.test/cat.png"}},
        {"type": "input_audio", "input_audio": {"data": "QQ==", "format": "wav"}},
        {"type": "input_audio", "input_audio": {"data": "QQ=="}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,QQ=="}},
        {"type": "file", "file": {"file_data": "data:;base64,QQ=="}},
        "bare text",
    ]
    messages = [
        {"role": "system", "content": "Be brief.", "name": "policy"},
        {"role": "user", "content": parts},
        {
            "role": "assistant",
            "content": None,
            "reasoning": "thinking",
            "refusal": "I cannot.",
            "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{not json"}}],
        },
    ]
    request = LMRequest(messages=tuple(messages), params={"n": 2, "stop": ["END", 1]})
    callback.on_lm_start("lm", FakeLM(["x"]), request)
    reply = {"message": {"role": "assistant", "content": "Hi"}, "finish_reason": "tool_calls"}
    raw = {"choices": [reply, "not a choice"]}
    usage = Usage(prompt_tokens=1, completion_tokens=1)
    response = LMResponse(
        text="Hi",
        refusal=None,
        finish_reason="stop",
        tool_calls=(),
        usage=usage,
        model="fake",
        raw=raw,
    )
    callback.on_lm_end("lm", response, None)
    callback.on_lm_end("never started", response, None)  # nothing open: nothing recorded
    callback.on_tool_end("never started", None, None)

    (span,) = exporter.get_finished_spans()
    got = attrs(span)
    assert got[ga.GEN_AI_REQUEST_CHOICE_COUNT] == 2
    assert ga.GEN_AI_REQUEST_STOP_SEQUENCES not in got  # a stop list with no text is not one
    system, user, assistant = json.loads(got[ga.GEN_AI_INPUT_MESSAGES])
    assert system == {
        "role": "system",
        "parts": [{"type": "text", "content": "Be brief."}],
        "name": "policy",
    }
    assert user["parts"] == [
        {"type": "text", "content": "Look:"},
        {"type": "blob", "modality": "image", "mime_type": "image/png", "content": "QQ=="},
        {"type": "uri", "modality": "image", "uri": "https://img.test/cat.png"},
        {"type": "blob", "modality": "audio", "mime_type": "audio/wav", "content": "QQ=="},
        {"type": "blob", "modality": "audio", "mime_type": None, "content": "QQ=="},
        {"type": "file", "file_id": "file-1"},
        {
            "type": "blob",
            "modality": "application",
            "mime_type": "application/pdf",
            "content": "QQ==",
        },
        {"type": "blob", "modality": None, "mime_type": None, "content": "QQ=="},
        {"type": "text", "content": "bare text"},
    ]
    assert assistant["parts"] == [
        {"type": "reasoning", "content": "thinking"},
        {"type": "refusal", "content": "I cannot."},
        {"type": "tool_call", "id": "c1", "name": "f", "arguments": "{not json"},  # as written
    ]
    assert json.loads(got[ga.GEN_AI_OUTPUT_MESSAGES]) == [  # a choice that is no object is left out
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Hi"}],
            "finish_reason": "tool_call",
        }
    ]


class Elsewhere(FakeLM):
    """A user's LM whose endpoint is whatever it says."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(['{"answer": "x"}'])
        self._endpoint = endpoint

    @property
    def endpoint(self) -> str | None:
        return self._endpoint


@pytest.mark.parametrize(
    ("endpoint", "server"),
    [
        ("http://[::1/v1", {}),  # a broken IPv6 literal
        ("http://llm.test:99999/v1", {"server.address": "llm.test"}),  # no such port
        ("http://llm.test:port/v1", {"server.address": "llm.test"}),
        ("http:///v1", {}),  # no host
        ("ftp://llm.test/v1", {"server.address": "llm.test"}),  # no port the scheme implies
    ],
)
def test_an_endpoint_tracing_cannot_read_leaves_the_server_out_and_the_call_goes_on(
    exporter: InMemorySpanExporter, endpoint: str, server: dict[str, Any]
) -> None:
    with ts.context(callbacks=[tracing(exporter)]):
        assert ts.Predict("question -> answer", lm=Elsewhere(endpoint))(question="q").answer == "x"
    chat = next(s for s in exporter.get_finished_spans() if s.name == "chat fake")
    got = {k: v for k, v in attrs(chat).items() if k.startswith("server.")}
    assert got == server


def test_an_lm_that_cannot_build_its_client_is_traced_without_a_server(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    lm = ts.LM("gpt-test")  # no key: the client cannot be built, so it has no endpoint
    callback = tracing(exporter)
    callback.on_lm_start("lm", lm, LMRequest(messages=({"role": "user", "content": "q"},)))
    callback.on_lm_end("lm", None, ts.errors.ConfigurationError("no key"))
    (span,) = exporter.get_finished_spans()
    assert attrs(span)[ga.GEN_AI_REQUEST_MODEL] == "gpt-test"
    assert not [k for k in attrs(span) if k.startswith("server.")]
    assert attrs(span)[error_attributes.ERROR_TYPE] == "ConfigurationError"


def test_a_failed_request_marks_its_attempts_span_with_the_error(
    exporter: InMemorySpanExporter,
) -> None:
    with ts.context(callbacks=[tracing(exporter)]), pytest.raises(ts.LMError):
        ts.Predict("question -> answer", lm=FakeLM([]))(question="q")
    chat = next(s for s in exporter.get_finished_spans() if s.name == "chat fake")
    assert attrs(chat)["typedspy.attempt"] == 1
    assert attrs(chat)[error_attributes.ERROR_TYPE] == "LMError"
