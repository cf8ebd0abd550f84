"""Pickling: modules, LMs (never their API key), FakeLM and predictions, round trip."""

from __future__ import annotations

import copy
import datetime
import json
import pickle
from collections.abc import Iterator

import httpx
import openai
import pytest
from pydantic import BaseModel

import typedspy as ts
from pipeline_modules import Check, Estimate, Exact, Measure, Owner, Pipeline, Summarize
from typedspy.testing import FakeLM, Reply, StandIn

# -- signatures, modules and tools (at module level, so they pickle by reference) -------------


class AnswerQuestion(ts.Signature):
    """Answer the question using the tools."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


class Total(BaseModel):
    total: int
    words: int


def tally(text: str) -> Total:
    """Count the words of a text."""
    return Total(total=len(text), words=len(text.split()))


DEMO = {
    "question": "How long is the bridge?",
    "day": datetime.date(2024, 1, 2),
    "result": Estimate(low=1.5, high=2.0),
    "owner": Owner(name="Ann"),
}
MEASURED = {"result": {"_type": "Exact", "value": 3.0}, "owner": {"name": "Bo"}}


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


# -- pickling ----------------------------------------------------------------------------------


def test_lm_pickles_its_configuration_but_never_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    lm = ts.LM(
        "gpt-test",
        base_url="http://localhost:8000/v1",
        api_key="sk-very-secret-key",
        max_retries=5,
        timeout=7.5,
        temperature=0,
        extra_body={"top_k": 3},
    )
    lm.profile.reject("json_schema")
    assert lm.client.api_key == "sk-very-secret-key"  # a built client holds the key too

    data = pickle.dumps(lm)
    assert b"sk-" not in data
    assert b"very-secret" not in data

    back = pickle.loads(data)
    assert (back.model, back.defaults, back.profile.auto_mode()) == (
        "gpt-test",
        {"temperature": 0, "extra_body": {"top_k": 3}},
        "json_object",
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert back.client.api_key == "no-key"  # a local base_url: a placeholder, never the key
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    client = pickle.loads(data).client
    assert client.api_key == "sk-from-the-environment"
    assert str(client.base_url) == "http://localhost:8000/v1/"
    assert (client.max_retries, client.timeout) == (5, 7.5)


def test_lm_with_an_injected_client_unpickles_to_one_built_from_its_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    injected = openai.AsyncOpenAI(
        base_url="https://llm.test/v1",
        api_key="sk-injected-key",
        max_retries=1,
        timeout=4.0,
        http_client=httpx.AsyncClient(),  # type: ignore[arg-type]
    )
    lm = ts.LM("gpt-test", client=injected)

    data = pickle.dumps(lm)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    back = pickle.loads(data)

    assert b"sk-" not in data
    assert back.client is not injected
    assert str(back.client.base_url) == "https://llm.test/v1/"
    assert (back.client.max_retries, back.client.timeout) == (1, 4.0)
    assert back.client.api_key == "sk-env"


def test_copies_of_modules_share_their_lm() -> None:
    lm = ts.LM("gpt-test", base_url="http://localhost:8000/v1", api_key="sk-kept")
    predict = ts.Predict(Check, lm=lm)

    assert copy.deepcopy(predict).lm is lm
    assert copy.copy(lm) is lm


def test_predict_and_chain_of_thought_pickle_with_their_state() -> None:
    lm = ts.LM("gpt-test", base_url="http://localhost:8000/v1", api_key="sk-secret-1")
    predict = ts.Predict(Measure, lm=lm, demos=[DEMO], mode="json_object", temperature=0.2)
    predict.instructions = "Measure in metres."
    cot = ts.ChainOfThought("question -> answer: int", lm=lm, reasoning_description="Show work.")

    data = pickle.dumps([predict, cot])
    back_predict, back_cot = pickle.loads(data)

    assert b"sk-" not in data
    assert back_predict.instructions == "Measure in metres."
    assert back_predict.demos == [DEMO]
    assert (back_predict.mode, back_predict.lm_kwargs) == ("json_object", {"temperature": 0.2})
    assert back_predict.lm.model == "gpt-test"
    assert back_predict.dump_state() == predict.dump_state()
    assert list(back_cot.signature.output_fields) == ["reasoning", "answer"]
    assert back_cot.signature.output_fields["reasoning"].description == "Show work."
    assert list(back_cot.original_signature.output_fields) == ["answer"]
    assert back_cot.lm is back_predict.lm  # one LM, pickled once


def test_pickled_module_runs_against_a_server(
    server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = Pipeline(lm=ts.LM("gpt-test", base_url=server.base_url, api_key="sk-standin"))
    pipeline.measure.demos = [DEMO]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-standin")
    back = pickle.loads(pickle.dumps(pipeline))
    server.enqueue(json.dumps(MEASURED), json.dumps({"reasoning": "r", "summary": "three"}))

    try:
        out = back(question="How long?")
    finally:
        back.measure.lm.close()

    assert out == {"result": Exact(value=3.0), "summary": "three"}
    assert [body["model"] for body in server.requests] == ["gpt-test", "gpt-test"]
    assert [m["role"] for m in server.requests[0]["messages"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]


def test_react_agent_pickles_and_runs_with_its_function_tools(
    server: StandIn, monkeypatch: pytest.MonkeyPatch
) -> None:
    lm = ts.LM("gpt-test", base_url=server.base_url, api_key="sk-agent-key", max_retries=0)
    agent = ts.ReAct(AnswerQuestion, tools=[add, tally, ts.Predict(Summarize)], lm=lm)
    data = pickle.dumps(agent)
    assert b"sk-" not in data
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    back = pickle.loads(data)
    server.enqueue(
        Reply(
            tool_calls=[{"name": "add", "arguments": '{"a": 2, "b": 3}'}],
            finish_reason="tool_calls",
        ),
        Reply(
            tool_calls=[{"name": "finish", "arguments": '{"answer": "5"}'}],
            finish_reason="tool_calls",
        ),
    )

    try:
        pred = back(question="What is 2 + 3?")
    finally:
        back.lm.close()

    assert [t.name for t in back.tools] == ["add", "tally", "summarize"]
    assert back.tools.get("tally")(text="a b c") == {"total": 5, "words": 3}
    assert pred.answer == "5"
    assert pred.trajectory[0].calls[0].observation == "5"
    tools_sent = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert tools_sent == ["add", "tally", "summarize", "finish"]
    again = pickle.loads(pickle.dumps(pred))
    assert again.answer == "5"
    assert again.trajectory[0].calls[0].name == "add"


def test_fake_lm_pickles_with_its_script_and_requests() -> None:
    lm = FakeLM(['{"ok": true}', '{"ok": false}'])
    ts.Predict(Check, lm=lm)(claim="first")

    back = pickle.loads(pickle.dumps(lm))
    pred = ts.Predict(Check, lm=back)(claim="second")

    assert pred.ok is False
    assert back.remaining == 0
    assert [r.messages[-1]["content"] for r in back.requests] == [
        "<claim>\nfirst\n</claim>",
        "<claim>\nsecond\n</claim>",
    ]
    assert lm.remaining == 1  # the original keeps its own script


def test_prediction_of_a_run_time_signature_pickles_with_its_completion() -> None:
    sig = ts.make_signature(
        "question -> result: Exact | Estimate, note: str",
        types={"Exact": Exact, "Estimate": Estimate},
    )
    reply = '{"result": {"_type": "Estimate", "low": 1, "high": 2}, "note": "rough"}'
    pred = ts.Predict(sig, lm=FakeLM([reply]))(question="How far?")

    back = pickle.loads(pickle.dumps(pred))

    assert type(back.result) is Estimate
    assert dict(back) == {"result": Estimate(low=1, high=2), "note": "rough"}
    assert back.to_dict() == {
        "result": {"_type": "Estimate", "low": 1.0, "high": 2.0},
        "note": "rough",
    }
    assert back.completion == pred.completion
    assert back.completion is not None and back.completion.text == reply
    assert back.attempts == pred.attempts
    assert back.usage == pred.usage and back.usage.total_tokens > 0
    assert back.signature.__name__ == sig.__name__
    assert list(back.signature.output_fields) == ["result", "note"]
    # The signature came back by value: it validates like the original.
    assert back.signature.output_model.model_validate(
        {"result": {"_type": "Exact", "value": 4}, "note": "n"}
    ).result == Exact(value=4)


def test_a_worded_run_time_signature_pickles_with_its_members_docstrings() -> None:
    sig = ts.make_signature(
        "question -> result: Exact | Estimate", types={"Exact": Exact, "Estimate": Estimate}
    )
    texts = ts.signature.FieldTexts(members={"Estimate": "A range, when unsure."})
    worded = ts.signature.with_texts(sig, texts)

    back = pickle.loads(pickle.dumps(worded))

    assert ts.schema.compile_schema(back).schema["$defs"]["Estimate"]["description"] == (
        "A range, when unsure."
    )
    assert ts.signature.texts_of(back).members["Estimate"] == "A range, when unsure."


def test_chain_of_thought_prediction_pickles_with_reasoning() -> None:
    reply = '{"reasoning": "Because.", "summary": "short"}'
    pred = ts.ChainOfThought(Summarize, lm=FakeLM([reply]))(text="a long text")

    back = pickle.loads(pickle.dumps(pred))

    assert (back.reasoning, back.summary) == ("Because.", "short")
    assert list(back.signature.output_fields) == ["reasoning", "summary"]
