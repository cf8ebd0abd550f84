"""Hostile and quirky streams over a real socket: a correct result or a typed error, no flicker."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply
from typedspy.streaming import PartialPrediction


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def event(chunk: Mapping[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def content(text: str) -> bytes:
    return event({"choices": [{"index": 0, "delta": {"content": text}}]})


STOP = event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
DONE = b"data: [DONE]\n\n"


def streamed(pieces: list[bytes], signature: type[ts.Signature] = Answer) -> list[Any]:
    """Every event of one streamed Predict call whose reply is ``pieces``, as written."""
    reply = Reply(200, {"content-type": "text/event-stream"}, lambda: pieces)
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            return list(ts.Predict(signature, lm=lm).stream(question="q"))
        finally:
            lm.close()


class Measured(ts.Signature):
    """Measure."""

    question: str = ts.InputField()
    size: float = ts.OutputField()
    count: int = ts.OutputField()
    answer: str = ts.OutputField()


def test_a_number_cut_at_a_chunk_boundary_stays_in_the_partials() -> None:
    """``12.`` or ``4e`` is no JSON number yet: the number as far as it is one is shown, never
    nothing (the field vanished from one partial); a float field's value is a float throughout,
    as its final value is; a string ending in ``12.`` keeps its point."""
    pieces = ['{"size": 1', "2.", "5e", "1", ', "count": -', "4", ', "answer": "v 12.', '"}']
    events = streamed([content(piece) for piece in pieces] + [STOP, DONE], Measured)
    shown = [e.values for e in events if isinstance(e, PartialPrediction)]
    assert shown == [
        {"size": 1.0},
        {"size": 12.0},  # main: {} (the field gone)
        {"size": 12.5},  # main: {}
        {"size": 125.0},
        {"size": 125.0},  # complete: validated
        {"size": 125.0, "count": -4},
        {"size": 125.0, "count": -4, "answer": "v 12."},
        {"size": 125.0, "count": -4, "answer": "v 12."},
    ]
    assert all(type(values["size"]) is float for values in shown)  # main: 1 and 12 ints
    assert events[-1].outputs.model_dump() == {"size": 125.0, "count": -4, "answer": "v 12."}


def test_a_stream_whose_choices_are_never_choice_0_is_the_endpoints_fault() -> None:
    """Its text is not the stream's (only choice 0 is read): an LMResponseError after one
    request, not an empty output the model is asked again about."""
    other = event({"choices": [{"index": 1, "delta": {"content": '{"answer": "a"}'}}]})
    reply = Reply(200, {"content-type": "text/event-stream"}, lambda: [other, DONE])
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(ts.errors.LMResponseError, match="no choice 0"):
            list(ts.Predict(Answer, lm=lm).stream(question="q"))
        lm.close()
    assert len(server.requests) == 1


def calls_event(*pieces: tuple[int | None, str | None, str | None, str]) -> dict[str, Any]:
    """One chunk of tool-call pieces: (index, id, name, argument text); None: left out."""
    calls: list[dict[str, Any]] = []
    for index, call_id, name, arguments in pieces:
        function = {k: v for k, v in {"name": name, "arguments": arguments}.items() if v}
        call = {"index": index, "id": call_id, "function": function}
        calls.append({k: v for k, v in call.items() if v is not None})
    return {"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}


CALLS_END: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


def search(query: str) -> str:
    """Search."""
    return f"found {query}"


def test_calls_that_share_index_0_with_their_own_ids_are_each_run() -> None:
    """Ollama numbers every call of a reply 0 (ollama/ollama#15457): a piece with a name and
    a new id starts a call, so each runs with its own arguments."""
    first = Reply.sse(
        [
            calls_event((0, "a", "search", '{"query": ')),
            calls_event((0, None, None, '"x"}')),
            calls_event((0, "b", "search", '{"query": "y"}')),
            CALLS_END,
        ]
    )
    done = Reply.sse([calls_event((0, "z", "finish", '{"answer": "done"}')), CALLS_END])
    with FaultServer(first, done) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        events: list[Any] = list(
            ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3).stream(question="q")
        )
        lm.close()
    assert events[-1].answer == "done"
    messages = server.requests[1].json()["messages"]
    (asked,) = [m for m in messages if m.get("tool_calls")]
    # main: one call 'b' with '{"query": "x"}{"query": "y"}', answered with a decode error
    assert [(c["id"], c["function"]["arguments"]) for c in asked["tool_calls"]] == [
        ("a", '{"query": "x"}'),
        ("b", '{"query": "y"}'),
    ]
    assert [m["content"] for m in messages if m["role"] == "tool"] == ["found x", "found y"]


QUIRKS = {
    "index 1 before index 0": [
        calls_event((1, "b", "answer", '{"answer": "fir')),
        calls_event((1, None, None, 'st"}')),
        calls_event((0, "a", "answer", '{"answer": "second"}')),
    ],
    "every call at index 0": [
        calls_event((0, "a", "answer", '{"answer": "fir')),
        calls_event((0, None, None, 'st"}')),
        calls_event((0, "b", "answer", '{"answer": "second"}')),
    ],
    "no index (Gemini)": [
        calls_event((None, "a", "answer", '{"answer": "first"}')),
        calls_event((None, "b", "answer", '{"answer": "second"}')),
    ],
    # kept: a new id without a name continues the call (poolsideai/pool#9)
    "an id that changes between one call's pieces": [
        calls_event((0, "a", "answer", '{"answer": "fir')),
        calls_event((0, "a-2", None, 'st"}')),
    ],
}


@pytest.mark.parametrize("pieces", QUIRKS.values(), ids=QUIRKS.keys())
def test_tools_mode_streams_and_returns_the_call_that_started_first(pieces: list[Any]) -> None:
    """The partials show the first call to start and the result is that call's outputs."""
    reply = Reply.sse([*pieces, CALLS_END])
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        events: list[Any] = list(ts.Predict(Answer, lm=lm, mode="tools").stream(question="q"))
        lm.close()
    shown = [e.values for e in events if isinstance(e, PartialPrediction)]
    # main (index 1 first): partials of "first", then the result "second"
    assert shown[-1] == {"answer": "first"}
    assert events[-1].outputs.answer == "first"
    assert len(server.requests) == 1


def error_event(error: Mapping[str, Any], *, named: bool = False) -> bytes:
    """An error in the stream: a ``data:`` line (llama-server, vLLM), or an ``error`` event."""
    return (b"event: error\n" if named else b"") + event({"error": error})


OVERFLOW = {
    "code": 400,
    "message": "request (5000 tokens) exceeds the available context size (4096 tokens), try "
    "increasing it",
    "type": "exceed_context_size_error",
    "n_prompt_tokens": 5000,
    "n_ctx": 4096,
}
ERROR_EVENTS: dict[str, tuple[bytes, type[ts.errors.LMError], dict[str, Any]]] = {
    "llama-server's context overflow": (
        error_event(OVERFLOW),
        ts.errors.LMContextLengthError,
        {"status_code": 400, "code": "400", "context_window": 4096},
    ),
    "llama-server's grammar failure (ggml-org/llama.cpp#26787)": (
        error_event(
            {
                "code": 500,
                "message": "Unexpected empty grammar stack after accepting piece: functional",
                "type": "server_error",
            }
        ),
        ts.errors.LMStatusError,
        {"status_code": 500, "code": "500"},
    ),
    "an error event without a status": (
        error_event({"message": "The server had an error", "type": "server_error"}, named=True),
        ts.errors.LMStatusError,
        {"status_code": 500, "code": None},
    ),
    "an error that is only text": (
        event({"error": "the model crashed"}),
        ts.errors.LMStatusError,
        {"status_code": 500, "code": None},
    ),
    "a rate limit": (
        error_event({"code": "429", "message": "Rate limit reached", "type": "requests"}),
        ts.errors.LMRateLimitError,
        {"retry_after": None},
    ),
}


@pytest.mark.parametrize(
    ("error", "kind", "fields"), ERROR_EVENTS.values(), ids=ERROR_EVENTS.keys()
)
def test_an_error_event_mid_stream_is_read_as_an_error_reply_is(
    error: bytes, kind: type[ts.errors.LMError], fields: dict[str, Any]
) -> None:
    """The same class, status and code as the error would have had as an HTTP reply (main: a
    bare LMError, which no fallback trigger matched), after the partials already shown."""
    reply = Reply(
        200, {"content-type": "text/event-stream"}, lambda: [content('{"answer": "pa'), error]
    )
    events: list[Any] = []
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(ts.errors.LMError) as caught:
            events.extend(ts.Predict(Answer, lm=lm).stream(question="q"))
        lm.close()
    assert type(caught.value) is kind
    assert {name: getattr(caught.value, name) for name in fields} == fields
    assert "an error event in the stream" in str(caught.value)
    assert all(said not in str(caught.value) for said in ("streaming", "{")), caught.value
    assert [e.values for e in events if isinstance(e, PartialPrediction)] == [{"answer": "pa"}]
    assert len(server.requests) == 1


def test_a_streamed_context_overflow_moves_a_fallback_chain_on() -> None:
    """llama-server answers 200 and then the error event: the chain's next endpoint answers."""
    overflow = Reply(200, {"content-type": "text/event-stream"}, lambda: [error_event(OVERFLOW)])
    text = content('{"answer": "from the longer window"}')
    answer = Reply(200, {"content-type": "text/event-stream"}, lambda: [text, STOP, DONE])
    with FaultServer(overflow) as short, FaultServer(answer) as long:
        lms = [
            ts.LM(m, base_url=s.url, api_key="k", max_retries=0)
            for m, s in [("a", short), ("b", long)]
        ]
        chain = ts.LM.fallback(*lms, on={"context_length"})
        events: list[Any] = list(ts.Predict(Answer, lm=chain).stream(question="q"))
        for lm in lms:
            lm.close()
    assert events[-1].outputs.answer == "from the longer window"


def test_calls_that_share_index_0_without_ids_are_each_run() -> None:
    """A server that numbers every call 0 and sends no ids: a name after a call's arguments
    are a whole JSON object starts the next call (ADR-101); a name repeated in every piece of
    one call (with its argument text) does not."""
    first = Reply.sse(
        [
            calls_event((0, None, "search", '{"query": ')),
            calls_event((0, None, "search", '"x"}')),  # the name again, in the same call
            calls_event((0, None, "search", "")),
            calls_event((0, None, "search", '{"query": "y"}')),
            calls_event((0, None, "lookup", '{"query": "z"}')),
            CALLS_END,
        ]
    )
    done = Reply.sse([calls_event((0, None, "finish", '{"answer": "done"}')), CALLS_END])
    with FaultServer(first, done) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        events: list[Any] = list(
            ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3).stream(question="q")
        )
        lm.close()
    assert events[-1].answer == "done"
    messages = server.requests[1].json()["messages"]
    (asked,) = [m for m in messages if m.get("tool_calls")]
    # main: one call 'lookup' with '{"query": "x"}{"query": "y"}{"query": "z"}'
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in asked["tool_calls"]
    ] == [
        ("call_1_1", "search", '{"query": "x"}'),
        ("call_1_2", "search", '{"query": "y"}'),
        ("call_1_3", "lookup", '{"query": "z"}'),
    ]
    assert [m["content"] for m in messages if m["role"] == "tool"][:2] == ["found x", "found y"]


def test_another_name_before_a_calls_arguments_end_is_a_typed_error() -> None:
    """Without ids, a second name while the first call's arguments are unfinished cannot be
    read: an LMResponseError naming both calls, not one call of merged arguments."""
    reply = Reply.sse(
        [
            calls_event((0, None, "search", '{"query": ')),
            calls_event((0, None, "lookup", '{"query": "y"}')),
            CALLS_END,
        ]
    )
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(
            ts.errors.LMResponseError,
            match="named 'lookup' without an id at index 0, where the call to 'search' had not",
        ):
            list(ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3).stream(question="q"))
        lm.close()
    assert len(server.requests) == 1


def test_a_name_in_every_piece_of_a_long_call_is_read_in_linear_time(hang_guard: None) -> None:
    """A server may name the call in each piece; whether the arguments were a whole object was
    read from all of them at each piece: 8,000 pieces of 1 KB (8 MB, within the 64 MiB of a
    reply) took about a minute on the event loop. Each character is read once now."""
    pieces = [calls_event((0, None, "search", '{"query": "'))]
    pieces += [calls_event((0, None, "search", "x" * 1000 + "}"))] * 8_000
    pieces += [calls_event((0, None, "search", '"}')), CALLS_END]
    done = Reply.sse([calls_event((0, None, "finish", '{"answer": "done"}')), CALLS_END])

    async def run(lm: ts.LM) -> list[Any]:
        agent = ts.ReAct(Answer, tools=[search], lm=lm, max_iters=3)
        return [event async for event in agent.astream(question="q")]

    with FaultServer(Reply.sse(pieces), done) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        try:
            events = asyncio.run(run(lm))
        finally:
            lm.close()
    assert events[-1].answer == "done"
    (asked,) = [m for m in server.requests[1].json()["messages"] if m.get("tool_calls")]
    assert [len(c["function"]["arguments"]) for c in asked["tool_calls"]] == [8_008_013]
