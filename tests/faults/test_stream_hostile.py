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
