"""Hostile and quirky streams over a real socket: a correct result or a typed error, no flicker."""

from __future__ import annotations

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


@pytest.mark.parametrize(
    "block",
    [b"retry: 3000\n\n", b"id: 7\n\n", b"event: ping\n\n", b"data:\n\n", b"id: 7\n"],
    ids=["retry", "id", "event", "empty-data", "id-then-blank-lines"],
)
def test_an_sse_block_without_data_is_no_event(block: bytes) -> None:
    """The SSE standard dispatches no event for an empty data buffer (a gateway's ``retry:``);
    after an ``id:`` line, every blank line more would make one for the SDK."""
    pieces = [block, content('{"answer": ') + b"\n", block, content('"a"}'), STOP, DONE]
    assert streamed(pieces)[-1].outputs.answer == "a"


@pytest.mark.parametrize(
    ("pieces", "answer"),
    [
        (['{"answer": "a\ud83d', '\ude00b"}'], "a\U0001f600b"),  # a pair cut between chunks
        (['{"answer": "a\ud83d', "", '\ude00b"}'], "a\U0001f600b"),  # an empty chunk between
        (['{"answer": "a\ud83d', ' b"}'], "a\ud83d b"),  # a first half alone
        (['{"answer": "a', '\ude00 b"}'], "a\ude00 b"),  # a second half alone
        (['{"answer": "a"} \ud83d'], "a"),  # a first half at the very end
    ],
    ids=["pair", "pair-across-an-empty-chunk", "first-half", "second-half", "first-half-last"],
)
def test_a_surrogate_pair_cut_between_chunks_is_one_character(
    pieces: list[str], answer: str
) -> None:
    """Each chunk's JSON escapes the halves (``\\ud83d``): joined, they are the one character
    the same text in one body is; a half alone stays alone, as it does there."""
    events = streamed([content(piece) for piece in pieces] + [STOP, DONE])
    assert events[-1].outputs.answer == answer
    if "\U0001f600" in answer:  # each partial is UTF-8, so read: none goes missing
        shown = [e.values for e in events if isinstance(e, PartialPrediction)]
        assert shown == [{"answer": "a"}, {"answer": answer}]
    with FaultServer(Reply.completion("".join(pieces))) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        assert ts.Predict(Answer, lm=lm)(question="q").outputs.answer == answer  # as one body
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
