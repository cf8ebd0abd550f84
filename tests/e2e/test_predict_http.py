"""Predict end to end under the real openai client, HTTP answered by respx (recorded bodies too).

Every test builds its own `ts.LM` around an injected ``AsyncOpenAI`` whose transport is an
``httpx.AsyncClient`` (openai 3.x sends through ``httpx2``, which respx does not intercept), and
asserts on the JSON bodies the SDK actually sent.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import logging
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import httpx
import openai
import pytest
import respx
from pydantic import AfterValidator, BaseModel

import typedspy as ts
from agent_models import FEEDBACK_LABEL as LABEL
from agent_models import CompleteTask, Continue, Decide, SpawnTask
from typedspy.testing import chat_completion, error_body
from wire import BASE_URL, Author, Book, Location, load, make_lm, sent

# -- signatures -------------------------------------------------------------------------------


class CityLocation(ts.Signature):
    """Name a city."""

    question: str = ts.InputField()
    city: str = ts.OutputField()
    country: str = ts.OutputField()


class Color(str, enum.Enum):
    RED = "red"
    BLUE = "blue"
    GREEN = "green"


class ColorDetection(ts.Signature):
    """Detect the color."""

    question: str = ts.InputField()
    color: Color = ts.OutputField(description="The detected color")
    hex_color_code: str = ts.OutputField(description="The hex color code of the detected color")


class CalendarEvent(ts.Signature):
    """Extract the event information."""

    text: str = ts.InputField()
    name: str = ts.OutputField()
    date: str = ts.OutputField()
    participants: list[str] = ts.OutputField()


class BookSummary(ts.Signature):
    """Summarise the book."""

    request: str = ts.InputField()
    title: str = ts.OutputField()
    author: str = ts.OutputField()
    pages: int = ts.OutputField()
    publication_year: int = ts.OutputField()


class CityData(BaseModel):
    city: str
    country: str


class LanguageData(BaseModel):
    country: str
    language: str


class CityResult(BaseModel):
    kind: Literal["CityLocation"]
    data: CityData


class LanguageResult(BaseModel):
    kind: Literal["CountryLanguage"]
    data: LanguageData


class FinalResult(ts.Signature):
    """Answer with the final result."""

    question: str = ts.InputField()
    result: CityResult | LanguageResult = ts.OutputField()


class GetWeatherArgs(ts.Signature):
    """Get the temperature for the given country/city combo."""

    question: str = ts.InputField()
    city: str = ts.OutputField()
    country: str = ts.OutputField()
    units: Literal["c", "f"] = ts.OutputField(default="c")


class GetWeather(ts.Signature):
    """Get the weather."""

    question: str = ts.InputField()
    city: str = ts.OutputField()
    state: str = ts.OutputField()


class SecretRetrieval(ts.Signature):
    """Retrieve a secret."""

    request: str = ts.InputField()
    password: str = ts.OutputField()


class Table(str, enum.Enum):
    ORDERS = "orders"
    CUSTOMERS = "customers"
    PRODUCTS = "products"


class Column(str, enum.Enum):
    ID = "id"
    STATUS = "status"
    EXPECTED_DELIVERY_DATE = "expected_delivery_date"
    DELIVERED_AT = "delivered_at"
    SHIPPED_AT = "shipped_at"
    ORDERED_AT = "ordered_at"
    CANCELED_AT = "canceled_at"


class Operator(str, enum.Enum):
    EQ = "="
    GT = ">"
    LT = "<"
    LE = "<="
    GE = ">="
    NE = "!="


class OrderBy(str, enum.Enum):
    ASC = "asc"
    DESC = "desc"


class DynamicValue(BaseModel):
    column_name: str


class Condition(BaseModel):
    column: str
    operator: Operator
    value: str | int | DynamicValue


class Query(ts.Signature):
    """Build a query."""

    request: str = ts.InputField()
    name: str | None = ts.OutputField(default=None)
    table_name: Table = ts.OutputField()
    columns: list[Column] = ts.OutputField()
    conditions: list[Condition] = ts.OutputField()
    order_by: OrderBy = ts.OutputField()


def _exactly_173(value: int) -> int:
    if value != 173:
        raise ValueError(f"The number must be exactly 173, but got {value}")
    return value


class LuckyNumber(ts.Signature):
    """Pick a lucky number."""

    prompt: str = ts.InputField()
    value: Annotated[int, AfterValidator(_exactly_173)] = ts.OutputField()


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


class Scores(ts.Signature):
    """Score each item."""

    items: list[str] = ts.InputField()
    scores: list[int] = ts.OutputField()


class Triage(ts.Signature):
    """Triage the work item."""

    item: SpawnTask | Continue = ts.InputField()
    note: str = ts.InputField()
    verdict: str = ts.OutputField()


# -- helpers ----------------------------------------------------------------------------------


@functools.cache
def replay(name: str) -> httpx.Response:
    fx = load(name)
    assert fx["stream"] is None, "Predict does not stream; replay JSON bodies only"
    body = fx.get("response_raw") or json.dumps(fx["response"])
    return httpx.Response(
        fx["status"], content=body.encode(), headers={"content-type": fx["content_type"]}
    )


def fixture_usage(name: str) -> ts.prediction.Usage:
    usage = load(name)["response"]["usage"]
    return ts.prediction.Usage(
        usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]
    )


def ok(content: str | None = None, **kwargs: Any) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(content, **kwargs))


def tool_reply(
    name: str, arguments: str, *, call_id: str = "call_1", **kwargs: Any
) -> httpx.Response:
    calls = [{"id": call_id, "name": name, "arguments": arguments}]
    return ok(None, tool_calls=calls, finish_reason="tool_calls", **kwargs)


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


SPAWN = {"_type": "SpawnTask", "description": "cut the release branch", "priority": "high"}
COMPLETE = {"_type": "CompleteTask", "task_id": "T-7", "result": "shipped"}
GOOD = json.dumps({"action": COMPLETE, "confidence": 0.9})
BAD_PRIORITY = json.dumps({"action": {**SPAWN, "priority": "urgent"}, "confidence": 0.4})


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


# -- request shape per mode -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "json_schema"])
def test_json_schema_request_is_strict_with_the_compiled_schema(
    llm: respx.MockRouter, mode: Literal["auto", "json_schema"]
) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(GOOD))
    pred = ts.Predict(Decide, lm=make_lm(), mode=mode)(task="Ship the release")

    (body,) = sent(route)
    strict = ts.schema.compile_schema(Decide, "openai-strict")
    assert body["model"] == "gpt-4o-mini"
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Decide", "schema": strict.schema, "strict": True},
    }
    assert "tools" not in body and "tool_choice" not in body
    system, user = body["messages"]
    assert system["role"] == "system"
    assert system["content"].startswith("Decide the agent's next action.")
    assert "- task: what the user asked for" in system["content"]
    # The strict schema carries the outputs; the openai profile's prompt does not repeat them.
    assert system["content"] == (
        "Decide the agent's next action.\n\nInputs:\n- task: what the user asked for"
    )
    assert user == {"role": "user", "content": "<task>\nShip the release\n</task>"}
    assert isinstance(pred.action, CompleteTask)
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")
    assert pred.confidence == 0.9


def test_json_object_request_has_json_mode_and_the_word_json(llm: respx.MockRouter) -> None:
    pretty = "\n  " + json.dumps({"action": SPAWN, "confidence": 0.25}, indent=2)
    route = llm.post("/chat/completions").mock(return_value=ok(pretty))
    pred = ts.Predict(Decide, lm=make_lm(), mode="json_object")(task="Ship it")

    (body,) = sent(route)
    assert body["response_format"] == {"type": "json_object"}
    assert any("JSON" in m["content"] for m in body["messages"])
    schema = ts.schema.compile_schema(Decide, "json-schema").schema
    fenced = "```json\n" + json.dumps(schema, separators=(",", ":")) + "\n```"
    assert fenced in body["messages"][0]["content"]
    assert pred.action == SpawnTask(description="cut the release branch", priority="high")
    assert pred.confidence == 0.25


def test_prompt_mode_sends_no_response_format_and_the_shape_in_the_system_turn(
    llm: respx.MockRouter,
) -> None:
    reply = f"Sure, here it is:\n```json\n{GOOD}\n```\nAnything else?"
    route = llm.post("/chat/completions").mock(return_value=ok(reply))
    pred = ts.Predict(Decide, lm=make_lm(), mode="prompt")(task="Ship it")

    (body,) = sent(route)
    assert "response_format" not in body and "tools" not in body
    shape = ts.schema.compile_schema(Decide, "json-schema").shape
    assert '"_type": "SpawnTask"' in shape
    assert shape in body["messages"][0]["content"]
    assert isinstance(pred.action, CompleteTask) and pred.action.task_id == "T-7"


def test_prompt_mode_parses_a_marker_format_reply(llm: respx.MockRouter) -> None:
    action = json.dumps({"_type": "Continue", "reason": "waiting on review"})
    reply = f"[[ ## action ## ]]\n{action}\n\n[[ ## confidence ## ]]\n0.7\n\n[[ ## completed ## ]]"
    llm.post("/chat/completions").mock(return_value=ok(reply))
    pred = ts.Predict(Decide, lm=make_lm(), mode="prompt")(task="Ship it")

    assert pred.action == Continue(reason="waiting on review")
    assert pred.confidence == 0.7
    assert pred.raw == reply


def test_tools_mode_forces_one_strict_call_and_reads_its_arguments(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(return_value=tool_reply("Decide", GOOD))
    pred = ts.Predict(Decide, lm=make_lm(), mode="tools")(task="Ship it")

    (body,) = sent(route)
    strict = ts.schema.compile_schema(Decide, "openai-strict")
    assert "response_format" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "Decide",
                "description": "Decide the agent's next action.",
                "parameters": strict.schema,
                "strict": True,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Decide"}}
    assert body["parallel_tool_calls"] is False
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")
    assert pred.raw == GOOD


def test_lm_kwargs_go_into_every_request(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(side_effect=[ok(BAD_PRIORITY), ok(GOOD)])
    ts.Predict(Decide, lm=make_lm(), temperature=0.3, max_tokens=123, seed=7)(task="x")

    bodies = sent(route)
    assert len(bodies) == 2
    for body in bodies:
        assert (body["temperature"], body["max_tokens"], body["seed"]) == (0.3, 123, 7)


# -- success and Prediction -------------------------------------------------------------------


def test_prediction_is_typed_with_attribute_mapping_and_dict_access(
    llm: respx.MockRouter,
) -> None:
    llm.post("/chat/completions").mock(return_value=ok(GOOD, usage=usage(40, 12)))
    pred = ts.Predict(Decide, lm=make_lm())(task="Ship it")

    assert isinstance(pred, ts.Prediction)
    assert pred.action is pred["action"]
    assert type(pred.action) is CompleteTask
    assert list(pred) == ["action", "confidence"] and len(pred) == 2
    assert dict(pred) == {
        "action": CompleteTask(task_id="T-7", result="shipped"),
        "confidence": 0.9,
    }
    assert pred.to_dict() == {"action": COMPLETE, "confidence": 0.9}
    assert pred.usage == ts.prediction.Usage(40, 12, 52)
    assert [(a.number, a.raw, a.errors, a.kind) for a in pred.attempts] == [(1, GOOD, (), None)]
    assert pred.raw == GOOD
    assert pred.completion is not None and pred.completion.finish_reason == "stop"
    with pytest.raises(AttributeError, match="no output 'missing'"):
        _ = pred.missing


class Basket(ts.Signature):
    """List what the shopper asked for."""

    request: str = ts.InputField()
    items: list[str] = ts.OutputField()
    usage: str = ts.OutputField(description="what the items are for")


def test_an_output_named_like_a_prediction_attribute_is_read_by_key_or_typed_view(
    llm: respx.MockRouter,
) -> None:
    # ADR-089: the Prediction's own names win on attribute access; the output is not lost.
    reply = json.dumps({"items": ["eggs", "flour"], "usage": "a cake"})
    llm.post("/chat/completions").mock(return_value=ok(reply, usage=usage(30, 9)))
    pred = ts.Predict(Basket, lm=make_lm())(request="a cake")

    assert pred["items"] == pred.outputs.items == ["eggs", "flour"]
    assert pred["usage"] == pred.outputs.usage == "a cake"
    assert list(pred.items()) == [("items", ["eggs", "flour"]), ("usage", "a cake")]
    assert pred.usage == ts.prediction.Usage(30, 9, 39)
    assert pred.to_dict() == {"items": ["eggs", "flour"], "usage": "a cake"}


def test_acall_in_a_running_loop_and_lm_from_context(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(GOOD))
    lm = make_lm(model="from-context")

    async def main() -> ts.Prediction[Decide]:
        with ts.context(lm=lm):
            return await ts.Predict(Decide).acall(task="Ship it")

    pred = asyncio.run(main())
    assert sent(route)[0]["model"] == "from-context"
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")
    assert ts.settings.get_settings().lm is not lm


def test_each_union_member_comes_back_as_its_own_class(llm: respx.MockRouter) -> None:
    replies = [
        json.dumps({"action": SPAWN, "confidence": 0.1}),
        json.dumps({"action": COMPLETE, "confidence": 0.2}),
        json.dumps({"action": {"_type": "Continue", "reason": "wait"}, "confidence": 0.3}),
    ]
    llm.post("/chat/completions").mock(side_effect=[ok(r) for r in replies])
    predict = ts.Predict(Decide, lm=make_lm())

    kinds = [type(predict(task=f"t{i}").action) for i in range(3)]
    assert kinds == [SpawnTask, CompleteTask, Continue]


# -- retry with feedback ----------------------------------------------------------------------


def test_retry_sends_the_failed_reply_and_one_labelled_feedback_turn(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[ok(BAD_PRIORITY, usage=usage(50, 20)), ok(GOOD, usage=usage(90, 15))]
    )
    pred = ts.Predict(Decide, lm=make_lm())(task="Ship it")

    first, second = sent(route)
    assert second["messages"][:2] == first["messages"]
    assert len(second["messages"]) == 4
    assert second["messages"][2] == {"role": "assistant", "content": BAD_PRIORITY}
    feedback = second["messages"][3]
    assert feedback["role"] == "user"
    lines = feedback["content"].splitlines()
    assert lines[0] == LABEL
    assert "not a message from the user" in lines[0]
    assert lines[1] == "Your previous reply was valid JSON but failed validation:"
    assert lines[2].startswith("- action.priority: ")
    assert "'low' or 'high'" in lines[2]
    # response_format carries the schema: the feedback does not restate it (issue #9)
    assert lines[-1] == "Reply again with the complete output as one JSON object."
    assert "http" not in feedback["content"]
    assert second["response_format"] == first["response_format"]

    assert pred.action == CompleteTask(task_id="T-7", result="shipped")
    assert [a.number for a in pred.attempts] == [1, 2]
    assert pred.attempts[0].raw == BAD_PRIORITY
    assert pred.attempts[0].kind == "not_enforced"  # "urgent" is outside the strict enum
    assert [e.path for e in pred.attempts[0].errors] == [("action", "priority")]
    assert pred.attempts[1].errors == ()
    assert pred.usage == ts.prediction.Usage(140, 35, 175)


def test_feedback_lists_at_most_ten_errors_and_no_urls(llm: respx.MockRouter) -> None:
    bad = json.dumps({"scores": [f"x{i}" for i in range(13)]})
    route = llm.post("/chat/completions").mock(side_effect=[ok(bad), ok('{"scores": [1, 2]}')])
    pred = ts.Predict(Scores, lm=make_lm())(items=["a", "b"])

    feedback = sent(route)[1]["messages"][-1]["content"]
    error_lines = [line for line in feedback.splitlines() if line.startswith("- scores[")]
    assert len(error_lines) == 10
    assert error_lines[0].startswith("- scores[0]: ")
    assert "- ... and 3 more" in feedback
    assert "https://" not in feedback and "errors.pydantic.dev" not in feedback
    assert len(pred.attempts[0].errors) == 13
    assert pred.scores == [1, 2]


def test_decode_failure_feedback_says_so(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(side_effect=[ok("I think SpawnTask."), ok(GOOD)])
    pred = ts.Predict(Decide, lm=make_lm())(task="Ship it")

    feedback = sent(route)[1]["messages"][-1]["content"]
    assert feedback.splitlines()[:2] == [
        LABEL,
        "Your previous reply could not be decoded as a JSON object:",
    ]
    assert pred.attempts[0].kind == "not_enforced"  # prose where a schema was accepted
    assert pred.attempts[0].raw == "I think SpawnTask."


def test_tools_mode_feedback_is_the_tool_reply_to_the_forced_call(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[
            tool_reply("Decide", BAD_PRIORITY, call_id="call_bad"),
            tool_reply("Decide", GOOD),
        ]
    )
    pred = ts.Predict(Decide, lm=make_lm(), mode="tools")(task="Ship it")

    messages = sent(route)[1]["messages"]
    assert len(messages) == 4
    assert messages[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_bad",
                "type": "function",
                "function": {"name": "Decide", "arguments": BAD_PRIORITY},
            }
        ],
    }
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_bad"
    assert messages[3]["content"].startswith(LABEL)
    assert "- action.priority: " in messages[3]["content"]
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")


def test_a_forced_call_without_an_id_is_answered_under_one_made_up(
    llm: respx.MockRouter,
) -> None:
    # A server that sends no id: an empty tool_call_id is refused by strict servers.
    idless = tool_reply("Decide", BAD_PRIORITY).json()
    del idless["choices"][0]["message"]["tool_calls"][0]["id"]
    route = llm.post("/chat/completions").mock(
        side_effect=[httpx.Response(200, json=idless), tool_reply("Decide", GOOD)]
    )
    ts.Predict(Decide, lm=make_lm(), mode="tools")(task="Ship it")

    assistant, answer = sent(route)[1]["messages"][2:]
    assert assistant["tool_calls"][0]["id"] == answer["tool_call_id"] == "call_1"


def test_exhausted_retries_raise_with_every_attempt_and_flat_request_size(
    llm: respx.MockRouter,
) -> None:
    bad = [
        BAD_PRIORITY,
        json.dumps({"action": SPAWN, "confidence": 3}),
        json.dumps({"action": {"_type": "Continue"}, "confidence": 0.5}),
    ]
    route = llm.post("/chat/completions").mock(
        side_effect=[
            ok(bad[0], usage=usage(10, 1)),
            ok(bad[1], usage=usage(20, 2)),
            ok(bad[2], usage=usage(30, 3)),
        ]
    )
    with pytest.raises(ts.errors.OutputValidationError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=2)(task="Ship it")

    err = caught.value
    bodies = sent(route)
    assert len(bodies) == 3 == len(err.attempts)
    assert [len(b["messages"]) for b in bodies] == [2, 4, 4]
    third = bodies[2]["messages"]
    assert third[:2] == bodies[0]["messages"]
    assert third[2] == {"role": "assistant", "content": bad[1]}
    assert bad[0] not in json.dumps(third)
    assert "- confidence: " in third[3]["content"]

    assert [a.raw for a in err.attempts] == bad
    assert [a.number for a in err.attempts] == [1, 2, 3]
    # Each reply violates the strict schema the server accepted: typed as not_enforced.
    assert all(a.kind == "not_enforced" for a in err.attempts)
    assert [e.path for e in err.attempts[0].errors] == [("action", "priority")]
    assert [e.path for e in err.attempts[1].errors] == [("confidence",)]
    assert [e.path for e in err.attempts[2].errors] == [("action", "reason")]
    assert err.errors == err.attempts[2].errors
    assert err.raw == bad[2]
    assert [a.usage.total_tokens for a in err.attempts] == [11, 22, 33]
    assert err.usage == ts.prediction.Usage(60, 6, 66)
    assert "3 attempt(s)" in str(err)


def test_exhausted_decode_failures_raise_output_decode_error(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok("no JSON here, sorry"))
    with pytest.raises(ts.errors.OutputDecodeError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=1)(task="Ship it")

    assert route.call_count == 2
    # Prose where the server accepted a schema: not enforced, never decodable; the same prose
    # again ends the call (repeated_reply), as no further attempt would differ.
    assert [a.kind for a in caught.value.attempts] == ["not_enforced", "repeated_reply"]
    assert caught.value.raw == "no JSON here, sorry"


def test_max_retries_zero_makes_exactly_one_request(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(BAD_PRIORITY, usage=usage(7, 3)))
    with pytest.raises(ts.errors.OutputValidationError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=0)(task="Ship it")

    assert route.call_count == 1
    assert len(caught.value.attempts) == 1
    assert caught.value.usage == ts.prediction.Usage(7, 3, 10)


def test_recorded_json_object_validation_retry(llm: respx.MockRouter) -> None:
    first = "mirascope-json-object-retry-1-invalid-value.json"
    second = "mirascope-json-object-retry-2-corrected.json"
    route = llm.post("/chat/completions").mock(side_effect=[replay(first), replay(second)])
    pred = ts.Predict(LuckyNumber, lm=make_lm(), mode="json_object")(prompt="Pick 1-1000")

    bodies = sent(route)
    assert [b["response_format"] for b in bodies] == [{"type": "json_object"}] * 2
    assert pred.value == 173
    assert pred.attempts[0].raw == '{\n  "value": 467\n}'
    assert str(pred.attempts[0].errors[0]) == (
        "value: Value error, The number must be exactly 173, but got 467"
    )
    feedback = bodies[1]["messages"][-1]["content"]
    assert "- value: Value error, The number must be exactly 173, but got 467" in feedback
    assert pred.usage == fixture_usage(first) + fixture_usage(second)


# -- outcomes that are not retried ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "text"),
    [
        ("openai-python-strict-refusal.json", "I'm very sorry, but I can't assist with that."),
        ("mirascope-strict-refusal.json", "I'm very sorry, but I can't assist with that request."),
    ],
)
def test_recorded_refusal_raises_refusal_error_after_one_request(
    llm: respx.MockRouter, fixture: str, text: str
) -> None:
    route = llm.post("/chat/completions").mock(return_value=replay(fixture))
    with pytest.raises(ts.errors.RefusalError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=2)(task="Something harmful")

    assert route.call_count == 1
    assert caught.value.refusal == text
    assert text in str(caught.value)
    assert len(caught.value.attempts) == 1
    assert caught.value.usage == fixture_usage(fixture)


@pytest.mark.parametrize(
    ("fixture", "partial"),
    [
        ("openai-python-strict-length-truncated.json", '{"'),
        ("mirascope-length-reasoning-empty-content.json", ""),
    ],
)
def test_recorded_length_raises_truncated_output_error(
    llm: respx.MockRouter, fixture: str, partial: str
) -> None:
    route = llm.post("/chat/completions").mock(return_value=replay(fixture))
    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.Predict(Location, lm=make_lm(), max_retries=2, max_tokens=1)(question="SF?")

    assert route.call_count == 1
    assert caught.value.raw == partial
    assert caught.value.usage == fixture_usage(fixture)
    assert [a.raw for a in caught.value.attempts] == [partial]
    assert "token limit" in str(caught.value)


def test_content_filter_raises_without_retry(llm: respx.MockRouter) -> None:
    body = chat_completion('{"action": {"_ty', finish_reason="content_filter", usage=usage(9, 4))
    route = llm.post("/chat/completions").mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(ts.errors.ContentFilterError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=2)(task="Ship it")

    assert route.call_count == 1
    assert caught.value.raw == '{"action": {"_ty'
    assert caught.value.usage == ts.prediction.Usage(9, 4, 13)
    assert isinstance(caught.value, ts.OutputError)


def test_azure_filter_annotations_alone_are_not_a_content_filter(llm: respx.MockRouter) -> None:
    fixture = "pydantic-ai-azure-content-filter-results.json"
    llm.post("/chat/completions").mock(return_value=replay(fixture))
    result = ts.Predict(Answer, lm=make_lm(), mode="prompt", max_retries=0).try_call(
        question="What is the capital of France?"
    )

    assert type(result) is ts.errors.OutputDecodeError
    assert result.raw == "The capital of France is **Paris**."
    assert result.usage == fixture_usage(fixture)


def test_empty_choices_is_an_lm_response_error(llm: respx.MockRouter) -> None:
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    route = llm.post("/chat/completions").mock(return_value=httpx.Response(200, json=body))
    with pytest.raises(ts.errors.LMResponseError, match="no choices"):
        ts.Predict(Decide, lm=make_lm(), max_retries=2)(task="Ship it")
    assert route.call_count == 1


def test_null_content_without_refusal_is_a_decode_error_after_retries(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(None))
    with pytest.raises(ts.errors.OutputDecodeError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=2)(task="Ship it")

    assert route.call_count == 2  # the same empty reply again ends the call (repeated_reply)
    assert [str(a.errors[0]) for a in caught.value.attempts] == [
        "<root>: the model returned no content"
    ] * 2
    assert caught.value.attempts[-1].kind == "repeated_reply"
    assert caught.value.raw == ""


def test_recorded_tool_call_where_text_was_expected_is_retried(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[
            replay("mirascope-schema-plus-tools-1-tool-call.json"),
            replay("mirascope-schema-plus-tools-2-final-json.json"),
        ]
    )
    pred = ts.Predict(BookSummary, lm=make_lm())(request="ISBN 0-7653-1178-X")

    (error,) = pred.attempts[0].errors
    assert "get_book_info" in error.message
    assert pred.attempts[0].kind == "decode_failed"
    assert sent(route)[1]["messages"][-1]["content"].startswith(LABEL)
    assert dict(pred) == {
        "title": "Mistborn: The Final Empire",
        "author": "Brandon Sanderson",
        "pages": 544,
        "publication_year": 2006,
    }


def test_text_where_a_tool_call_was_expected_is_retried(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[ok("I would rather chat."), tool_reply("Decide", GOOD)]
    )
    pred = ts.Predict(Decide, lm=make_lm(), mode="tools")(task="Ship it")

    assert route.call_count == 2
    assert pred.attempts[0].kind == "not_enforced"  # the forced call was not made
    assert sent(route)[1]["messages"][2] == {"role": "assistant", "content": "I would rather chat."}
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")


def test_token_budget_stops_before_max_retries(llm: respx.MockRouter) -> None:
    replies = [
        ok(BAD_PRIORITY.replace("urgent", f"urgent{n}"), usage=usage(100, 10)) for n in range(6)
    ]
    route = llm.post("/chat/completions").mock(side_effect=replies)
    with pytest.raises(ts.errors.TokenBudgetExceededError) as caught:
        ts.Predict(Decide, lm=make_lm(), max_retries=5, token_budget=150)(task="Ship it")

    assert route.call_count == 2
    assert len(caught.value.attempts) == 2
    assert caught.value.usage == ts.prediction.Usage(200, 20, 220)
    assert "150" in str(caught.value)
    assert isinstance(caught.value, ts.OutputError)


# -- try_call ---------------------------------------------------------------------------------


def test_try_call_returns_the_output_error_instead_of_raising(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(return_value=ok(BAD_PRIORITY))
    result = ts.Predict(Decide, lm=make_lm(), max_retries=1).try_call(task="Ship it")

    assert type(result) is ts.errors.OutputValidationError
    assert len(result.attempts) == 2
    assert [e.path for e in result.errors] == [("action", "priority")]


def test_atry_call_returns_a_prediction_or_the_error(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(side_effect=[ok(GOOD), ok("nope")])
    predict = ts.Predict(Decide, lm=make_lm(), max_retries=0)

    async def main() -> tuple[object, object]:
        return await predict.atry_call(task="a"), await predict.atry_call(task="b")

    good, bad = asyncio.run(main())
    assert isinstance(good, ts.Prediction) and good.confidence == 0.9
    assert type(bad) is ts.errors.OutputDecodeError and bad.raw == "nope"


def test_try_call_still_raises_endpoint_errors(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(
        return_value=replay("mirascope-error-401-invalid-api-key.json")
    )
    with pytest.raises(ts.errors.LMStatusError):
        ts.Predict(Decide, lm=make_lm()).try_call(task="Ship it")


# -- inputs, demos, history -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "missing", "unexpected"),
    [
        ({}, ("task",), ()),
        ({"task": "x", "extra": 1}, (), ("extra",)),
        ({"tsak": "x"}, ("task",), ("tsak",)),
    ],
)
def test_input_errors_are_raised_before_any_request(
    llm: respx.MockRouter,
    inputs: dict[str, Any],
    missing: tuple[str, ...],
    unexpected: tuple[str, ...],
) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(GOOD))
    predict = ts.Predict(Decide, lm=make_lm())
    with pytest.raises(ts.InputError) as caught:
        predict(**inputs)
    with pytest.raises(ts.InputError):
        predict.try_call(**inputs)

    assert route.call_count == 0
    assert caught.value.missing == missing
    assert caught.value.unexpected == unexpected
    assert "inputs are: task" in str(caught.value)


def test_an_input_of_the_wrong_type_is_an_input_error(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok('{"scores": []}'))
    with pytest.raises(ts.InputError, match="invalid input"):
        ts.Predict(Scores, lm=make_lm())(items="not a list")
    assert route.call_count == 0


def test_demos_and_history_are_placed_between_system_and_inputs(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok('{"verdict": "go"}'))
    demos = [{"item": Continue(reason="blocked"), "note": "demo note", "verdict": "wait"}]
    history = ts.History(system_prompt="Be terse.")
    history.add_message("user", "earlier question")
    history.add_message("assistant", "earlier answer")
    pred = ts.Predict(Triage, lm=make_lm(), demos=demos)(
        item=SpawnTask(description="deploy", priority="low"), note="now", history=history
    )

    messages = sent(route)[0]["messages"]
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[0]["content"].startswith("Triage the work item.")
    assert "Be terse." in messages[0]["content"]
    assert messages[1]["content"] == (
        '<item>\n{"_type":"Continue","reason":"blocked"}\n</item>\n<note>\ndemo note\n</note>'
    )
    assert messages[2]["content"] == '{"verdict":"wait"}'
    assert messages[3:5] == [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": "earlier answer"},
    ]
    assert messages[5]["content"] == (
        '<item>\n{"_type":"SpawnTask","description":"deploy","priority":"low"}\n</item>\n'
        "<note>\nnow\n</note>"
    )
    assert pred.verdict == "go"


def test_history_as_plain_messages(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok('{"answer": "4"}'))
    turns = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    ts.Predict(Answer, lm=make_lm())(question="and again?", history=turns)

    messages = sent(route)[0]["messages"]
    assert messages[1:3] == turns
    assert messages[3] == {"role": "user", "content": "<question>\nand again?\n</question>"}


# -- auto fallback ----------------------------------------------------------------------------

UNSUPPORTED_SCHEMA = httpx.Response(
    400,
    json=error_body(
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with "
        "this model.",
        param="response_format",
        code=None,
    ),
)


def test_auto_falls_back_to_json_object_once_and_remembers(
    llm: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    route = llm.post("/chat/completions").mock(side_effect=[UNSUPPORTED_SCHEMA, ok(GOOD), ok(GOOD)])
    lm = make_lm()
    predict = ts.Predict(Decide, lm=lm)
    with caplog.at_level(logging.WARNING, logger="typedspy"):
        pred = predict(task="Ship it")

    first, second = sent(route)
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"] == {"type": "json_object"}
    assert any("JSON" in m["content"] for m in second["messages"])
    assert pred.action == CompleteTask(task_id="T-7", result="shipped")
    assert lm.profile.rejected == {"json_schema"}
    assert lm.profile.auto_mode() == "json_object"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "falling back to json_object" in warnings[0].getMessage()

    caplog.clear()
    ts.Predict(Decide, lm=lm)(task="Again")
    assert route.call_count == 3
    assert sent(route)[2]["response_format"] == {"type": "json_object"}
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_auto_steps_down_to_prompt_when_json_mode_is_rejected_too(
    llm: respx.MockRouter,
) -> None:
    no_json_mode = httpx.Response(
        400, json=error_body("response_format json_object is not supported by this server")
    )
    route = llm.post("/chat/completions").mock(
        side_effect=[UNSUPPORTED_SCHEMA, no_json_mode, ok(GOOD)]
    )
    lm = make_lm()
    pred = ts.Predict(Decide, lm=lm)(task="Ship it")

    formats = [b.get("response_format", {}).get("type") for b in sent(route)]
    assert formats == ["json_schema", "json_object", None]
    assert lm.profile.rejected == {"json_schema", "json_object"}
    assert lm.profile.auto_mode() == "prompt"
    assert pred.confidence == 0.9


def test_explicit_mode_never_falls_back(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=UNSUPPORTED_SCHEMA)
    lm = make_lm()
    with pytest.raises(ts.errors.LMUnsupportedFeatureError) as caught:
        ts.Predict(Decide, lm=lm, mode="json_schema")(task="Ship it")

    assert route.call_count == 1
    assert caught.value.feature == "response_format"
    assert lm.profile.rejected == frozenset()


# -- transport: the SDK retries, typedspy does not --------------------------------------------


def test_429_with_retry_after_is_retried_by_the_sdk_only(llm: respx.MockRouter) -> None:
    limited = httpx.Response(
        429,
        headers={"Retry-After": "0"},
        json=error_body("Rate limit reached", type="requests", code="rate_limit_exceeded"),
    )
    route = llm.post("/chat/completions").mock(side_effect=[limited, ok(GOOD)])
    pred = ts.Predict(Decide, lm=make_lm(max_retries=1))(task="Ship it")

    assert route.call_count == 2
    assert len(pred.attempts) == 1
    assert pred.confidence == 0.9


def test_429_without_sdk_retries_is_a_rate_limit_error(llm: respx.MockRouter) -> None:
    limited = httpx.Response(429, json=error_body("Rate limit reached", type="requests"))
    route = llm.post("/chat/completions").mock(return_value=limited)
    with pytest.raises(ts.errors.LMRateLimitError) as caught:
        ts.Predict(Decide, lm=make_lm(max_retries=0), max_retries=2)(task="Ship it")

    assert route.call_count == 1
    assert isinstance(caught.value.__cause__, openai.RateLimitError)


# -- recorded successes -----------------------------------------------------------------------

SUCCESSES: list[tuple[str, type[ts.Signature], str, dict[str, Any]]] = [
    (
        "openai-python-strict-location-success.json",
        Location,
        "json_schema",
        {"city": "San Francisco", "temperature": 65.0, "units": "f"},
    ),
    (
        "mirascope-strict-nested-defs-ref.json",
        Book,
        "json_schema",
        {
            "title": "THE NAME OF THE WIND",
            "author": Author(first_name="Patrick", last_name="Rothfuss"),
            "rating": 7,
        },
    ),
    (
        "openai-python-strict-enum-success.json",
        ColorDetection,
        "json_schema",
        {"color": Color.RED, "hex_color_code": "#FF0000"},
    ),
    (
        "openai-python-strict-dataclass-list-success.json",
        CalendarEvent,
        "json_schema",
        {"name": "Science Fair", "date": "Friday", "participants": ["Alice", "Bob"]},
    ),
    (
        "mirascope-schema-plus-tools-2-final-json.json",
        BookSummary,
        "json_schema",
        {
            "title": "Mistborn: The Final Empire",
            "author": "Brandon Sanderson",
            "pages": 544,
            "publication_year": 2006,
        },
    ),
    (
        "pydantic-ai-json-schema-anyof-union.json",
        FinalResult,
        "json_schema",
        {
            "result": CityResult(
                kind="CityLocation", data=CityData(city="Mexico City", country="Mexico")
            )
        },
    ),
    (
        "pydantic-ai-groq-strict-json-schema-extra-fields.json",
        CityLocation,
        "json_schema",
        {"city": "Mexico City", "country": "Mexico"},
    ),
    (
        "pydantic-ai-ollama-json-schema-non-strict.json",
        CityLocation,
        "json_schema",
        {"city": "Paris", "country": "France"},
    ),
    (
        "pydantic-ai-snowflake-json-schema-empty-strings.json",
        CityLocation,
        "json_schema",
        {"city": "Mexico City", "country": "Mexico"},
    ),
    (
        "mirascope-forced-tool-output-finish-stop.json",
        Book,
        "tools",
        {
            "title": "THE NAME OF THE WIND",
            "author": Author(first_name="Patrick", last_name="Rothfuss"),
            "rating": 7,
        },
    ),
    (
        "openai-python-tool-single-strict.json",
        GetWeatherArgs,
        "tools",
        {"city": "Edinburgh", "country": "UK", "units": "c"},
    ),
    (
        "openai-python-tool-strict-dict-schema.json",
        GetWeather,
        "tools",
        {"city": "San Francisco", "state": "CA"},
    ),
    (
        "pydantic-ai-tool-output-final-result.json",
        CityLocation,
        "tools",
        {"city": "Mexico City", "country": "Mexico"},
    ),
    (
        "openai-python-tools-parallel-two.json",
        GetWeatherArgs,
        "tools",
        {"city": "Edinburgh", "country": "GB", "units": "c"},
    ),
    (
        "mirascope-tools-parallel-strict.json",
        SecretRetrieval,
        "tools",
        {"password": "mellon"},
    ),
    (
        "openai-python-tool-nested-enums-anyof.json",
        Query,
        "tools",
        {
            "name": "May 2022 Fulfilled Orders Not Delivered on Time",
            "table_name": Table.ORDERS,
            "columns": list(Column),
            "conditions": [
                Condition(column="ordered_at", operator=Operator.GE, value="2022-05-01"),
                Condition(column="ordered_at", operator=Operator.LE, value="2022-05-31"),
                Condition(column="status", operator=Operator.EQ, value="fulfilled"),
                Condition(
                    column="delivered_at",
                    operator=Operator.GT,
                    value=DynamicValue(column_name="expected_delivery_date"),
                ),
            ],
            "order_by": OrderBy.ASC,
        },
    ),
]


@pytest.mark.parametrize(
    ("fixture", "signature", "mode", "expected"),
    SUCCESSES,
    ids=[s[0].removesuffix(".json") for s in SUCCESSES],
)
def test_recorded_success_replays_into_typed_outputs(
    llm: respx.MockRouter,
    fixture: str,
    signature: type[ts.Signature],
    mode: Literal["json_schema", "tools"],
    expected: dict[str, Any],
) -> None:
    route = llm.post("/chat/completions").mock(return_value=replay(fixture))
    first_input = next(iter(signature.input_fields))
    pred = ts.Predict(signature, lm=make_lm(), mode=mode)(**{first_input: "recorded"})

    assert route.call_count == 1
    assert dict(pred) == expected
    for name, value in expected.items():
        assert type(pred[name]) is type(value)
    assert pred.usage == fixture_usage(fixture)
    assert pred.completion is not None
    assert pred.completion.model == load(fixture)["response"]["model"]
    body = sent(route)[0]
    if mode == "tools":
        assert body["tool_choice"]["function"]["name"] == signature.__name__
    else:
        assert body["response_format"]["json_schema"]["name"] == signature.__name__


def test_recorded_location_keeps_float_type_for_an_integer_temperature(
    llm: respx.MockRouter,
) -> None:
    llm.post("/chat/completions").mock(
        return_value=replay("openai-python-strict-location-success.json")
    )
    pred = ts.Predict(Location, lm=make_lm())(question="What's the weather like in SF?")

    assert pred.temperature == 65.0 and isinstance(pred.temperature, float)
    assert pred.to_dict() == {"city": "San Francisco", "temperature": 65.0, "units": "f"}


def test_recorded_n3_choices_uses_the_first_and_keeps_the_rest_raw(
    llm: respx.MockRouter,
) -> None:
    fixture = "openai-python-strict-n3-choices.json"
    route = llm.post("/chat/completions").mock(return_value=replay(fixture))
    # The recording asked for n=3; typedspy refuses n > 1 now (one completion is read), so the
    # replay shows what a reply with several choices gives: the first, the rest kept raw.
    pred = ts.Predict(Location, lm=make_lm())(question="What's the weather like in SF?")

    assert "n" not in sent(route)[0]
    assert dict(pred) == {"city": "San Francisco", "temperature": 64.0, "units": "f"}
    assert pred.completion is not None
    choices = pred.completion.raw["choices"]
    assert [json.loads(c["message"]["content"])["temperature"] for c in choices] == [64, 65, 63.0]
    assert pred.usage == fixture_usage(fixture)


# -- recorded errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fixture", "error_type", "status", "code"),
    [
        (
            "mirascope-error-401-invalid-api-key.json",
            ts.errors.LMStatusError,
            401,
            "invalid_api_key",
        ),
        (
            "mirascope-error-404-model-not-found.json",
            ts.errors.LMStatusError,
            404,
            "model_not_found",
        ),
        (
            "pydantic-ai-groq-error-400-tool-use-failed.json",
            ts.errors.LMStatusError,
            400,
            "tool_use_failed",
        ),
        (
            "mirascope-error-400-unsupported-parameter.json",
            ts.errors.LMUnsupportedFeatureError,
            400,
            "unsupported_parameter",
        ),
    ],
)
def test_recorded_error_statuses_become_typed_lm_errors(
    llm: respx.MockRouter,
    fixture: str,
    error_type: type[ts.errors.LMStatusError],
    status: int,
    code: str,
) -> None:
    route = llm.post("/chat/completions").mock(return_value=replay(fixture))
    lm = make_lm()
    with pytest.raises(ts.LMError) as caught:
        ts.Predict(Decide, lm=lm, max_retries=2)(task="Ship it")

    err = caught.value
    assert type(err) is error_type
    assert isinstance(err, ts.errors.LMStatusError)
    assert (err.status_code, err.code) == (status, code)
    assert isinstance(err.__cause__, openai.APIStatusError)
    assert route.call_count == 1
    assert lm.profile.rejected == frozenset()
    assert "sk-test" not in str(err)


def test_recorded_unsupported_stop_names_the_parameter_and_does_not_fall_back(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        return_value=replay("mirascope-error-400-unsupported-parameter.json")
    )
    with pytest.raises(ts.errors.LMUnsupportedFeatureError) as caught:
        ts.Predict(Decide, lm=make_lm(), stop=["4242"])(task="Ship it")

    assert caught.value.feature == "stop"
    assert caught.value.param == "stop"
    assert sent(route)[0]["stop"] == ["4242"]
    assert route.call_count == 1
