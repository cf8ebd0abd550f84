"""Issue 10, case 1: one configurable depth limit on every JSON path (ADR-048).

`LM(max_json_depth=)` bounds response bodies (tests/faults/test_reading.py) and, here, what the
endpoint streams and what the model writes: its output, streamed or not, and ReAct's tool
arguments. Past the limit there is a typed error naming it, never a `RecursionError`.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from pydantic import BaseModel

import typedspy as ts
from faults.server import FaultServer, Reply


class Node(BaseModel):
    children: list[Node]


class Nested(ts.Signature):
    """Nest."""

    question: str = ts.InputField()
    payload: Node = ts.OutputField()


def nodes(count: int) -> str:
    """``count`` nodes, each the only child of the one before: nesting ``2 * count`` levels."""
    return '{"children": [' * count + "]}" * count


def nested(count: int) -> str:
    """Model output whose ``payload`` is ``count`` nodes deep: ``2 * count + 1`` levels."""
    return '{"payload": ' + nodes(count) + "}"


def depth_of(node: Node) -> int:
    count = 0
    while node.children:
        node, count = node.children[0], count + 1
    return count + 1


def streamed(content: str) -> Reply:
    delta = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": content}}]}
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return Reply.sse([delta, end])


def predict(reply: Reply, *, stream: bool, **options: Any) -> tuple[ts.Prediction[Any], int]:
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0, **options)
        try:
            with ts.context(lm=lm, max_retries=0):
                if stream:
                    *_, last = ts.Predict(Nested).stream(question="q")
                    assert isinstance(last, ts.Prediction)
                    return last, len(server.requests)
                return ts.Predict(Nested)(question="q"), len(server.requests)
        finally:
            lm.close()


@pytest.mark.parametrize("stream", [False, True], ids=["completed", "streamed"])
def test_model_output_nested_past_the_lms_limit_is_a_decode_failure_naming_it(
    stream: bool,
) -> None:
    content = nested(20)  # 41 levels
    reply = streamed(content) if stream else Reply.completion(content)

    with pytest.raises(ts.errors.OutputDecodeError) as caught:
        predict(reply, stream=stream, max_json_depth=40)
    assert "40 levels (max_json_depth)" in str(caught.value)

    within, requests = predict(reply, stream=stream, max_json_depth=41)
    assert depth_of(within.payload) == 20 and requests == 1


@pytest.mark.parametrize("stream", [False, True], ids=["completed", "streamed"])
def test_model_output_past_the_default_limit_names_it(stream: bool) -> None:
    content = nested(150)  # 301 levels
    reply = streamed(content) if stream else Reply.completion(content)

    with pytest.raises(ts.errors.OutputDecodeError) as caught:
        predict(reply, stream=stream)
    assert "256 levels (max_json_depth)" in str(caught.value)


def test_output_deeper_than_python_recurses_is_typed_under_a_high_limit() -> None:
    reply = Reply.completion(nested(2_500))  # 5,001 levels: past json's and Pydantic's recursion

    with pytest.raises(ts.OutputError) as caught:
        predict(reply, stream=False, max_json_depth=100_000)
    assert "recursion" in str(caught.value).lower()  # Pydantic's own bound, typed


def chunk_with(extra: Any) -> dict[str, Any]:
    delta = {"role": "assistant", "content": '{"payload": {"children": []}}'}
    return {"choices": [{"index": 0, "delta": delta}], "x": extra}


@pytest.mark.parametrize(
    ("depth", "options", "allowed"),
    [(300, {}, 256), (6, {"max_json_depth": 4}, 4)],
    ids=["default", "configured"],
)
def test_a_stream_chunk_past_the_limit_is_typed_naming_it(
    depth: int, options: dict[str, Any], allowed: int
) -> None:
    deep: Any = 1
    for _ in range(depth):
        deep = [deep]
    with pytest.raises(ts.errors.LMResponseLimitError) as caught:
        predict(Reply.sse([chunk_with(deep)]), stream=True, **options)
    assert (caught.value.limit, caught.value.allowed) == ("max_json_depth", allowed)
    assert f"{allowed} levels (max_json_depth)" in str(caught.value)


def test_a_stream_chunk_within_a_raised_limit_is_read() -> None:
    deep: Any = 1
    for _ in range(300):
        deep = [deep]
    prediction, _ = predict(Reply.sse([chunk_with(deep)]), stream=True, max_json_depth=400)
    assert prediction.payload == Node(children=[])


def tool_call(call_id: str, name: str, arguments: str) -> Reply:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return Reply.completion(None, tool_calls=[call])


def test_tool_arguments_past_the_agents_lm_limit_are_an_observation_naming_it() -> None:
    ran: list[object] = []

    def search(query: Node) -> str:
        """Search."""
        ran.append(query)
        return "nothing"

    class Answer(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()

    replies = [
        tool_call("c1", "search", '{"query": ' + nodes(6) + "}"),  # 13 levels
        tool_call("c2", "finish", json.dumps({"answer": "done"})),
    ]
    with FaultServer(*replies) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0, max_json_depth=10)
        answer = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)(question="q").answer
        lm.close()
    assert answer == "done" and ran == []
    observation = server.requests[1].json()["messages"][-1]
    assert observation["role"] == "tool" and "10 levels (max_json_depth)" in observation["content"]


def _recurse(levels: int) -> int:
    return 0 if levels == 0 else 1 + _recurse(levels - 1)


@pytest.mark.parametrize("output", ["model output", "tool arguments"])
def test_deep_json_is_refused_before_decoding_so_gc_keeps_its_stack(output: str) -> None:
    # json.loads recurses once per level. Decoding until the interpreter's limit and catching the
    # RecursionError was typed, but whatever GC ran meanwhile (finalizers closing clients,
    # gc.callbacks) found no stack left and failed as "Exception ignored" (seen in CI).
    starved: list[str] = []

    def probe(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            try:
                _recurse(100)
            except RecursionError:
                starved.append(output)

    deep = "[" * 5_000 + "]" * 5_000
    if output == "model output":
        replies = [Reply.completion('{"payload": ' + deep + "}")]
    else:
        replies = [
            tool_call("c1", "search", '{"query": ' + deep + "}"),
            tool_call("c2", "finish", json.dumps({"answer": "done"})),
        ]

    def search(query: str) -> str:
        """Search."""
        return query

    class Answer(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()

    threshold = gc.get_threshold()
    with FaultServer(*replies) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        gc.callbacks.append(probe)
        gc.set_threshold(1)  # a collection at (nearly) every allocation, deep ones included
        try:
            if output == "model output":
                with ts.context(lm=lm, max_retries=0):
                    result = ts.Predict(Nested).try_call(question="q")
                assert isinstance(
                    result, ts.errors.OutputDecodeError | ts.errors.OutputValidationError
                )
            else:
                agent = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)
                assert agent(question="q").answer == "done"
        finally:
            gc.set_threshold(*threshold)
            gc.callbacks.remove(probe)
            lm.close()
    assert starved == []
