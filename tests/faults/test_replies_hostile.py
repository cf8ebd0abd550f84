"""What a server sends back besides the answer text, made hostile: the reply's shape and headers.

Over a real socket (`FaultServer`) under the real openai client. A reply the endpoint got wrong
is its fault: one request, a typed error naming what was wrong, never a feedback turn that
blames the model.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, completion_body


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


NOT_TEXT: dict[str, Any] = {
    "a number": 42,
    "an object": {"answer": "4"},
    "a bool": True,
    "a part that is no object": ['{"answer": "4"}'],
}


def content_reply(content: Any, *, streamed: bool) -> Reply:
    if not streamed:
        return Reply.json(completion_body(content))
    delta = {"index": 0, "delta": {"role": "assistant", "content": content}}
    end = {"index": 0, "delta": {}, "finish_reason": "stop"}
    return Reply.sse([{"choices": [delta]}, {"choices": [end]}])


@pytest.mark.parametrize("content", NOT_TEXT.values(), ids=NOT_TEXT.keys())
@pytest.mark.parametrize("streamed", [False, True], ids=["called", "streamed"])
def test_content_that_is_not_text_is_the_endpoints_fault(content: Any, streamed: bool) -> None:
    # On main it was read as no content: the model was told it sent none and asked again.
    with FaultServer(content_reply(content, streamed=streamed)) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        predict = ts.Predict(Answer, lm=lm)
        with ts.context(max_retries=2), pytest.raises(ts.errors.LMResponseError) as caught:
            if streamed:
                list(predict.stream(question="q"))
            else:
                predict(question="q")
        lm.close()
    assert len(server.requests) == 1
    where = "delta" if streamed else "message"
    assert f"choices[0].{where}.content" in str(caught.value)


def test_content_parts_are_still_read_as_text() -> None:
    parts = [{"type": "text", "text": '{"answer": '}, {"type": "text", "text": '"4"}'}]
    with FaultServer(Reply.json(completion_body(parts))) as server:  # type: ignore[arg-type]
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        assert ts.Predict(Answer, lm=lm)(question="q").answer == "4"
        lm.close()
    assert json.loads(server.requests[0].body)["model"] == "m"


RETRY_AFTER = {
    "retry-after 1e400": ({"retry-after": "1e400"}, None),
    "retry-after-ms 1e400": ({"retry-after-ms": "1e400"}, None),
    "retry-after inf": ({"retry-after": "inf"}, None),
    "retry-after NaN": ({"retry-after": "NaN"}, None),
    "retry-after -5": ({"retry-after": "-5"}, None),
    "retry-after a date in 9999": ({"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}, None),
    "retry-after-ms 1e400, retry-after 2": ({"retry-after-ms": "1e400", "retry-after": "2"}, 2.0),
    "retry-after 2": ({"retry-after": "2"}, 2.0),
}


@pytest.mark.parametrize("case", list(RETRY_AFTER))
def test_a_429s_retry_after_is_finite_seconds_or_none(case: str) -> None:
    # On main "1e400" made LMRateLimitError.retry_after infinite: a caller sleeping for it slept
    # for ever (asyncio.sleep) or raised OverflowError (time.sleep).
    headers, expected = RETRY_AFTER[case]
    error = json.dumps({"error": {"message": "Rate limit reached"}}).encode()
    reply = Reply(429, {"content-type": "application/json", **headers}, lambda: [error])
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(ts.errors.LMRateLimitError) as caught:
            ts.Predict(Answer, lm=lm)(question="q")
        lm.close()
    assert len(server.requests) == 1
    assert caught.value.retry_after == expected


MODELS = {
    "a thousand owners": (
        {
            "data": [
                {"id": f"m{i}", "owned_by": f"org-{i:04d}-" + "x" * 2_000} for i in range(1_000)
            ]
        },
        "and 995 more",
    ),
    "one owner of a megabyte": ({"data": [{"id": "m", "owned_by": "x" * (1 << 20)}]}, "..."),
    "an owner that is an object": ({"data": [{"id": "m", "owned_by": {"a": [1] * 50_000}}]}, "..."),
}


@pytest.mark.parametrize("case", list(MODELS))
def test_a_models_list_no_server_wrote_is_one_short_line(
    case: str, caplog: pytest.LogCaptureFixture
) -> None:
    # On main the warning quoted every owner whole: 2 MB for a thousand long ones.
    body, shown = MODELS[case]
    with (
        FaultServer(Reply.completion('{"answer": "4"}'), models=Reply.json(body)) as server,
        caplog.at_level(logging.INFO, "typedspy"),
    ):
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        assert ts.Predict(Answer, lm=lm)(question="q").answer == "4"
        assert lm.profile.name == "generic"
        lm.close()
    (line,) = [r.getMessage() for r in caplog.records if "gets profile" in r.getMessage()]
    assert len(line) < 500 and shown in line and "\n" not in line


def search(query: str) -> str:
    """Search."""
    return f"found {query}"


def tool_calls(*calls: tuple[Any, str, str], streamed: bool) -> Reply:
    listed = [
        {"id": i, "type": "function", "function": {"name": name, "arguments": arguments}}
        for i, name, arguments in calls
    ]
    if not streamed:
        return Reply.completion(None, tool_calls=listed)
    delta = {"tool_calls": [{"index": n, **c} for n, c in enumerate(listed)]}
    end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
    return Reply.sse([{"choices": [{"index": 0, "delta": delta}]}, {"choices": [end]}])


IDS: dict[str, list[Any]] = {
    "the same id twice": ["a", "a"],
    "an id that is an object, then a number": [{"x": 1}, 5],
    "a made-up id taken by the model": ["call_1_2", None],
    "no ids at all": [None, None],
}


@pytest.mark.parametrize("ids", IDS.values(), ids=IDS.keys())
@pytest.mark.parametrize("streamed", [False, True], ids=["called", "streamed"])
def test_each_tool_call_of_a_step_has_its_own_string_id(ids: list[Any], streamed: bool) -> None:
    # On main two calls sharing an id were answered by two tool messages with that one id, and
    # an id that is no string was its Python repr ("{'x': 1}").
    first = tool_calls(
        (ids[0], "search", '{"query": "x"}'),
        (ids[1], "search", '{"query": "y"}'),
        streamed=streamed,
    )
    done = tool_calls(("z", "finish", '{"answer": "done"}'), streamed=streamed)
    with FaultServer(first, done) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        agent = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)
        if streamed:
            events = list(agent.stream(question="q"))
            answer = events[-1].answer
        else:
            answer = agent(question="q").answer
        lm.close()
    assert answer == "done"
    messages = server.requests[1].json()["messages"]
    (asked,) = [m for m in messages if m.get("tool_calls")]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    made = [c["id"] for c in asked["tool_calls"]]
    assert answered == made and len(set(made)) == 2
    assert all(isinstance(i, str) and i and "{" not in i for i in made)


@pytest.mark.parametrize("streamed", [False, True], ids=["called", "streamed"])
def test_a_tool_call_with_its_arguments_as_an_object_runs(streamed: bool) -> None:
    # A few servers send the arguments object itself; an entry with no function names no tool.
    listed = [
        {"id": "b", "function": {"name": "search", "arguments": {"query": "x"}}},
        {"id": "c", "function": {"name": "search", "arguments": None}},
        {"id": "d", "function": {"name": "search", "arguments": ""}},  # sent back as "{}"
    ]
    if streamed:
        delta = {"tool_calls": [{"index": n, **c} for n, c in enumerate(listed)]}
        end = {"index": 0, "delta": {}, "finish_reason": "tool_calls"}
        first = Reply.sse([{"choices": [{"index": 0, "delta": delta}]}, {"choices": [end]}])
    else:
        first = Reply.completion(None, tool_calls=["not a call", {"id": "a"}, *listed])
    done = tool_calls(("z", "finish", '{"answer": "done"}'), streamed=streamed)
    with FaultServer(first, done) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        agent = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)
        if streamed:
            answer = list(agent.stream(question="q"))[-1].answer
        else:
            answer = agent(question="q").answer
        lm.close()
    assert answer == "done"
    messages = server.requests[1].json()["messages"]
    (asked,) = [m for m in messages if m.get("tool_calls")]
    assert [c["id"] for c in asked["tool_calls"]] == ["b", "c", "d"]  # no function: no call
    arguments = [json.loads(c["function"]["arguments"]) for c in asked["tool_calls"]]
    assert arguments == [{"query": "x"}, {}, {}]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert "found x" in results["b"] and "query" in results["c"]  # "c" lacks its argument
    assert "query" in results["d"]
