"""Streamed reasoning is never read as the answer, in partials as in the final `Prediction`.

Reasoning comes two ways (reference/local-servers.md): inline at the start of the content,
between the profile's `reasoning_tags` (``<think>...</think>``), or apart from it, in a
``reasoning_content`` (or ``reasoning``) delta field (llama.cpp, vLLM, DeepSeek). Over a real
socket (`StandIn`, 8 characters per delta) and over respx under the real openai client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

import typedspy as ts
from typedspy.streaming import OutputDelta, PartialPrediction, RetryStarted
from typedspy.testing import Reply, StandIn, chat_chunk, chat_completion, sse_body
from wire import BASE_URL, make_lm


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)
    why: str = ts.OutputField()


ANSWER = json.dumps({"score": 4, "why": "it works"})
THOUGHT = 'Is it {"score": 1, "why": "broken"}? No, it works.'
INLINE = f"<think>{THOUGHT}</think>\n{ANSWER}"


def events_of(lm: ts.LM, **inputs: Any) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return [e async for e in ts.Predict(Rate, lm=lm).astream(**inputs)]
        finally:
            await lm.aclose()

    return asyncio.run(main())


def partials(events: list[Any]) -> list[dict[str, Any]]:
    return [dict(e.values) for e in events if isinstance(e, PartialPrediction)]


def deltas(events: list[Any]) -> list[OutputDelta]:
    return [e for e in events if isinstance(e, OutputDelta)]


def sse(*deltas: dict[str, Any]) -> httpx.Response:
    """A stream of the given deltas (the first with the role), then ``stop`` and usage."""
    chunks = [chat_chunk(role="assistant")]
    for delta in deltas:
        chunk = chat_chunk()
        chunk["choices"][0]["delta"] = delta
        chunks.append(chunk)
    chunks.append(chat_chunk(finish_reason="stop"))
    chunks.append(chat_chunk(usage={"prompt_tokens": 9, "completion_tokens": 20}))
    return httpx.Response(
        200, content=sse_body(chunks), headers={"content-type": "text/event-stream"}
    )


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


# -- inline, between the profile's reasoning tags ---------------------------------------------


def test_an_inline_think_block_never_reaches_the_partials_over_a_socket() -> None:
    with StandIn() as server:
        server.enqueue(Reply(content=INLINE))
        lm = ts.LM("qwen3", base_url=server.base_url, api_key="k", profile="llama.cpp")
        events = events_of(lm, ticket="x")

    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert (final.score, final.why, final.reasoning_content) == (4, "it works", THOUGHT)
    shown = partials(events)
    assert shown[-1] == {"score": 4, "why": "it works"}
    assert all(p.get("score") in (None, 4) and "broken" not in p.get("why", "") for p in shown)
    assert shown[0] == {"score": 4}  # the first partial is the answer's, not the thought's
    # Every character streamed is in a delta, once; the block's text belongs to no field.
    assert "".join(d.text for d in deltas(events)) == INLINE
    assert "".join(d.text for d in deltas(events) if d.field == "why").strip() == '"it works"'
    first = next(i for i, d in enumerate(deltas(events)) if d.field is not None)
    assert "".join(d.text for d in deltas(events)[:first]).startswith(f"<think>{THOUGHT}</think>")


def test_reasoning_tags_cut_across_chunks_are_still_recognised(llm: respx.MockRouter) -> None:
    pieces = ["\n <", "thi", "nk>", '{"score": 1,', ' "why": "no"}', "</", "think", ">", "\n"]
    pieces += ['{"sco', 're": 5,', ' "why": "fine"}']
    llm.post("/chat/completions").mock(return_value=sse(*({"content": p} for p in pieces)))

    events = events_of(make_lm(profile="llama.cpp"), ticket="x")

    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert (final.score, final.reasoning_content) == (5, '{"score": 1, "why": "no"}')
    assert partials(events) == [{"score": 5}, {"score": 5, "why": "fine"}]
    assert "".join(d.text for d in deltas(events)) == "".join(pieces)


def test_an_unclosed_think_block_streams_no_partial_values(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(
        side_effect=[
            sse({"content": "<think>" + THOUGHT[:20]}, {"content": THOUGHT[20:]}),
            sse({"content": ANSWER}),
        ]
    )

    async def main() -> list[Any]:
        lm = make_lm(profile="llama.cpp")
        try:
            return [e async for e in ts.Predict(Rate, lm=lm, max_retries=1).astream(ticket="x")]
        finally:
            await lm.aclose()

    events = asyncio.run(main())

    # The first attempt (all reasoning) showed nothing; the retry showed the answer.
    first = events[: next(i for i, e in enumerate(events) if isinstance(e, RetryStarted))]
    assert partials(first) == []
    assert "".join(d.text for d in deltas(first)) == "<think>" + THOUGHT
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert (final.attempts[0].reasoning, final.attempts[0].raw) == (THOUGHT, "")
    assert partials(events)[-1] == {"score": 4, "why": "it works"}


@pytest.mark.parametrize(
    "held", ["\n", "<thi", "\n<think"], ids=["space", "tag-prefix", "whole-tag"]
)
def test_content_that_ends_while_it_could_still_open_a_block_is_answer(
    llm: respx.MockRouter, held: str
) -> None:
    """Held back while it might begin `<think>`, it is streamed when the reply ends."""
    llm.post("/chat/completions").mock(
        side_effect=[sse(*({"content": c} for c in held)), sse({"content": ANSWER})]
    )

    async def main() -> list[Any]:
        lm = make_lm(profile="llama.cpp")
        try:
            return [e async for e in ts.Predict(Rate, lm=lm, max_retries=1).astream(ticket="x")]
        finally:
            await lm.aclose()

    events = asyncio.run(main())

    first = events[: next(i for i, e in enumerate(events) if isinstance(e, RetryStarted))]
    assert "".join(d.text for d in deltas(first)) == held  # nothing dropped
    assert partials(first) == []
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert (final.attempts[0].reasoning, final.attempts[0].raw) == (None, held)
    assert final.reasoning_content is None
    assert final != dict(final)  # a Prediction equals a Prediction only


# -- apart from the content, in the delta's own field -----------------------------------------


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_streamed_reasoning_deltas_are_surfaced_and_never_parsed(
    llm: respx.MockRouter, key: str
) -> None:
    half = len(THOUGHT) // 2
    stream = sse(
        {key: THOUGHT[:half], "content": None},
        {key: THOUGHT[half:]},
        {"content": ANSWER[:10]},
        {"content": ANSWER[10:]},
    )
    plain = httpx.Response(200, json=chat_completion(ANSWER, reasoning_content=THOUGHT))
    llm.post("/chat/completions").mock(side_effect=[stream, plain])

    events = events_of(make_lm(profile="vllm"), ticket="x")
    unstreamed = ts.Predict(Rate, lm=make_lm(profile="vllm"))(ticket="x")

    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert final.reasoning_content == THOUGHT == unstreamed.reasoning_content
    assert final.attempts[0].reasoning == THOUGHT
    assert final == unstreamed and final.raw == ANSWER
    assert all(p.get("score") in (None, 4) for p in partials(events))
    assert partials(events)[-1] == {"score": 4, "why": "it works"}
    assert "".join(d.text for d in deltas(events)) == ANSWER  # the deltas are the content
