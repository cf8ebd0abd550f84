"""FakeLM: scripted replies in order, recorded requests, a clear error when the script runs out."""

from __future__ import annotations

import asyncio

import pytest

from typedspy._types import Usage
from typedspy.errors import LMError, LMRateLimitError
from typedspy.lm import BaseLM, LMRequest, LMResponse
from typedspy.testing._fake_lm import FakeLM

HELLO = ({"role": "user", "content": "hello"},)


def complete(lm: FakeLM, request: LMRequest) -> LMResponse:
    return asyncio.run(lm.acomplete(request))


def test_a_text_reply_becomes_a_stop_response_with_estimated_usage() -> None:
    lm = FakeLM(['{"answer": 4}'], model="fake-4")
    request = LMRequest(messages=({"role": "user", "content": "What is 2 + 2?"},))

    response = complete(lm, request)

    assert response.text == '{"answer": 4}'
    assert (response.refusal, response.finish_reason, response.tool_calls) == (None, "stop", ())
    assert response.model == "fake-4"
    assert response.usage == Usage(prompt_tokens=4, completion_tokens=4, total_tokens=8)
    assert response.raw["choices"][0]["message"]["content"] == '{"answer": 4}'
    assert lm.requests == [request]
    assert isinstance(lm, BaseLM)


def test_replies_come_in_order_and_every_kind_is_supported() -> None:
    scripted = LMResponse(
        text=None,
        refusal="I can't help with that.",
        finish_reason="stop",
        tool_calls=(),
        usage=Usage(1, 1, 2),
        model="scripted",
        raw={},
    )
    lm = FakeLM(
        [
            "first",
            scripted,
            LMRateLimitError("slow down"),
            lambda request: f"echo: {request.messages[-1]['content']}",
            lambda request: scripted,
        ]
    )

    assert complete(lm, LMRequest(messages=HELLO)).text == "first"
    assert complete(lm, LMRequest(messages=HELLO)) is scripted
    with pytest.raises(LMRateLimitError, match="slow down"):
        complete(lm, LMRequest(messages=HELLO))
    assert complete(lm, LMRequest(messages=({"role": "user", "content": "ping"},))).text == (
        "echo: ping"
    )
    assert complete(lm, LMRequest(messages=HELLO)) is scripted

    assert len(lm.requests) == 5  # the request answered by an exception is recorded too
    assert lm.remaining == 0


def test_running_out_of_replies_is_an_lm_error_that_says_how_many_there_were() -> None:
    lm = FakeLM(["only one", "and two"])
    complete(lm, LMRequest(messages=HELLO))
    complete(lm, LMRequest(messages=HELLO))

    with pytest.raises(LMError, match=r"FakeLM has no more replies \(2 were scripted\)"):
        complete(lm, LMRequest(messages=HELLO))
    assert len(lm.requests) == 3


def test_the_sync_call_returns_text_and_records_the_prompt() -> None:
    lm = FakeLM(["Hi!"])

    assert lm("Say hi", temperature=0) == "Hi!"
    assert lm.requests[0].messages == ({"role": "user", "content": "Say hi"},)
    assert lm.requests[0].params == {"temperature": 0}


def test_replies_can_come_from_any_iterable() -> None:
    lm = FakeLM(f"reply {n}" for n in range(2))

    assert [lm("a"), lm("b")] == ["reply 0", "reply 1"]
    assert repr(lm) == "FakeLM(model='fake', remaining=0)"
