"""The history stage: the last exchanges, bounded, and `ts.inspect_history` (issue 22)."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

import typedspy as ts
from typedspy.lm import LMRequest, LMResponse
from typedspy.pipeline import HISTORY, last_exchanges
from typedspy.testing import Reply, StandIn, chat_completion


class Score(ts.Signature):
    """Score the text from 1 to 5."""

    text: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)


@pytest.fixture(autouse=True)
def fresh() -> None:
    HISTORY.clear()


def test_a_retried_call_shows_each_attempt_with_its_feedback_turn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with StandIn() as server:
        server.enqueue(json.dumps({"score": 9}), json.dumps({"score": 4}))
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            assert ts.Predict(Score, lm=lm)(text="fine").score == 4
        finally:
            lm.close()

    text = ts.inspect_history(2)

    assert capsys.readouterr().out.strip() == text.strip()
    first, second = last_exchanges(2)
    assert (first.attempt, first.kind) == (1, "not_enforced")
    assert (second.attempt, second.kind) == (2, None)
    assert second.body == server.requests[1]
    assert "attempt 1" in text and "failed: not_enforced" in text and "attempt 2" in text
    feedback = second.body["messages"][-1]["content"]
    assert "score" in feedback and feedback in text  # the feedback turn, as sent
    assert '{"score": 9}' in text and '{"score": 4}' in text  # what came back each time


def test_control_characters_a_server_sent_are_printed_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A reply's escape sequences (set the title, clear the screen, return to the line start)
    # were printed raw, so the terminal ran them over what the user was reading.
    with StandIn() as server:
        server.enqueue("\x1b]0;owned\x07\x1b[2Jhidden\rshown\tand\nmore")
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            assert lm("hi").startswith("\x1b]0;owned")  # the reply itself is left as it came
        finally:
            lm.close()

    text = ts.inspect_history(1)

    printed = capsys.readouterr().out
    assert "\\x1b]0;owned\\x07\\x1b[2Jhidden\\x0dshown\tand\nmore" in printed
    assert not any(c in printed for c in "\x1b\x07\r") and printed.strip() == text.strip()


def test_failed_requests_are_kept_with_their_error() -> None:
    with StandIn() as server:
        server.enqueue(Reply(status=500, error={"message": "boom"}))
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", max_retries=0)
        try:
            with pytest.raises(ts.LMError):
                ts.Predict(Score, lm=lm)(text="fine")
        finally:
            lm.close()

    (entry,) = last_exchanges(1)
    assert entry.response is None and entry.error is not None and "boom" in entry.error
    assert entry.usage == ts.prediction.Usage()  # a failed request reported no tokens
    assert "boom" in ts.inspect_history(1)


def test_the_history_is_bounded_and_can_be_turned_off() -> None:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            with ts.context(history_size=3):
                for n in range(5):
                    ts.Predict(Score, lm=lm)(text=f"text {n}")
            assert len(last_exchanges(10)) == 3
            assert [
                e.body["messages"][-1]["content"].count("text 4") for e in last_exchanges(3)
            ] == [
                0,
                0,
                1,
            ]
            HISTORY.clear()
            with ts.context(history_size=0):
                ts.Predict(Score, lm=lm)(text="unseen")
            assert last_exchanges(10) == []
        finally:
            lm.close()
    with pytest.raises(ts.ConfigurationError, match="history_size"):
        ts.configure(history_size=-1)


def test_an_entry_keeps_the_body_that_was_sent_after_its_lm_is_gone() -> None:
    # The body is built once per request and the history keeps that one: nothing is built
    # again when the entry is read, so the LM's defaults are in it after the LM is collected
    # (a body rebuilt from a dead LM's request left them out).
    def call(base_url: str) -> None:
        lm = ts.LM("standin-1", base_url=base_url, api_key="sk-x", temperature=0.1, seed=7)
        try:
            ts.Predict(Score, lm=lm)(text="fine")
        finally:
            lm.close()

    with StandIn() as server:
        call(server.base_url)
        gc.collect()

    (entry,) = last_exchanges(1)
    assert entry.body == server.requests[0]
    assert (entry.body["temperature"], entry.body["seed"]) == (0.1, 7)


def test_a_request_refused_before_it_is_built_is_kept_with_its_body() -> None:
    # A budget refuses the request before the transport (or a cache) needs the body: the
    # entry builds it then, once, from the LM it would have gone to.
    budget = ts.limits.Budget(requests=0)
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", seed=7)
        try:
            with ts.context(budget=budget), pytest.raises(ts.errors.BudgetExceededError):
                ts.Predict(Score, lm=lm)(text="fine")
        finally:
            lm.close()
    (entry,) = last_exchanges(1)
    assert server.requests == []
    assert entry.body["seed"] == 7 and entry.body["messages"][-1]["content"].count("fine") == 1


def test_the_printed_history_shows_every_part_of_a_conversation_and_its_reply() -> None:
    conversation: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in the picture?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "look", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
    ]
    with StandIn() as server:
        server.enqueue(
            chat_completion("a cat", reasoning_content="the tool saw one"),
            Reply(refusal="I will not say"),
            Reply(content="a ca", finish_reason="length"),
        )
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", max_retries=0)
        try:
            with ts.context(cache=ts.cache.MemoryCache()):
                assert lm(conversation, temperature=0.5) == "a cat"
                assert lm(conversation, temperature=0.5) == "a cat"  # from the cache
            with pytest.raises(ts.errors.RefusalError):
                lm("say it")
            lm("spell cat")
        finally:
            lm.close()

    sent, cached, refused, cut = ts.inspect_history(4).split("\n\n[")

    assert "USER:\nwhat is in the picture?\n<image_url>" in sent
    assert "ASSISTANT:\n→ look({})" in sent and "TOOL:\na cat" in sent
    assert '(parameters: {"temperature": 0.5})' in sent
    assert "RESPONSE:\n(reasoning) the tool saw one\na cat" in sent
    assert " · cached · " in cached and " · cached · " not in sent
    assert "RESPONSE:\n(refused) I will not say" in refused
    assert "RESPONSE:\na ca\n(finish_reason: length)" in cut


class _Unbuildable(ts.lm.BaseLM):
    """An LM whose request body cannot be built (a user's subclass)."""

    def request_body(self, request: LMRequest) -> dict[str, Any]:
        raise ValueError("no body for this request")

    async def acomplete(self, request: LMRequest) -> LMResponse:
        raise AssertionError("never sent")


def test_an_entry_whose_body_cannot_be_built_says_why() -> None:
    with ts.context(budget=ts.limits.Budget(requests=0)), pytest.raises(ts.BudgetExceededError):
        ts.Predict(Score, lm=_Unbuildable("mine"))(text="fine")
    (entry,) = last_exchanges(1)
    assert entry.body == {"unbuildable": "ValueError: no body for this request"}
    assert "BudgetExceededError" in (entry.error or "")
