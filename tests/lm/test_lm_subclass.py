"""A subclass of `LM` that overrides `acomplete` or `astream` is what a module's call goes through.

The pipeline sends the body it built with `LM.asend` (ADR-061); an override below it would be
skipped. Checked over a real socket against the stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.lm import LMChunk, LMRequest, LMResponse
from typedspy.testing import StandIn


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


class Logged(ts.LM):
    """Records each request's last message, then sends it as `LM` does."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.completed: list[str] = []
        self.streamed: list[str] = []

    async def acomplete(self, request: LMRequest) -> LMResponse:
        self.completed.append(str(request.messages[-1]["content"]))
        return await super().acomplete(request)

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        self.streamed.append(str(request.messages[-1]["content"]))
        async for chunk in super().astream(request):
            yield chunk


def test_a_call_and_a_stream_go_through_the_subclass_overrides() -> None:
    with StandIn() as standin:
        lm = Logged("m", base_url=standin.base_url, api_key="k", profile="generic")
        predict = ts.Predict(Answer, lm=lm)
        pred = predict(question="first")
        events = list(predict.stream(question="second"))
        lm.close()
    assert isinstance(pred.answer, str) and isinstance(events[-1], ts.Prediction)
    assert lm.completed == ["<question>\nfirst\n</question>"]
    assert lm.streamed == ["<question>\nsecond\n</question>"]
    assert len(standin.requests) == 2  # each sent once: the override calls LM's own send


class Plain(ts.LM):
    """A subclass that overrides nothing: the body the pipeline built is sent as it is."""


def test_a_subclass_that_overrides_nothing_keeps_the_body_path() -> None:
    assert Plain.asend is ts.LM.asend and Plain.asend_stream is ts.LM.asend_stream
    assert Logged.asend is not ts.LM.asend


class Canned(ts.lm.BaseLM):
    """A `BaseLM` of one's own that skips `BaseLM.__init__`: the defaults stand in."""

    def __init__(self) -> None:
        self.model = "canned"
        self.sent = 0

    async def acomplete(self, request: LMRequest) -> LMResponse:
        self.sent += 1
        text = '{"answer": "from the can"}'
        return LMResponse.build(text=text, model=self.model, usage=ts.prediction.Usage(1, 1, 2))


def test_a_base_lm_of_ones_own_gets_the_defaults() -> None:
    lm = Canned()
    assert lm.profile.name == "openai"  # no profile given: OpenAI's, as for BaseLM.__init__
    with ts.context(cache=ts.cache.MemoryCache()):
        answers = [ts.Predict(Answer, lm=lm)(question="q").answer for _ in range(2)]
    assert answers == ["from the can"] * 2 and lm.sent == 1  # the second from the cache
    assert lm.redact("key sk-proj-abcdefghijklmnopqrstuvwxyz0123") == "key [redacted]"


class Silent(Canned):
    """Streams nothing at all."""

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        self.sent += 1
        for chunk in ():
            yield chunk


def test_a_stream_of_no_chunks_is_an_empty_reply_not_a_hang() -> None:
    lm = Silent()
    with pytest.raises(ts.errors.OutputDecodeError, match="empty text"):
        list(ts.Predict(Answer, lm=lm).stream(question="q"))
    assert lm.sent == 2  # the feedback retry streamed again, then the call ended
