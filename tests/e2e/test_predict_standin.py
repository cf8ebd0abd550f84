"""Predict over a real socket: the openai SDK against the `typedspy.testing.StandIn` server.

The stand-in checks every strict schema the way api.openai.com does (a violation is a 400), so
a call that succeeds here proves the compiled schema passed that checker.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import re
import ssl
from collections import Counter
from collections.abc import Iterator
from types import ModuleType
from typing import Any, Literal

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

import typedspy as ts
from agent_models import FEEDBACK_LABEL as LABEL
from agent_models import CompleteTask, Continue, Decide, SpawnTask
from typedspy.testing import Reply, StandIn


class Step(BaseModel):
    title: str
    minutes: int = Field(ge=0)


class Plan(BaseModel):
    steps: list[Step]
    owner: str | None


class Report(ts.Signature):
    """Plan the work."""

    goal: str = ts.InputField()
    outcome: Plan | Continue | CompleteTask = ts.OutputField()
    log: list[Continue | CompleteTask] = ts.OutputField()
    tags: list[Literal["a", "b"]] = ts.OutputField()
    note: str | None = ts.OutputField()


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


def sdk_http() -> ModuleType:
    """The SDK's own HTTP library: ``httpx2`` for openai 3, ``httpx`` before."""
    client = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(client.__module__.split(".")[0])


def lm_for(server: StandIn, model: str = "gpt-4o-mini") -> ts.LM:
    return ts.LM(model, base_url=server.base_url, api_key="sk-standin", max_retries=0)


def assert_schema_valid(signature: type[ts.Signature], pred: ts.Prediction[Any]) -> None:
    jsonschema.validate(pred.to_dict(), ts.schema.compile_schema(signature, "json-schema").schema)


@pytest.mark.parametrize("mode", ["json_schema", "tools"])
def test_strict_call_returns_schema_valid_typed_union_outputs(
    server: StandIn, mode: Literal["json_schema", "tools"]
) -> None:
    async def main() -> list[ts.Prediction[Any]]:
        lm = lm_for(server)
        try:
            decide = ts.Predict(Decide, lm=lm, mode=mode)
            report = ts.Predict(Report, lm=lm, mode=mode)
            preds = [await decide.acall(task=f"task {i}") for i in range(3)]
            return [*preds, *[await report.acall(goal=f"goal {i}") for i in range(3)]]
        finally:
            await lm.aclose()

    preds = asyncio.run(main())

    assert len(server.requests) == 6  # no retry, no 400: the strict checker accepted both
    for body, signature in zip(server.requests, [Decide] * 3 + [Report] * 3, strict=True):
        strict = ts.schema.compile_schema(signature, "openai-strict")
        if mode == "json_schema":
            assert body["response_format"] == strict.response_format
        else:
            assert body["tools"][0]["function"]["parameters"] == strict.schema
            assert body["tools"][0]["function"]["strict"] is True
            assert body["parallel_tool_calls"] is False
    for pred in preds[:3]:
        assert len(pred.attempts) == 1
        assert 0 <= pred.confidence <= 1
        assert_schema_valid(Decide, pred)
    for pred in preds[3:]:
        assert len(pred.attempts) == 1
        assert all(isinstance(entry, Continue | CompleteTask) for entry in pred.log)
        assert_schema_valid(Report, pred)
    # The stand-in rotates union variants across requests: every member comes back typed.
    assert {type(p.action) for p in preds[:3]} == {SpawnTask, CompleteTask, Continue}
    assert {type(p.outcome) for p in preds[3:]} == {Plan, Continue, CompleteTask}


def test_three_sync_calls_in_a_row_on_one_lm(server: StandIn) -> None:
    lm = lm_for(server)
    predict = ts.Predict(Decide, lm=lm)
    try:
        preds = [predict(task=f"sync {i}") for i in range(3)]
        client = lm.client
        assert predict(task="fourth, same client") is not None
        assert lm.client is client
    finally:
        lm.close()

    assert lm.calls == 4
    assert len(server.requests) == 4
    assert all(isinstance(p.action, SpawnTask | CompleteTask | Continue) for p in preds)
    assert [b["messages"][-1]["content"] for b in server.requests[:3]] == [
        f"<task>\nsync {i}\n</task>" for i in range(3)
    ]


def test_200_concurrent_calls_each_use_the_lm_of_their_own_context(server: StandIn) -> None:
    models = [f"model-{k}" for k in range(4)]
    task_number = re.compile(r"<task>\ntask-(\d+)\n</task>")

    async def main() -> list[tuple[int, str, ts.Prediction[Decide]]]:
        # A few pooled connections per client: the stand-in's listen backlog is small, and
        # the point here is 200 interleaved tasks and contexts, not 200 sockets.
        tls = ssl.create_default_context()  # one CA-bundle load, not one per client (plain http)
        limits = sdk_http().Limits(max_connections=3, max_keepalive_connections=3)
        lms = [
            ts.LM(
                model,
                client=openai.AsyncOpenAI(
                    base_url=server.base_url,
                    api_key="sk-standin",
                    max_retries=0,
                    # 200 tasks share one loop: under CPU load the loop may see a finished connect
                    # only after the SDK's 5 s connect timeout; this test is about contexts.
                    timeout=120,
                    http_client=openai.DefaultAsyncHttpxClient(
                        limits=limits,
                        verify=tls,
                    ),
                ),
            )
            for model in models
        ]
        predict = ts.Predict(Decide)  # no lm=: each task's context decides

        async def one(i: int) -> tuple[int, str, ts.Prediction[Decide]]:
            lm = lms[(i * 7) % 4]
            with ts.context(lm=lm):
                await asyncio.sleep(0)
                pred = await predict.acall(task=f"task-{i}")
                await asyncio.sleep(0)
                assert ts.settings.get_settings().lm is lm  # still this task's LM after the awaits
                return i, lm.model, pred

        try:
            return await asyncio.gather(*(one(i) for i in range(200)))
        finally:
            for lm in lms:
                await lm.client.close()

    before = ts.settings.get_settings().lm
    results = asyncio.run(main())

    assert ts.settings.get_settings().lm is before
    assert len(results) == 200 and len(server.requests) == 200
    for i, model, pred in results:
        assert model == models[(i * 7) % 4]
        assert pred.completion is not None and pred.completion.model == model
        assert isinstance(pred.action, SpawnTask | CompleteTask | Continue)
    seen: dict[int, str] = {}
    for body in server.requests:
        match = task_number.search(body["messages"][-1]["content"])
        assert match is not None
        seen[int(match.group(1))] = body["model"]
    assert seen == {i: models[(i * 7) % 4] for i in range(200)}
    assert Counter(body["model"] for body in server.requests) == dict.fromkeys(models, 50)


def test_auto_falls_back_over_a_real_socket(caplog: pytest.LogCaptureFixture) -> None:
    with StandIn(supports_json_schema=False) as server:
        lm = lm_for(server)
        predict = ts.Predict(Decide, lm=lm, max_retries=0)
        try:
            with caplog.at_level(logging.WARNING, logger="typedspy"):
                predict.try_call(task="first")
            first_call = list(server.requests)
            reply = '{"action": {"_type": "Continue", "reason": "fell back"}, "confidence": 0.5}'
            server.enqueue(reply)
            pred = predict(task="second")
        finally:
            lm.close()

    assert [b["response_format"]["type"] for b in first_call] == ["json_schema", "json_object"]
    assert any("JSON" in m["content"] for m in first_call[1]["messages"])
    assert lm.profile.auto_mode() == "json_object"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "falling back to json_object" in warnings[0]
    assert len(server.requests) == 3
    assert server.requests[2]["response_format"] == {"type": "json_object"}
    assert pred.action == Continue(reason="fell back")
    assert pred.confidence == 0.5


def test_scripted_invalid_then_valid_reply_is_retried_over_http(server: StandIn) -> None:
    invalid = '{"action": {"_type": "SpawnTask", "description": "x", "priority": "urgent"}}'
    valid = (
        '{"action": {"_type": "CompleteTask", "task_id": "T-1", "result": "done"}, "confidence": 1}'
    )
    server.enqueue(Reply(content=invalid), Reply(content=valid))
    lm = lm_for(server)
    try:
        pred = ts.Predict(Decide, lm=lm)(task="Ship it")
    finally:
        lm.close()

    first, second = server.requests
    assert len(first["messages"]) == 2 and len(second["messages"]) == 4
    assert second["messages"][2] == {"role": "assistant", "content": invalid}
    feedback = second["messages"][3]["content"]
    assert feedback.startswith(LABEL)
    assert "- action.priority: " in feedback and "- confidence: Field required" in feedback
    assert pred.action == CompleteTask(task_id="T-1", result="done")
    assert pred.confidence == 1.0
    assert [a.raw for a in pred.attempts] == [invalid, valid]
    assert pred.usage.total_tokens == sum(a.usage.total_tokens for a in pred.attempts) > 0


def test_refusal_over_http_is_not_retried(server: StandIn) -> None:
    server.enqueue(Reply(refusal="I can't help with that."))
    lm = lm_for(server)
    try:
        with pytest.raises(ts.errors.RefusalError) as caught:
            ts.Predict(Decide, lm=lm, max_retries=2)(task="Something harmful")
    finally:
        lm.close()

    assert caught.value.refusal == "I can't help with that."
    assert len(server.requests) == 1
