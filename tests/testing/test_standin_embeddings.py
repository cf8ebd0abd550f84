from __future__ import annotations

import asyncio
import base64
import struct
from typing import Any

import httpx
import openai
import pytest
import respx

import typedspy as ts
from typedspy.testing import NearestDemo, StandIn, embed_text
from wire import BASE_URL, make_lm


def test_embeddings_are_deterministic_and_close_for_shared_words() -> None:
    a, b, c = embed_text("refund my money"), embed_text("money refund"), embed_text("app crash")
    assert a == embed_text("refund my money")
    assert len(a) == 64
    assert sum(x * x for x in a) == pytest.approx(1.0)
    ab = sum(x * y for x, y in zip(a, b, strict=True))
    ac = sum(x * y for x, y in zip(a, c, strict=True))
    assert ab > 0.6
    assert ab > ac


def test_lm_aembed_over_the_standin_in_float_and_the_sdks_base64() -> None:
    with StandIn() as server:

        async def embed() -> list[list[float]]:
            lm = ts.LM("embed-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)
            try:
                return await lm.aembed(["refund my money", "app crash"])
            finally:
                await lm.aclose()

        vectors = asyncio.run(embed())
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-standin", max_retries=0)
        with client:
            raw = client.embeddings.create(model="m", input="x y", encoding_format="base64")
    assert vectors == [embed_text("refund my money"), embed_text("app crash")]
    assert server.embedding_requests[0] == {
        "model": "embed-1",
        "input": ["refund my money", "app crash"],
        "encoding_format": "float",
    }
    data: Any = raw.data[0].embedding
    decoded = list(struct.unpack("<64f", base64.b64decode(data))) if isinstance(data, str) else data
    assert decoded == pytest.approx(embed_text("x y"), abs=1e-6)


def test_bad_embedding_input_is_a_400() -> None:
    with StandIn() as server:
        reply = httpx.post(f"{server.base_url}/embeddings", json={"model": "m", "input": [1]})
    assert reply.status_code == 400
    assert "'input' must be" in reply.json()["error"]["message"]


@respx.mock
def test_aembed_errors_are_typed() -> None:
    respx.post(f"{BASE_URL}/embeddings").mock(return_value=httpx.Response(404, json={}))

    async def embed() -> None:
        lm = make_lm()
        try:
            await lm.aembed(["x"])
        finally:
            await lm.aclose()

    with pytest.raises(ts.errors.LMStatusError):
        asyncio.run(embed())


def test_an_answer_function_decides_replies_and_none_falls_back() -> None:
    calls: list[int] = []

    def answer(body: dict[str, Any]) -> str | None:
        calls.append(len(body["messages"]))
        return None if len(calls) > 1 else '{"answer": 7}'

    with StandIn(answer=answer) as server:
        lm = ts.LM("m", base_url=server.base_url, api_key="sk-standin", max_retries=0)
        try:
            with ts.context(lm=lm):
                first = ts.Predict("question -> answer: int")(question="?")
                second = ts.Predict("question -> answer: int")(question="?")
        finally:
            lm.close()
    assert first.answer == 7
    assert isinstance(second.answer, int)  # generated from the schema
    assert calls == [2, 2]


def test_nearest_demo_copies_the_closest_demo_and_counts_demos() -> None:
    model = NearestDemo('{"a": "none"}', ignore=["the"])
    body = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "<q>\nthe red apple\n</q>"},
            {"role": "assistant", "content": '{"a": "fruit"}'},
            {"role": "user", "content": "<q>\nthe blue car\n</q>"},
            {"role": "assistant", "content": '{"a": "vehicle"}'},
            {"role": "user", "content": "<q>\na red car, fast\n</q>"},
        ]
    }
    assert model(body) == '{"a": "fruit"}'  # ties: the first demo with the most shared words
    body["messages"][-1]["content"] = "<q>\nblue car\n</q>"
    assert model(body) == '{"a": "vehicle"}'
    body["messages"][-1]["content"] = "<q>\nthe zebra\n</q>"
    assert model(body) == '{"a": "none"}'
    assert model.seen_demos == [2, 2, 2]


def test_nearest_demo_sends_a_reply_the_schema_cannot_complete_as_it_is() -> None:
    def ask(fallback: str, schema: dict[str, object]) -> str:
        spec = {"name": "Out", "schema": schema}
        body = {
            "messages": [{"role": "user", "content": "anything"}],
            "response_format": {"type": "json_schema", "json_schema": spec},
        }
        return NearestDemo(fallback)(body)

    answer = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    assert ask('{"a": "x"}', answer) == '{"a":"x","b":1}'  # the missing property generated
    assert ask("not json", answer) == "not json"
    assert ask('{"a": "x"}', {"type": "string"}) == '{"a": "x"}'  # no object to complete
