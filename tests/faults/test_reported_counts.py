"""What a server reports besides the answer, hostile: token counts and embedding vectors.

A count that cannot be one (negative, NaN, 1e400) is not reported (zeros; a budget then counts
the reply at its estimate, ADR-090), never a bare ValueError mid-call or a budget that grows; an
embedding vector that is not finite numbers is an `LMResponseError`.
"""

from __future__ import annotations

import asyncio
import json

import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, completion_body


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


COUNTS = ["NaN", "Infinity", "-Infinity", "1e400", "-100000", '"12"', "null", "true", "[1]"]


def completion_with(prompt_tokens: str) -> str:
    body = completion_body('{"answer": "4"}')
    body["usage"] = {"prompt_tokens": "@", "completion_tokens": 2, "total_tokens": "@"}
    return json.dumps(body).replace('"@"', prompt_tokens)  # JSON's own NaN and 1e400 included


@pytest.mark.parametrize("count", COUNTS)
def test_a_count_that_is_no_count_is_not_reported_and_the_budget_still_counts(count: str) -> None:
    reply = Reply.raw(completion_with(count), content_type="application/json")
    budget = ts.limits.Budget(total_tokens=10_000)
    with FaultServer(reply) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with ts.context(lm=lm, budget=budget):
            pred = ts.Predict(Answer)(question="q")
        lm.close()
    assert pred.answer == "4"
    assert pred.usage == ts.prediction.Usage(0, 2, 2)  # the completion count was a count
    assert budget.usage.total_tokens >= 2  # never below what was reported, never negative


def test_a_streamed_usage_chunk_with_counts_that_are_no_counts_reads_as_none() -> None:
    delta = {"choices": [{"index": 0, "delta": {"content": '{"answer": "4"}'}}]}
    end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = '{"choices": [], "usage": {"prompt_tokens": NaN, "completion_tokens": -5}}'
    with FaultServer(Reply.sse([delta, end, usage])) as server:
        lm = ts.LM("m", base_url=server.url, api_key="k", max_retries=0)
        with ts.context(lm=lm):
            events = list(ts.Predict(Answer).stream(question="q"))
        lm.close()
    final = events[-1]
    assert isinstance(final, ts.Prediction)
    assert final.usage == ts.prediction.Usage()


def embeddings_with(vector: str, usage: str = '{"prompt_tokens": 3, "total_tokens": 3}') -> Reply:
    body = (
        '{"object": "list", "model": "e", "data": [{"object": "embedding", "index": 0, '
        f'"embedding": {vector}}}], "usage": {usage}}}'
    )
    return Reply.raw(body, content_type="application/json")


def embed(reply: Reply) -> list[list[float]]:
    with FaultServer(reply) as server:

        async def main() -> list[list[float]]:
            lm = ts.LM("e", base_url=server.url, api_key="k", max_retries=0)
            try:
                return await lm.aembed(["hello"])
            finally:
                await lm.aclose()

        return asyncio.run(main())


@pytest.mark.parametrize(
    "vector", ["[0.1, NaN]", "[0.1, Infinity]", '[0.1, "0.2"]', "[0.1, null]", '"abc"', "{}"]
)
def test_an_embedding_that_is_not_finite_numbers_is_an_lm_response_error(vector: str) -> None:
    with pytest.raises(ts.errors.LMResponseError, match="not a list of finite numbers"):
        embed(embeddings_with(vector))


def test_embedding_counts_that_are_no_counts_are_not_reported() -> None:
    usage = '{"prompt_tokens": NaN, "total_tokens": -3}'
    assert embed(embeddings_with("[0.5, 1]", usage)) == [[0.5, 1.0]]


def test_a_reply_with_more_vectors_than_texts_is_an_lm_response_error() -> None:
    body = (
        '{"object": "list", "model": "e", "data": ['
        '{"object": "embedding", "index": 0, "embedding": [0.5]}, '
        '{"object": "embedding", "index": 1, "embedding": [0.25]}]}'
    )
    with pytest.raises(ts.errors.LMResponseError, match="2 embeddings for 1 texts"):
        embed(Reply.raw(body, content_type="application/json"))


@pytest.mark.parametrize("data", ['[{"embedding": [0.5]}]', '[{"index": "one", "embedding": [1]}]'])
def test_a_reply_whose_vectors_have_no_index_is_an_lm_response_error(data: str) -> None:
    body = f'{{"object": "list", "model": "e", "data": {data}}}'
    with pytest.raises(ts.errors.LMResponseError, match="no indexed vectors"):
        embed(Reply.raw(body, content_type="application/json"))
