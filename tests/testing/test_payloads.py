from __future__ import annotations

import json

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from typedspy.testing import chat_chunk, chat_completion, error_body, sse_body
from typedspy.testing._payloads import sse_event, usage_for


def test_content_completion_validates() -> None:
    body = chat_completion(
        '{"a":1}', model="m-1", usage={"prompt_tokens": 5, "completion_tokens": 2}
    )
    parsed = ChatCompletion.model_validate(body)
    assert parsed.model == "m-1"
    assert parsed.choices[0].message.content == '{"a":1}'
    assert parsed.choices[0].finish_reason == "stop"
    assert parsed.usage is not None
    assert (parsed.usage.prompt_tokens, parsed.usage.total_tokens) == (5, 7)


def test_refusal_completion_has_null_content() -> None:
    parsed = ChatCompletion.model_validate(chat_completion(refusal="I can't help with that."))
    message = parsed.choices[0].message
    assert (message.content, message.refusal) == (None, "I can't help with that.")


def test_length_finish_reason_and_explicit_id() -> None:
    parsed = ChatCompletion.model_validate(
        chat_completion('{"a": [1, 2', finish_reason="length", id="chatcmpl-x")
    )
    assert (parsed.id, parsed.choices[0].finish_reason) == ("chatcmpl-x", "length")


def test_tool_calls_expand_to_openai_shape() -> None:
    body = chat_completion(
        None,
        finish_reason="tool_calls",
        tool_calls=[
            {"name": "search", "arguments": '{"q":"x"}', "id": "call_1"},
            {"name": "add", "arguments": {"a": 1, "b": 2}},
        ],
    )
    assert body["choices"][0]["message"]["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"q":"x"}'},
    }
    parsed = ChatCompletion.model_validate(body)
    calls = parsed.choices[0].message.tool_calls
    assert calls is not None
    second = calls[1]
    assert second.type == "function"
    assert (second.function.name, json.loads(second.function.arguments)) == (
        "add",
        {"a": 1, "b": 2},
    )
    assert second.id.startswith("call_") and second.id != "call_1"


def test_default_usage_is_estimated_from_the_text() -> None:
    assert chat_completion("x" * 40)["usage"] == {
        "prompt_tokens": 0,
        "completion_tokens": 10,
        "total_tokens": 10,
    }
    assert usage_for("", prompt_tokens=3) == {
        "prompt_tokens": 3,
        "completion_tokens": 1,
        "total_tokens": 4,
    }


def test_error_body_shape() -> None:
    body = error_body("bad schema", param="response_format", code="invalid_json_schema")
    assert body == {
        "error": {
            "message": "bad schema",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": "invalid_json_schema",
        }
    }


def test_stream_chunks_validate() -> None:
    pieces = [
        chat_chunk(role="assistant", content=""),
        chat_chunk("Hel"),
        chat_chunk(refusal="no"),
        chat_chunk(tool_calls=[{"index": 0, "id": "call_1", "name": "f", "arguments": ""}]),
        chat_chunk(tool_calls=[{"index": 0, "arguments": '{"a":'}]),
        chat_chunk(finish_reason="stop"),
    ]
    parsed = [ChatCompletionChunk.model_validate(p) for p in pieces]
    assert parsed[0].choices[0].delta.role == "assistant"
    assert parsed[1].choices[0].delta.content == "Hel"
    assert parsed[2].choices[0].delta.refusal == "no"
    head = parsed[3].choices[0].delta.tool_calls
    assert head is not None and head[0].function is not None
    assert (head[0].id, head[0].function.name, head[0].type) == ("call_1", "f", "function")
    more = parsed[4].choices[0].delta.tool_calls
    assert more is not None and more[0].function is not None
    assert (more[0].id, more[0].function.arguments) == (None, '{"a":')
    assert parsed[5].choices[0].finish_reason == "stop"


def test_usage_only_chunk_has_empty_choices() -> None:
    chunk = chat_chunk(usage={"prompt_tokens": 3, "completion_tokens": 4})
    parsed = ChatCompletionChunk.model_validate(chunk)
    assert parsed.choices == []
    assert parsed.usage is not None and parsed.usage.total_tokens == 7


def test_sse_body_frames_each_chunk_and_ends_with_done() -> None:
    body = sse_body([chat_chunk("a", id="c1", created=1), chat_chunk("b", id="c1", created=1)])
    events = body.decode().split("\n\n")
    assert events[-1] == ""
    assert events[-2] == "data: [DONE]"
    first = json.loads(events[0].removeprefix("data: "))
    assert first["choices"][0]["delta"] == {"content": "a"}
    assert len(events) == 4
    assert sse_event({"x": 1}) == b'data: {"x":1}\n\n'


def test_tool_calls_already_in_wire_form_are_sent_as_given() -> None:
    wire = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = chat_completion(tool_calls=[wire], finish_reason="tool_calls")
    assert body["choices"][0]["message"]["tool_calls"] == [wire]
    ChatCompletion.model_validate(body)
    delta = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f"}}
    chunk = chat_chunk(tool_calls=[delta])
    assert chunk["choices"][0]["delta"]["tool_calls"] == [delta]
    ChatCompletionChunk.model_validate(chunk)
