from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from typedspy.testing import Reply, StandIn, generate_instance
from typedspy.testing.standin import StandIn as StandInDirect

USER: Any = [{"role": "user", "content": "Plan the next step."}]


def obj(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def tagged(tag: str, **props: Any) -> dict[str, Any]:
    return obj(_type={"type": "string", "const": tag}, **props)


PLAN: dict[str, Any] = {
    **obj(action={"anyOf": [{"$ref": "#/$defs/SpawnTask"}, {"$ref": "#/$defs/Finish"}]}),
    "$defs": {
        "SpawnTask": tagged("SpawnTask", goal={"type": "string"}, budget={"type": "integer"}),
        "Finish": tagged("Finish", answer={"type": "string"}),
    },
}


def schema_format(schema: dict[str, Any], name: str = "Plan") -> Any:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def sdk(base_url: str, max_retries: int = 0) -> openai.OpenAI:
    # Plain HTTP never needs the CA bundle, and loading it costs ~0.1 s per client.
    http_client = openai.DefaultHttpxClient(verify=False)
    return openai.OpenAI(
        base_url=base_url, api_key="test", max_retries=max_retries, http_client=http_client
    )


def async_sdk(base_url: str) -> openai.AsyncOpenAI:
    http_client = openai.DefaultAsyncHttpxClient(verify=False)
    return openai.AsyncOpenAI(
        base_url=base_url, api_key="test", max_retries=0, http_client=http_client
    )


def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as s:
        yield s


@pytest.fixture
def client(server: StandIn) -> Iterator[openai.OpenAI]:
    with sdk(server.base_url) as c:
        yield c


def test_lazy_exports_are_the_module_classes() -> None:
    assert StandIn is StandInDirect
    server = StandIn(port=0)
    assert server.base_url.endswith("/v1")


def test_strict_schema_gets_schema_valid_json(server: StandIn, client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(
        model="gpt-test", messages=USER, response_format=schema_format(PLAN)
    )
    content = reply.choices[0].message.content
    assert content is not None
    value = json.loads(content)
    jsonschema.validate(value, PLAN)
    assert value == generate_instance(PLAN, seed=0)
    assert reply.model == "gpt-test"
    assert reply.choices[0].finish_reason == "stop"


def test_union_variants_rotate_across_calls() -> None:
    async def tags() -> list[str]:
        with StandIn() as server:
            async with async_sdk(server.base_url) as client:
                out = []
                for _ in range(3):
                    reply = await client.chat.completions.create(
                        model="m", messages=USER, response_format=schema_format(PLAN)
                    )
                    out.append(
                        json.loads(reply.choices[0].message.content or "")["action"]["_type"]
                    )
                return out

    assert asyncio.run(tags()) == ["SpawnTask", "Finish", "SpawnTask"]


def test_seed_offsets_generated_data() -> None:
    with (
        StandIn(seed=1) as server,
        sdk(server.base_url) as client,
    ):
        reply = client.chat.completions.create(
            model="m", messages=USER, response_format=schema_format(PLAN)
        )
    assert json.loads(reply.choices[0].message.content or "")["action"]["_type"] == "Finish"


def test_oneof_schema_is_rejected_like_openai(client: openai.OpenAI) -> None:
    bad = {**PLAN, "properties": {"action": {"oneOf": PLAN["properties"]["action"]["anyOf"]}}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=USER, response_format=schema_format(bad))
    err = caught.value
    assert err.status_code == 400
    assert err.code == "invalid_json_schema"
    assert err.param == "response_format"
    assert err.body == {
        "message": "Invalid schema for response_format 'Plan': In context=('properties', "
        "'action'), 'oneOf' is not permitted.",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "invalid_json_schema",
    }


def test_non_strict_schema_is_not_checked(client: openai.OpenAI) -> None:
    loose = {"type": "object", "properties": {"n": {"type": "integer", "default": 3}}}
    fmt: Any = {"type": "json_schema", "json_schema": {"name": "Loose", "schema": loose}}
    reply = client.chat.completions.create(model="m", messages=USER, response_format=fmt)
    assert json.loads(reply.choices[0].message.content or "") == {"n": 1}


def test_bad_schema_name_is_rejected(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="m", messages=USER, response_format=schema_format(PLAN, name="my.plan")
        )
    assert caught.value.code == "invalid_value"
    assert caught.value.param == "response_format.json_schema.name"
    assert "string does not match pattern" in caught.value.message


def test_json_object_needs_the_word_json(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="m", messages=USER, response_format={"type": "json_object"}
        )
    assert caught.value.param == "messages"
    assert caught.value.body["message"] == (  # type: ignore[index]
        "'messages' must contain the word 'json' in some form, to use 'response_format' of "
        "type 'json_object'."
    )


def test_json_object_generates_from_a_fenced_schema(client: openai.OpenAI) -> None:
    prompt = f"Answer in JSON matching:\n```json\n{json.dumps(PLAN)}\n```"
    reply = client.chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": prompt}, *USER],
        response_format={"type": "json_object"},
    )
    jsonschema.validate(json.loads(reply.choices[0].message.content or ""), PLAN)
    bare = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "Reply with JSON."}],
        response_format={"type": "json_object"},
    )
    assert bare.choices[0].message.content == "{}"


def test_forced_tool_call_has_generated_arguments(client: openai.OpenAI) -> None:
    tools: Any = [
        {"type": "function", "function": {"name": "noop", "parameters": obj()}},
        {"type": "function", "function": {"name": "plan", "parameters": PLAN, "strict": True}},
    ]
    forced = client.chat.completions.create(
        model="m",
        messages=USER,
        tools=tools,
        tool_choice={"type": "function", "function": {"name": "plan"}},
    )
    choice = forced.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls is not None and len(calls) == 1
    assert calls[0].type == "function"
    assert calls[0].function.name == "plan"
    jsonschema.validate(json.loads(calls[0].function.arguments), PLAN)
    required = client.chat.completions.create(
        model="m", messages=USER, tools=tools, tool_choice="required"
    )
    first = required.choices[0].message.tool_calls
    assert first is not None and first[0].type == "function"
    assert first[0].function.name == "noop"
    auto = client.chat.completions.create(model="m", messages=USER, tools=tools)
    assert auto.choices[0].message.content == "standin reply"


def test_strict_tool_schema_is_checked(client: openai.OpenAI) -> None:
    loose = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools: Any = [
        {"type": "function", "function": {"name": "find", "parameters": loose, "strict": True}}
    ]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=USER, tools=tools)
    assert caught.value.param == "tools[0].function.parameters"
    assert caught.value.body["message"] == (  # type: ignore[index]
        "Invalid schema for function 'find': In context=(), "
        "'additionalProperties' is required to be supplied and to be false."
    )


def test_tool_choice_needs_tools(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=USER, tool_choice="required")
    assert caught.value.param == "tool_choice"


def test_an_unknown_tool_choice_is_refused_as_openai_refuses_it(client: openai.OpenAI) -> None:
    # The stand-in said "function null is not among 'tools'" for a string it did not know.
    tools: Any = [{"type": "function", "function": {"name": "find", "parameters": obj()}}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=USER, tools=tools, tool_choice="any")  # type: ignore[arg-type]
    assert (caught.value.param, caught.value.code) == ("tool_choice", "invalid_value")
    assert caught.value.body["message"] == (  # type: ignore[index]
        "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'."
    )
    named: Any = {"type": "function", "function": {"name": "lookup"}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=USER, tools=tools, tool_choice=named)
    assert caught.value.body["message"] == (  # type: ignore[index]
        "Invalid value for 'tool_choice': function 'lookup' is not among 'tools'."
    )


def test_scripted_replies_come_first_in_order(server: StandIn, client: openai.OpenAI) -> None:
    server.enqueue(
        "scripted text",
        Reply(refusal="I can't help with that."),
        Reply(content='{"a": [1, 2', finish_reason="length"),
        Reply(tool_calls=[{"name": "f", "arguments": '{"x":1}'}], finish_reason="tool_calls"),
    )
    replies = [
        client.chat.completions.create(
            model="m", messages=USER, response_format=schema_format(PLAN)
        )
        for _ in range(5)
    ]
    assert replies[0].choices[0].message.content == "scripted text"
    refused = replies[1].choices[0].message
    assert (refused.content, refused.refusal) == (None, "I can't help with that.")
    assert replies[2].choices[0].finish_reason == "length"
    assert replies[2].choices[0].message.content == '{"a": [1, 2'
    calls = replies[3].choices[0].message.tool_calls
    assert calls is not None and calls[0].type == "function"
    assert (calls[0].function.name, calls[0].function.arguments) == ("f", '{"x":1}')
    # The queue is empty again: back to generated data, seeded by the request count.
    assert json.loads(replies[4].choices[0].message.content or "") == generate_instance(
        PLAN, seed=4
    )


def test_scripted_dict_is_returned_as_is(server: StandIn, client: openai.OpenAI) -> None:
    body = {
        "id": "chatcmpl-fixed",
        "object": "chat.completion",
        "created": 1,
        "model": "fixed-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
    server.enqueue(body)
    reply = client.chat.completions.create(model="m", messages=USER)
    assert (reply.id, reply.model, reply.choices[0].message.content) == (
        "chatcmpl-fixed",
        "fixed-model",
        "hi",
    )


def test_rate_limit_then_success_through_sdk_retry(server: StandIn) -> None:
    # retry-after-ms keeps the SDK's wait at 10 ms; Retry-After alone would fall back to ~0.5 s.
    server.enqueue(Reply(status=429, headers={"Retry-After": "0", "retry-after-ms": "10"}), "ok")
    with sdk(server.base_url, max_retries=1) as client:
        reply = client.chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "ok"
    assert len(server.requests) == 2


def test_rate_limit_without_retries_raises(server: StandIn, client: openai.OpenAI) -> None:
    server.enqueue(Reply(status=429))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.code == "rate_limit_exceeded"


def test_json_schema_unsupported_server() -> None:
    with (
        StandIn(supports_json_schema=False) as server,
        sdk(server.base_url) as client,
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="m", messages=USER, response_format=schema_format(PLAN)
            )
        plain = client.chat.completions.create(model="m", messages=USER)
    assert caught.value.body == {
        "message": "Invalid parameter: 'response_format' of type 'json_schema' is not "
        "supported with this model.",
        "type": "invalid_request_error",
        "param": "response_format",
        "code": "unsupported_parameter",
    }
    assert plain.choices[0].message.content == "standin reply"


def test_tools_unsupported_server() -> None:
    tools: Any = [{"type": "function", "function": {"name": "f", "parameters": obj()}}]
    with (
        StandIn(supports_tools=False) as server,
        sdk(server.base_url) as client,
    ):
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="m", messages=USER, tools=tools)
    assert caught.value.code == "unsupported_parameter"
    assert caught.value.param == "tools"
    # Older openai releases put the status and the whole body in `message`: it is in there.
    assert "Unsupported parameter: 'tools' is not supported with this model." in (
        caught.value.message
    )


def test_requests_are_recorded_in_order(server: StandIn, client: openai.OpenAI) -> None:
    client.chat.completions.create(model="first", messages=USER, temperature=0)
    client.chat.completions.create(
        model="second", messages=USER, response_format=schema_format(PLAN)
    )
    assert [r["model"] for r in server.requests] == ["first", "second"]
    assert server.requests[0]["messages"] == USER
    assert server.requests[0]["temperature"] == 0
    assert server.requests[1]["response_format"] == schema_format(PLAN)


def test_plain_prompt_reply_and_usage(client: openai.OpenAI) -> None:
    reply = client.chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "standin reply"
    assert reply.usage is not None
    assert reply.usage.prompt_tokens == len(json.dumps(USER)) // 4
    assert reply.usage.completion_tokens == len("standin reply") // 4


def test_streaming_reassembles_content_with_usage_chunk(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="m",
        messages=USER,
        response_format=schema_format(PLAN),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert json.loads(text) == generate_instance(PLAN, seed=0)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert len(chunks) > 4  # split into small pieces
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == len(text) // 4
    assert all(c.usage is None for c in chunks[:-1])


def test_streaming_without_include_usage_has_no_usage_chunk(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))
    assert all(c.choices for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "standin reply"


def test_streaming_tool_calls_and_refusals(server: StandIn, client: openai.OpenAI) -> None:
    server.enqueue(
        Reply(
            tool_calls=[{"name": "plan", "arguments": '{"goal":"a long goal"}'}],
            finish_reason="tool_calls",
        ),
        Reply(refusal="I won't do that."),
    )
    chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))
    pieces = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert pieces[0].id is not None and pieces[0].function is not None
    assert pieces[0].function.name == "plan"
    assert all(p.index == 0 for p in pieces)
    assert (
        "".join((p.function.arguments or "") for p in pieces if p.function)
        == '{"goal":"a long goal"}'
    )
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    refusal = list(client.chat.completions.create(model="m", messages=USER, stream=True))
    assert "".join(c.choices[0].delta.refusal or "" for c in refusal) == "I won't do that."


def test_async_streaming(server: StandIn) -> None:
    async def collect() -> str:
        async with async_sdk(server.base_url) as c:
            stream = await c.chat.completions.create(
                model="m", messages=USER, response_format=schema_format(PLAN), stream=True
            )
            return "".join([ch.choices[0].delta.content or "" async for ch in stream])

    assert json.loads(asyncio.run(collect())) == generate_instance(PLAN, seed=0)


def test_closed_stream_counts_a_disconnect() -> None:
    with (
        StandIn(chunk_delay=0.01) as server,
        sdk(server.base_url) as client,
    ):
        server.enqueue("x" * 4000)  # 500 chunks: seconds of streaming if not cut off
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        for index, _ in enumerate(stream):
            if index == 2:
                break
        stream.close()
        wait_for(lambda: server.disconnects == 1)
        assert server.disconnects == 1
        # The server is still fine afterwards.
        assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content


def test_cancelled_async_stream_counts_a_disconnect() -> None:
    async def cancel_mid_stream(server: StandIn) -> int:
        async with async_sdk(server.base_url) as c:
            stream = await c.chat.completions.create(model="m", messages=USER, stream=True)
            seen: list[object] = []

            async def consume() -> None:
                async for chunk in stream:
                    seen.append(chunk)

            task = asyncio.create_task(consume())
            while len(seen) < 3:
                await asyncio.sleep(0.005)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await stream.close()
            return len(seen)

    with StandIn(chunk_delay=0.01) as server:
        server.enqueue("y" * 4000)
        seen = asyncio.run(cancel_mid_stream(server))
        wait_for(lambda: server.disconnects == 1)
        assert server.disconnects == 1
    assert seen < 500


def test_complete_streams_are_not_disconnects(server: StandIn, client: openai.OpenAI) -> None:
    for _ in range(3):
        list(client.chat.completions.create(model="m", messages=USER, stream=True))
    assert server.disconnects == 0


def raw_request(server: StandIn, method: str, path: str, body: bytes | None = None) -> Any:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_handler_failure_answers_500_and_server_survives(
    server: StandIn, client: openai.OpenAI
) -> None:
    server.enqueue({"not": {"json", "serialisable"}})  # a set cannot be encoded
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == 500
    assert client.chat.completions.create(model="m", messages=USER).choices[0].message.content


def test_invalid_json_body_and_unknown_path(server: StandIn) -> None:
    status, body = raw_request(server, "POST", "/v1/chat/completions", b"{not json")
    assert status == 400 and body["error"]["type"] == "invalid_request_error"
    status, body = raw_request(server, "POST", "/v1/images/generations", b"{}")
    assert (status, body["error"]["message"]) == (
        404,
        "Invalid URL (POST /v1/images/generations)",
    )
    status, body = raw_request(server, "POST", "/v1/embeddings", b"{}")
    assert (status, body["error"]["message"]) == (400, "Missing required parameter: 'input'.")
    status, body = raw_request(
        server, "POST", "/chat/completions", json.dumps({"model": "m", "messages": USER}).encode()
    )
    assert status == 200 and body["choices"][0]["message"]["content"] == "standin reply"
    assert server.requests == [{"model": "m", "messages": USER}]  # only valid chat bodies


def test_keep_alive_serves_several_requests_on_one_connection(server: StandIn) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    body = json.dumps({"model": "m", "messages": USER})
    try:
        for _ in range(3):
            conn.request("POST", "/v1/chat/completions", body=body)
            response = conn.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["choices"][0]["message"]["content"]
            assert response.getheader("Connection") != "close"
    finally:
        conn.close()


def test_chunked_request_body_is_read(server: StandIn) -> None:
    body = json.dumps({"model": "m", "messages": USER}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        for _ in range(2):  # the second request proves the first body was fully consumed
            conn.request("POST", "/v1/chat/completions", body=iter([body[:10], body[10:]]))
            response = conn.getresponse()
            assert response.status == 200
            assert json.loads(response.read())["choices"][0]["message"]["content"]
    finally:
        conn.close()
    assert server.requests == [{"model": "m", "messages": USER}] * 2


def test_models_endpoint(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list().data] == ["standin-1"]


def test_stop_is_idempotent_and_frees_idle_connections() -> None:
    server = StandIn().start()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    conn.request("GET", "/v1/models")
    assert conn.getresponse().read()
    finished = threading.Event()

    def stop() -> None:
        server.stop()
        finished.set()

    threading.Thread(target=stop).start()
    assert finished.wait(5)  # an idle keep-alive connection must not block stop()
    server.stop()
    conn.close()


def test_cli_serves_until_terminated() -> None:
    command = [sys.executable, "-m", "typedspy.testing.standin", "--port", "0"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 30)
            assert ready, "the stand-in printed nothing"
            line = proc.stdout.readline()
            assert line.startswith("typedspy stand-in listening on http://127.0.0.1:")
            base_url = line.rsplit(" ", 1)[1].strip()
            assert base_url.endswith("/v1")
            with sdk(base_url) as client:
                reply = client.chat.completions.create(model="m", messages=USER)
            assert reply.choices[0].message.content == "standin reply"
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert stderr == ""


RAW_FUNCTION: Any = {"type": "function", "function": {"name": "f", "parameters": obj()}}
UNRESOLVED: Any = obj(a={"$ref": "#/$defs/Nope"})


def body_with(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": USER, **fields}


def json_schema(**spec: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": spec}


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ([], None, None),
        ({"model": "m"}, "messages", "missing_required_parameter"),
        ({"messages": USER}, "model", "missing_required_parameter"),
        (body_with(response_format="json"), "response_format", "invalid_type"),
        (body_with(response_format={"type": "xml"}), "response_format.type", "invalid_value"),
        (
            body_with(response_format={"type": "json_schema"}),
            "response_format.json_schema",
            "missing_required_parameter",
        ),
        (
            body_with(response_format=json_schema(schema=obj())),
            "response_format.json_schema.name",
            "missing_required_parameter",
        ),
        (
            body_with(response_format=json_schema(name="X", schema="{}")),
            "response_format.json_schema.schema",
            "invalid_type",
        ),
        (
            body_with(response_format=json_schema(name="X", schema=UNRESOLVED)),
            None,
            "invalid_json_schema",
        ),
        (
            body_with(
                messages=[{"role": "user", "content": "Reply in JSON."}],
                response_format={"type": "json_object", "schema": UNRESOLVED},
            ),
            "response_format.schema",
            "invalid_json_schema",
        ),
        (body_with(tools=[]), "tools", "invalid_value"),
        (body_with(tools={"f": RAW_FUNCTION}), "tools", "invalid_value"),
        (body_with(tools=[{"type": "x"}]), "tools[0].function", "missing_required_parameter"),
        (
            body_with(tools=[{"type": "function", "function": {"name": "a b"}}]),
            "tools[0].function.name",
            "invalid_value",
        ),
        (
            body_with(tools=[{"type": "function", "function": {}}]),
            "tools[0].function.name",
            "invalid_value",
        ),
        (
            body_with(tools=[RAW_FUNCTION], tool_choice={"type": "function", "function": {}}),
            "tool_choice.function.name",
            "missing_required_parameter",
        ),
        (
            body_with(tools=[RAW_FUNCTION], tool_choice={"type": "function"}),
            "tool_choice.function",
            "missing_required_parameter",
        ),
        (body_with(tools=[RAW_FUNCTION], tool_choice=3), "tool_choice", "invalid_type"),
    ],
)
def test_malformed_requests_are_a_400_naming_the_parameter(
    server: StandIn, body: Any, param: str | None, code: str | None
) -> None:
    # The old stand-in answered a schema that is not an object with 200 "{}", and a $ref that
    # resolves nowhere with a 500 "failed to answer": OpenAI answers both with a 400.
    status, reply = raw_request(server, "POST", "/v1/chat/completions", json.dumps(body).encode())
    assert status == 400, reply
    assert (reply["error"]["param"], reply["error"]["code"]) == (param, code)
    assert reply["error"]["type"] == "invalid_request_error"


def test_text_format_and_a_schemaless_json_schema_get_plain_replies(client: openai.OpenAI) -> None:
    formats: Any = [{"type": "text"}, json_schema(name="X")]
    replies = [
        client.chat.completions.create(model="m", messages=USER, response_format=fmt)
        for fmt in formats
    ]
    assert [r.choices[0].message.content for r in replies] == ["standin reply", "{}"]


def test_json_object_reads_only_usable_fenced_schemas_from_the_prompt(
    client: openai.OpenAI,
) -> None:
    def fenced(schema: Any) -> str:
        return f"```json\n{json.dumps(schema)}\n```"

    messages: Any = [
        "not a message",
        {"role": "assistant", "content": fenced(obj(said={"const": "assistant"}))},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Reply in JSON.\n```json\n{not json\n```"},
                {"type": "text", "text": fenced(UNRESOLVED)},  # no value fits: skipped
                {"type": "image_url", "image_url": {"url": "data:,"}},
                "text outside a part",
                {"type": "text", "text": fenced(obj(said={"const": "user"}))},
            ],
        },
    ]
    reply = client.chat.completions.create(
        model="m", messages=messages, response_format={"type": "json_object"}
    )
    assert json.loads(reply.choices[0].message.content or "") == {"said": "user"}


def exchange(server: StandIn, data: bytes) -> bytes:
    """Send raw bytes on a new connection; what came back by the time the server closed it."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_unknown_server_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="StandIn\\(server='tgi'\\): one of"):
        StandIn(server="tgi")


def test_start_on_a_running_server_keeps_it(server: StandIn) -> None:
    port = server.port
    assert server.start() is server
    assert server.port == port


def test_get_on_an_unknown_path_is_a_404(server: StandIn) -> None:
    status, body = raw_request(server, "GET", "/v1/files")
    assert (status, body["error"]["message"]) == (404, "Invalid URL (GET /v1/files)")


def test_a_malformed_chunk_size_is_a_400_and_closes_the_connection(server: StandIn) -> None:
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    received = exchange(server, head + b"zz\r\n{}\r\n0\r\n\r\n")  # returns: it was closed
    assert received.startswith(b"HTTP/1.1 400")
    assert b"Malformed chunked request body." in received
    assert server.requests == []


def test_chunked_trailer_fields_are_read_past(server: StandIn) -> None:
    body = json.dumps({"model": "m", "messages": USER}).encode()
    chunked = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\nX-Checksum: 1\r\n\r\n"
    first = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    second = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    received = exchange(server, first + chunked + second)
    assert received.count(b"HTTP/1.1 200 OK") == 2  # the trailer was not taken for a request
    assert server.requests == [{"model": "m", "messages": USER}] * 2


def test_a_client_resetting_mid_request_leaves_the_server_serving(
    server: StandIn, client: openai.OpenAI
) -> None:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Len")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()  # linger 0: a reset, not a clean close
    reply = client.chat.completions.create(model="m", messages=USER)
    assert reply.choices[0].message.content == "standin reply"


def test_stop_cuts_a_stream_waiting_on_its_chunk_delay() -> None:
    server = StandIn(chunk_delay=600).start()
    body = json.dumps({"model": "m", "messages": USER, "stream": True}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with server, socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while b"\r\n\r\n" not in received:  # the headers go out before the first delay
            piece = sock.recv(65536)
            assert piece, received  # closed before its headers
            received += piece
        finished = threading.Event()

        def stop() -> None:
            server.stop()
            finished.set()

        threading.Thread(target=stop).start()
        assert finished.wait(10)  # not the 600 s the next chunk would wait
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    assert b"data:" not in received  # cut before any chunk
    assert server.disconnects == 0  # the server hung up, not the client


def test_a_scripted_body_that_is_no_completion_streams_as_one_event(server: StandIn) -> None:
    server.enqueue({"object": "surprise"})
    body = json.dumps({"model": "m", "messages": USER, "stream": True}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    received = exchange(server, request)
    assert received.count(b"data: ") == 2
    assert b'data: {"object":"surprise"}' in received
    assert b"data: [DONE]" in received
