"""The stand-in checks schemas and replies with jsonschema (issue 9, ADR-046).

Over a real socket with the official client: a ``response_format`` schema that is not JSON
Schema is a 400 like OpenAI's; generated data that does not validate against the request's
schema is a 500 naming the stand-in's bug (never a reply a test could pass with); a scripted
reply that does not validate is listed in ``schema_mismatches``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

import typedspy as ts
from typedspy.testing import StandIn

USER: Any = [{"role": "user", "content": "Answer."}]


def answer_schema(answer: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"answer": answer},
        "required": ["answer"],
        "additionalProperties": False,
    }


def schema_format(schema: dict[str, Any], *, strict: bool = True) -> Any:
    return {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": schema, "strict": strict},
    }


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


@pytest.fixture
def client(server: StandIn) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=server.base_url, api_key="offline", max_retries=2) as made:
        yield made


@pytest.mark.parametrize("strict", [True, False])
def test_a_schema_that_is_not_json_schema_is_a_400_like_openais(
    client: openai.OpenAI, strict: bool
) -> None:
    bad = answer_schema({"type": "strnig"})
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-4o-mini", messages=USER, response_format=schema_format(bad, strict=strict)
        )
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "invalid_json_schema"
    assert error["param"] == "response_format"
    assert error["message"].startswith(
        "Invalid schema for response_format 'Answer': In context=('properties', 'answer', 'type'),"
    )
    assert "'strnig'" in error["message"]


@pytest.mark.parametrize("strict", [True, False])
def test_tool_parameters_that_are_not_json_schema_are_a_400_like_openais(
    client: openai.OpenAI, strict: bool
) -> None:
    tool: Any = {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": answer_schema({"type": "strnig"}),
            "strict": strict,
        },
    }
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, tools=[tool])
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "invalid_function_parameters"
    assert error["param"] == "tools[0].function.parameters"
    assert error["message"].startswith(
        "Invalid schema for function 'lookup': In context=('properties', 'answer', 'type'),"
    )


def test_tool_parameters_that_are_no_object_are_a_400(client: openai.OpenAI) -> None:
    tool: Any = {"type": "function", "function": {"name": "lookup", "parameters": ["x"]}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="gpt-4o-mini", messages=USER, tools=[tool])
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["param"] == "tools[0].function.parameters"
    assert "expected an object" in error["message"]


def test_generated_data_that_misses_the_schema_is_a_500_naming_the_bug(
    client: openai.OpenAI, server: StandIn
) -> None:
    # The generator does not satisfy `contains` (a valid, non-strict keyword): were it to learn
    # it, use another keyword it cannot satisfy. The old stand-in answered 200 with `[]`.
    tags = {"type": "array", "items": {"type": "string"}, "contains": {"const": "urgent"}}
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=USER,
            response_format=schema_format(answer_schema(tags), strict=False),
        )
    assert "typedspy stand-in bug" in str(caught.value)
    assert "answer" in str(caught.value)
    assert len(server.requests) == 1  # x-should-retry: false, so no retry with another seed
    assert server.schema_mismatches[0].startswith("response_format 'Answer' (generated): answer")


def test_scripted_replies_are_checked_against_the_requests_schema(
    client: openai.OpenAI, server: StandIn
) -> None:
    server.enqueue(json.dumps({"answer": 5}), json.dumps({"answer": "five"}), "not json")
    for _ in range(3):
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=USER,
            response_format=schema_format(answer_schema({"type": "string"})),
        )
    assert server.schema_mismatches == [
        "request 0 (scripted): answer: 5 is not of type 'string'",
        "request 2 (scripted): the content is not JSON",
    ]


def test_a_scripted_reply_the_schema_cannot_check_is_noted(
    client: openai.OpenAI, server: StandIn
) -> None:
    server.enqueue(json.dumps({"answer": 1}))
    nowhere = answer_schema({"$ref": "#/$defs/Nowhere"})  # valid JSON Schema, unresolvable
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=USER, response_format=schema_format(nowhere, strict=False)
    )
    assert reply.choices[0].message.content == '{"answer": 1}'  # sent as scripted
    assert len(server.schema_mismatches) == 1
    assert server.schema_mismatches[0].startswith("request 0 (scripted): cannot check it")
    assert "Nowhere" in server.schema_mismatches[0]


def test_typedspy_schemas_and_generated_replies_pass_both_checks(server: StandIn) -> None:
    class Report(ts.Signature):
        """Report."""

        text: str = ts.InputField()
        tags: list[str] = ts.OutputField(min_length=1, max_length=3)
        score: float = ts.OutputField(ge=0, le=1)

    lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="offline")
    pred = ts.Predict(Report, lm=lm, max_retries=0)(text="x")
    lm.close()
    assert 1 <= len(pred.tags) <= 3
    assert server.schema_mismatches == []
