"""A native ReAct step cut off in a runaway loop gets the profile's one re-ask, as `Predict` does.

Over respx with the real openai client: the step truncated inside its ``finish`` arguments
(``finish_reason: "length"``), what the re-ask sends, and the typed outcome when it is spent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx
from react_wire import BASE_URL, bodies, finish_reply, make_lm

import typedspy as ts
from typedspy.testing import Reply, StandIn, chat_completion


class Ask(ts.Signature):
    """Answer with the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@ts.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


REPEATING = '{"answer": "' + "and so on, " * 40
WHITESPACE = '{"answer": "ship' + "\n" * 200


def cut_finish(arguments: str) -> httpx.Response:
    """A step whose ``finish`` call ran to the token limit."""
    call = {"id": "call_cut", "name": "finish", "arguments": arguments}
    return httpx.Response(
        200, json=chat_completion(None, tool_calls=[call], finish_reason="length")
    )


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


def test_a_repetition_loop_in_a_step_gets_one_re_ask_with_a_frequency_penalty(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[cut_finish(REPEATING), finish_reply(answer="shipped")]
    )

    pred = ts.ReAct(Ask, tools=[lookup], lm=make_lm("vllm"))(question="where is order 7?")

    assert pred.answer == "shipped"
    first, again = bodies(route)
    assert "frequency_penalty" not in first
    assert again["frequency_penalty"] == 1.0
    assert again["messages"][: len(first["messages"])] == first["messages"]
    (note,) = again["messages"][len(first["messages"]) :]  # the runaway reply is not sent back
    assert note["role"] == "user" and "repeated itself" in note["content"]
    assert pred.usage.total_tokens == sum(b["usage"]["total_tokens"] for b in responses(route))


def test_a_whitespace_loop_in_a_step_gets_the_compact_re_ask(router: respx.MockRouter) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[cut_finish(WHITESPACE), finish_reply(answer="shipped")]
    )

    pred = ts.ReAct(Ask, tools=[lookup], lm=make_lm("vllm"))(question="where is order 7?")

    assert pred.answer == "shipped"
    assert "compact JSON on one line" in bodies(route)[1]["messages"][-1]["content"]


def test_a_step_looping_again_is_a_typed_truncation_after_one_re_ask(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[cut_finish(REPEATING), cut_finish(REPEATING)]
    )
    lm = make_lm("vllm")

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.ReAct(Ask, tools=[lookup], lm=lm)(question="where is order 7?")

    assert route.call_count == 2  # one remedy per kind, never a blind retry
    assert caught.value.kind == "repetition_loop"
    assert [a.kind for a in caught.value.attempts] == ["repetition_loop", "repetition_loop"]
    assert caught.value.raw == REPEATING
    assert "repetition_loop" in lm.profile.observed


def test_a_profile_without_remedies_reports_the_loop_kind_at_once(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(side_effect=[cut_finish(REPEATING)])

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.ReAct(Ask, tools=[lookup], lm=make_lm("openai"))(question="where is order 7?")

    assert route.call_count == 1
    assert caught.value.kind == "repetition_loop"  # read from the cut-off arguments


def responses(route: respx.Route) -> list[dict[str, object]]:
    return [json.loads(call.response.content) for call in route.calls]


def test_a_union_step_gets_the_remedy_through_predict() -> None:
    step = {"reasoning": "the order shipped", "next": {"_type": "finish", "answer": "shipped"}}
    with StandIn() as server:
        server.enqueue(
            Reply(content='{"reasoning": "' + "and so on, " * 40, finish_reason="length"),
            json.dumps(step),
        )
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="llama.cpp")
        try:
            pred = ts.ReAct(Ask, tools=[lookup], lm=lm)(question="where is order 7?")
        finally:
            lm.close()

    assert pred.answer == "shipped"
    first, again = server.requests
    assert "tools" not in first  # the union step, under response_format
    assert (first.get("frequency_penalty"), again["frequency_penalty"]) == (None, 1.0)
    assert again["max_tokens"] == first["max_tokens"] == 512


def test_a_streamed_step_is_re_asked_the_same_way() -> None:
    looped = Reply(tool_calls=[{"name": "finish", "arguments": REPEATING}], finish_reason="length")
    done = Reply(
        tool_calls=[{"name": "finish", "arguments": json.dumps({"answer": "shipped"})}],
        finish_reason="tool_calls",
    )
    with StandIn() as server:
        server.enqueue(looped, done)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="vllm")
        try:
            events = list(ts.ReAct(Ask, tools=[lookup], lm=lm).stream(question="order 7?"))
        finally:
            lm.close()

    assert events[-1].answer == "shipped"
    assert [r.get("stream") for r in server.requests] == [True, True]
    assert server.requests[1]["frequency_penalty"] == 1.0


def test_a_step_looping_in_paragraphs_as_a_real_engine_sent_it_gets_the_re_ask(
    router: respx.MockRouter,
) -> None:
    # What SmolLM2-135M on a real llama-server wrote in a native step (tool_choice "required"
    # not enforced): content, one sentence over and over with paragraph breaks, cut at the token
    # limit right after one. On the code before it was a "genuinely long" answer, so the run
    # ended with TruncatedOutputError advising to raise max_tokens, and no re-ask.
    sentence = "I'm afraid that the response format is not compatible with the client's service."
    looping = "\n\n".join(" ".join([sentence] * n) for n in (9, 3, 10, 4)) + "\n\nI'm afraid"
    cut = httpx.Response(200, json=chat_completion(looping, finish_reason="length"))
    route = router.post("/chat/completions").mock(side_effect=[cut, finish_reply(answer="36")])

    agent = ts.ReAct(Ask, tools=[lookup], lm=make_lm("llama.cpp"), mode="tools")
    pred = agent(question="How old was Ada?")

    assert pred.answer == "36"
    first, again = bodies(route)
    assert "frequency_penalty" not in first
    assert again["frequency_penalty"] == 1.0
    assert "repeated itself" in again["messages"][-1]["content"]
