"""Streaming replays: recorded SSE bodies from real APIs, through the real openai client (respx).

Each recorded stream is also assembled into the completion a non-streamed request would have
returned, and the non-streamed call is run on it: both paths must give equal predictions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any, Literal, cast

import httpx
import openai
import pytest
import respx
from pydantic import BaseModel

import typedspy as ts
from typedspy.errors import LMError, RefusalError, TruncatedOutputError
from typedspy.react import ReAct
from typedspy.streaming import (
    OutputDelta,
    PartialPrediction,
    RetryStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from typedspy.testing import chat_completion, error_body, sse_body
from typedspy.testing._payloads import completion_chunks
from typedspy.tools import tool
from wire import BASE_URL, Author, Book, Location, load, sent


class Conditions(BaseModel):
    temperature: str
    condition: str
    humidity: str
    windSpeed: str  # the recorded JSON's own keys
    windDirection: str


class Day(BaseModel):
    day: str
    high: str
    low: str
    condition: str


class Weather(ts.Signature):
    """Describe the weather, as JSON."""

    question: str = ts.InputField()
    location: str = ts.OutputField()
    weather: Conditions = ts.OutputField()
    forecast: list[Day] = ts.OutputField()


class Answer(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


# -- helpers ----------------------------------------------------------------------------------


def sse(name: str) -> httpx.Response:
    """The recorded stream, byte for byte as the README says to rebuild it."""
    fx = load(name)
    body = "".join(f"data: {p}\n\n" for p in fx["stream"])
    return httpx.Response(200, content=body.encode(), headers={"content-type": "text/event-stream"})


def chunks_of(name: str) -> list[dict[str, Any]]:
    return [json.loads(p) for p in load(name)["stream"] if p != "[DONE]"]


def assembled(name: str) -> dict[str, Any]:
    """The non-streamed completion the recorded chunks add up to (choice 0)."""
    content: list[str] = []
    refusal: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish, usage, model = None, None, None
    for chunk in chunks_of(name):
        model = chunk.get("model") or model
        usage = chunk.get("usage") or usage
        for choice in chunk["choices"]:
            if choice["index"] != 0:
                continue
            delta = choice["delta"]
            content.append(delta.get("content") or "")
            refusal.append(delta.get("refusal") or "")
            for piece in delta.get("tool_calls") or []:
                call = calls.setdefault(piece["index"], {"id": "", "name": "", "arguments": ""})
                call["id"] = piece.get("id") or call["id"]
                call["name"] = piece.get("function", {}).get("name") or call["name"]
                call["arguments"] += piece.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    text = "".join(content)
    body = chat_completion(
        text if text or (not calls and not any(refusal)) else None,
        refusal="".join(refusal) or None,
        finish_reason=finish or "stop",
        tool_calls=[calls[i] for i in sorted(calls)] or None,
        model=model or "gpt-4o",
        usage=usage,
    )
    return body


def recorded_usage(name: str) -> ts.prediction.Usage:
    usage = next(c["usage"] for c in reversed(chunks_of(name)) if c.get("usage"))
    return ts.prediction.Usage(
        usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]
    )


def make_lm() -> ts.LM:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key="sk-test",
        max_retries=0,
        http_client=cast(Any, httpx.AsyncClient()),  # respx patches httpx, not httpx2
    )
    return ts.LM("gpt-4o", client=client)


async def collect(module: ts.Module, **inputs: Any) -> list[Any]:
    return [event async for event in module.astream(**inputs)]


def by_field(events: list[Any]) -> dict[str | None, str]:
    texts: dict[str | None, str] = {}
    for event in events:
        if isinstance(event, OutputDelta):
            texts[event.field] = texts.get(event.field, "") + event.text
    return texts


def partials(events: list[Any]) -> list[PartialPrediction]:
    return [e for e in events if isinstance(e, PartialPrediction)]


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as router:
        yield router


def streamed_and_plain(
    llm: respx.MockRouter, name: str, predict: ts.Predict[Any], **inputs: Any
) -> tuple[list[Any], ts.Prediction[Any], list[dict[str, Any]]]:
    route = llm.post("/chat/completions")
    route.side_effect = [sse(name), httpx.Response(200, json=assembled(name))]
    events = asyncio.run(collect(predict, **inputs))
    plain = predict(**inputs)
    return events, plain, sent(route)


# -- structured output ------------------------------------------------------------------------


def test_strict_location_stream_events_and_final_values(llm: respx.MockRouter) -> None:
    name = "openai-python-stream-strict-location.json"
    predict = ts.Predict(Location, lm=make_lm(), mode="json_schema")
    events, plain, bodies = streamed_and_plain(llm, name, predict, question="SF weather?")

    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert dict(final) == {"city": "San Francisco", "temperature": 61.0, "units": "f"}
    assert final == plain
    assert final.usage == plain.usage == recorded_usage(name) == ts.prediction.Usage(79, 14, 93)
    assert final.raw == plain.raw == '{"city":"San Francisco","temperature":61,"units":"f"}'
    # The request streams with usage; the plain one does not.
    assert bodies[0]["stream"] is True
    assert bodies[0]["stream_options"] == {"include_usage": True}
    assert "stream" not in bodies[1]
    assert {k: v for k, v in bodies[0].items() if k not in ("stream", "stream_options")} == bodies[
        1
    ]
    # Every delta is attributed: the raw value text of each field, structure to None.
    deltas = [e for e in events if isinstance(e, OutputDelta)]
    assert "".join(d.text for d in deltas) == final.raw
    assert by_field(events) == {
        None: '{"city":,"temperature":,"units":}',
        "city": '"San Francisco"',
        "temperature": "61",
        "units": '"f"',
    }
    shown = [dict(p.values) for p in partials(events)]
    sf = "San Francisco"
    assert shown == [
        {"city": ""},
        {"city": "San"},
        {"city": sf},
        {"city": sf},  # complete now: validated
        {"city": sf, "temperature": 61.0},
        {"city": sf, "temperature": 61.0},  # complete now: validated
        {"city": sf, "temperature": 61.0, "units": ""},
        {"city": sf, "temperature": 61.0, "units": "f"},
        {"city": sf, "temperature": 61.0, "units": "f"},
    ]
    in_progress = [p.in_progress for p in partials(events)]
    assert in_progress == [*["city"] * 3, None, "temperature", None, "units", "units", None]
    # The float field is a float in progress too, as its validated value is (61 was streamed).
    assert isinstance(partials(events)[4].values["temperature"], float)
    assert isinstance(partials(events)[5].values["temperature"], float)
    assert partials(events)[-1].values == dict(final)


def test_nested_defs_stream_builds_the_nested_model_as_it_arrives(llm: respx.MockRouter) -> None:
    name = "mirascope-stream-strict-nested-defs-ref.json"
    predict = ts.Predict(Book, lm=make_lm(), mode="json_schema")
    events, plain, _ = streamed_and_plain(llm, name, predict, request="Rothfuss")

    final = events[-1]
    assert final == plain
    assert final.author == Author(first_name="Patrick", last_name="Rothfuss")
    assert final.title == "THE NAME OF THE WIND" and final.rating == 7
    assert final.usage == plain.usage == ts.prediction.Usage(172, 29, 201)
    authors = [p.values["author"] for p in partials(events) if "author" in p.values]
    # In progress, the author is already an Author, built from the keys seen so far.
    assert all(isinstance(a, Author) for a in authors)
    assert authors[0].model_dump(exclude_unset=True) in ({}, {"first_name": ""})
    assert any(a.model_dump(exclude_unset=True) == {"first_name": "Patrick"} for a in authors)
    assert authors[-1] == Author(first_name="Patrick", last_name="Rothfuss")
    assert by_field(events)["author"] == '{"first_name":"Patrick","last_name":"Rothfuss"}'
    assert partials(events)[-1].values == dict(final)


def test_json_object_stream_with_leading_whitespace_and_non_ascii(llm: respx.MockRouter) -> None:
    name = "openai-python-stream-json-object-mode.json"
    predict = ts.Predict(Weather, lm=make_lm(), mode="json_object")
    events, plain, bodies = streamed_and_plain(llm, name, predict, question="SF?")

    final = events[-1]
    assert final == plain
    assert bodies[0]["response_format"] == {"type": "json_object"}
    assert final.location == "San Francisco, CA"
    assert final.weather.temperature == "18°C"
    assert [d.day for d in final.forecast] == ["Monday", "Tuesday", "Wednesday"]
    assert final.usage == ts.prediction.Usage(19, 177, 196)
    texts = by_field(events)
    assert texts[None].startswith("\n  {\n")  # whitespace before the object is no field's
    assert json.loads(texts["location"]) == "San Francisco, CA"
    assert json.loads(texts["forecast"])[2]["condition"] == "Cloudy"
    # The forecast list grows item by item, each item a Day as soon as it starts.
    counts = [len(p.values["forecast"]) for p in partials(events) if "forecast" in p.values]
    assert counts[0] == 0 and counts[-1] == 3 and counts == sorted(counts)
    assert all(isinstance(d, Day) for p in partials(events) for d in p.values.get("forecast", []))
    # Once complete, a field's value never changes again.
    weather = [p.values["weather"] for p in partials(events) if p.in_progress == "forecast"]
    assert weather and all(w == final.weather for w in weather)


# -- refusal and length -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        (
            "openai-python-stream-strict-refusal.json",
            "I'm sorry, I can't assist with that request.",
        ),
        (
            "mirascope-stream-strict-refusal.json",
            "I'm very sorry, but I can't assist with that request.",
        ),
    ],
)
def test_refusal_stream_raises_the_same_refusal_error(
    llm: respx.MockRouter, name: str, refusal: str | None
) -> None:
    route = llm.post("/chat/completions")
    route.side_effect = [sse(name), httpx.Response(200, json=assembled(name))]
    predict = ts.Predict(Location, lm=make_lm(), mode="json_schema")

    events: list[Any] = []

    async def consume() -> None:
        async for event in predict.astream(question="q"):
            events.append(event)

    with pytest.raises(RefusalError) as streamed:
        asyncio.run(consume())
    with pytest.raises(RefusalError) as plain:
        predict(question="q")

    assert events == []  # a refusal is no output: no delta, no partial
    assert streamed.value.refusal == plain.value.refusal
    assert streamed.value.refusal == refusal
    assert str(streamed.value) == str(plain.value)
    assert streamed.value.usage == plain.value.usage == recorded_usage(name)
    assert len(route.calls) == 2  # never retried


def test_length_truncated_stream_raises_after_its_partial(llm: respx.MockRouter) -> None:
    name = "openai-python-stream-strict-length-truncated.json"
    route = llm.post("/chat/completions")
    route.side_effect = [sse(name), httpx.Response(200, json=assembled(name))]
    predict = ts.Predict(Location, lm=make_lm(), mode="json_schema", max_tokens=1)
    events: list[Any] = []

    async def consume() -> None:
        async for event in predict.astream(question="q"):
            events.append(event)

    with pytest.raises(TruncatedOutputError) as streamed:
        asyncio.run(consume())
    with pytest.raises(TruncatedOutputError) as plain:
        predict(question="q")

    assert events == [OutputDelta(None, '{"')]
    assert streamed.value.raw == plain.value.raw == '{"'
    assert str(streamed.value) == str(plain.value)
    assert streamed.value.usage == plain.value.usage == ts.prediction.Usage(79, 1, 80)
    assert [b["max_tokens"] for b in sent(route)] == [1, 1]


# -- parallel tool calls through ReAct --------------------------------------------------------


def finish_stream(answer: str) -> httpx.Response:
    completion = chat_completion(
        None,
        tool_calls=[
            {"id": "call_end", "name": "finish", "arguments": json.dumps({"answer": answer})}
        ],
        finish_reason="tool_calls",
        usage={"prompt_tokens": 10, "completion_tokens": 5},
    )
    body = sse_body(completion_chunks(completion, include_usage=True))
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def test_parallel_tool_calls_stream_through_react(llm: respx.MockRouter) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []

    @tool(name="GetWeatherArgs")
    def get_weather(city: str, country: str, units: Literal["c", "f"] = "c") -> str:
        """Get the temperature for the given country/city combo."""
        ran.append(("weather", {"city": city, "country": country, "units": units}))
        return f"12 {units} in {city}"

    @tool
    def get_stock_price(ticker: str, exchange: str) -> str:
        """Fetch the latest price for a given ticker."""
        ran.append(("stock", {"ticker": ticker, "exchange": exchange}))
        return f"{ticker} is at 200 on {exchange}"

    name = "openai-python-stream-tools-parallel-two.json"
    route = llm.post("/chat/completions")
    route.side_effect = [sse(name), finish_stream("12 c and 200")]
    agent = ReAct(Answer, tools=[get_weather, get_stock_price], lm=make_lm())
    events = asyncio.run(collect(agent, question="Edinburgh weather and AAPL?"))

    tool_events = [e for e in events if isinstance(e, (ToolCallStarted, ToolCallFinished))]
    assert tool_events == [
        ToolCallStarted(
            "call_JMW1whyEaYG438VE1OIflxA2",
            "GetWeatherArgs",
            {"city": "Edinburgh", "country": "GB", "units": "c"},
        ),
        ToolCallFinished("call_JMW1whyEaYG438VE1OIflxA2", "GetWeatherArgs", "12 c in Edinburgh"),
        ToolCallStarted(
            "call_DNYTawLBoN8fj3KN6qU9N1Ou",
            "get_stock_price",
            {"ticker": "AAPL", "exchange": "NASDAQ"},
        ),
        ToolCallFinished(
            "call_DNYTawLBoN8fj3KN6qU9N1Ou", "get_stock_price", "AAPL is at 200 on NASDAQ"
        ),
    ]
    assert [r[0] for r in ran] == ["weather", "stock"]
    # The finish call's arguments stream as the task's partial outputs, after the tools ran.
    first_partial = next(i for i, e in enumerate(events) if isinstance(e, PartialPrediction))
    assert first_partial > events.index(tool_events[-1])
    assert by_field(events)["answer"] == ' "12 c and 200"'
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert final.answer == "12 c and 200" and final.finished is True
    assert final.usage == ts.prediction.Usage(149 + 10, 60 + 5, 209 + 15)
    # Step 2 sends both calls back with their observations, as a non-streamed run would.
    second = sent(route)[1]
    assert all(b["stream"] is True for b in sent(route))
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [
        "12 c in Edinburgh",
        "AAPL is at 200 on NASDAQ",
    ]


def test_parallel_strict_calls_to_one_tool_stream_through_react(llm: respx.MockRouter) -> None:
    @tool
    def secret_retrieval_tool(password: str) -> str:
        """A tool that requires a password to retrieve a secret."""
        return {"mellon": "Welcome to Moria!", "radiance": "Life before death."}[password]

    name = "mirascope-stream-tools-parallel-strict.json"
    route = llm.post("/chat/completions")
    route.side_effect = [sse(name), finish_stream("both secrets")]
    agent = ReAct(Answer, tools=[secret_retrieval_tool], lm=make_lm())
    events = asyncio.run(collect(agent, question="secrets for mellon, radiance"))

    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [s.arguments for s in started] == [{"password": "mellon"}, {"password": "radiance"}]
    assert [(f.call_id, f.observation, f.error) for f in finished] == [
        ("call_NnkmjbtYL9gdZnGOMxYEl0A3", "Welcome to Moria!", False),
        ("call_uvC42eCVUOg2Y35G9FQKjAOB", "Life before death.", False),
    ]
    kinds = [type(e).__name__ for e in events if not isinstance(e, OutputDelta)]
    assert kinds[:4] == ["ToolCallStarted", "ToolCallFinished"] * 2
    assert kinds[-1] == "AgentPrediction"
    assert events[-1].answer == "both secrets"
    assert events[-1].usage == ts.prediction.Usage(75 + 10, 53 + 5, 128 + 15)
    # The same run without streaming ends with an equal prediction.
    route.side_effect = [
        httpx.Response(200, json=assembled(name)),
        httpx.Response(
            200,
            json=chat_completion(
                None,
                tool_calls=[
                    {"id": "call_end", "name": "finish", "arguments": '{"answer": "both secrets"}'}
                ],
                finish_reason="tool_calls",
                usage={"prompt_tokens": 10, "completion_tokens": 5},
            ),
        ),
    ]
    plain = agent(question="secrets for mellon, radiance")
    assert plain == events[-1]
    assert plain.usage == events[-1].usage
    assert list(plain.trajectory) == list(events[-1].trajectory)


# -- endpoint errors --------------------------------------------------------------------------


def test_auto_mode_falls_back_when_a_streamed_request_is_rejected(llm: respx.MockRouter) -> None:
    rejected = httpx.Response(
        400,
        json=error_body(
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
            "this model.",
            param="response_format",
            code="unsupported_parameter",
        ),
    )
    route = llm.post("/chat/completions")
    route.side_effect = [rejected, sse("openai-python-stream-json-object-mode.json")]
    lm = make_lm()
    events = asyncio.run(collect(ts.Predict(Weather, lm=lm, mode="auto"), question="SF?"))

    bodies = sent(route)
    assert [b["response_format"]["type"] for b in bodies] == ["json_schema", "json_object"]
    assert all(b["stream"] is True for b in bodies)
    assert lm.profile.auto_mode() == "json_object"
    assert events[-1].location == "San Francisco, CA"
    assert not any(isinstance(e, RetryStarted) for e in events)  # a fallback is not a retry


def test_an_error_event_mid_stream_raises_an_lm_error_after_the_partials(
    llm: respx.MockRouter,
) -> None:
    chunks = load("openai-python-stream-strict-location.json")["stream"][:6]
    error = json.dumps({"error": {"message": "The server had an error", "type": "server_error"}})
    body = "".join(f"data: {p}\n\n" for p in [*chunks, error])
    llm.post("/chat/completions").mock(
        return_value=httpx.Response(
            200, content=body.encode(), headers={"content-type": "text/event-stream"}
        )
    )
    predict = ts.Predict(Location, lm=make_lm(), mode="json_schema")
    events: list[Any] = []

    async def consume() -> None:
        async for event in predict.astream(question="q"):
            events.append(event)

    with pytest.raises(LMError, match="The server had an error"):
        asyncio.run(consume())
    assert partials(events)[-1].values == {"city": "San Francisco"}
    assert "".join(e.text for e in events if isinstance(e, OutputDelta)) == '{"city":"San Francisco'
