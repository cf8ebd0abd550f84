"""``mode="think_then_format"`` at the wire: a free answer, then the strict schema (ADR-086).

Every test runs against the stand-in over a real socket and reads what it received: the first
request carries no ``response_format``, the second the strict schema and the first's answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

import typedspy as ts
from agent_models import FEEDBACK_LABEL, Decide, SpawnTask
from typedspy.cache import MemoryCache
from typedspy.errors import OutputDecodeError, OutputValidationError, TruncatedOutputError
from typedspy.limits import Budget
from typedspy.pipeline import last_exchanges
from typedspy.prediction import Usage
from typedspy.streaming import PartialPrediction, RetryStarted
from typedspy.testing import Reply, StandIn

DRAFT = "Spawn a task: cut the release branch today. It is urgent, so high priority. Sure: 0.8."
SPAWN = {"_type": "SpawnTask", "description": "cut the release branch today", "priority": "high"}
GOOD = json.dumps({"action": SPAWN, "confidence": 0.8})
BAD = json.dumps({"action": {**SPAWN, "priority": "urgent"}, "confidence": 0.8})
WRITE = (
    "Now give the answer you wrote above as the output asked for: the same values, nothing "
    "added, nothing else."
)


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    model = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="sk-standin", max_retries=0)
    yield model
    model.close()


def usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def test_the_first_request_is_free_and_the_second_formats_its_answer(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(DRAFT, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    pred = predict(task="Ship the release")

    assert pred.outputs.action == SpawnTask(
        description="cut the release branch today", priority="high"
    )
    assert pred.confidence == 0.8
    assert pred.free_answer == DRAFT
    first, second = server.requests
    assert "response_format" not in first and "tools" not in first
    system = first["messages"][0]["content"]
    assert system.startswith("Decide the agent's next action.")
    assert "- action (SpawnTask | CompleteTask | Continue)" in system
    assert "JSON" not in system and "schema" not in system  # no format asked
    assert first["messages"][-1] == {"role": "user", "content": "<task>\nShip the release\n</task>"}
    assert second["response_format"]["type"] == "json_schema"
    assert second["response_format"]["json_schema"]["strict"] is True
    assert second["messages"][-2:] == [
        {"role": "assistant", "content": DRAFT},
        {"role": "user", "content": WRITE},
    ]
    assert second["messages"][-3] == first["messages"][-1]  # the inputs, then the draft
    assert [a.raw for a in pred.attempts] == [DRAFT, GOOD]


def test_a_validation_failure_retries_only_the_second_request(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, BAD, GOOD)
    pred = ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")

    assert pred.action.priority == "high"
    assert len(server.requests) == 3
    draft, failed, retried = server.requests
    assert "response_format" not in draft
    assert retried["response_format"] == failed["response_format"]
    assert retried["messages"][: len(failed["messages"])] == failed["messages"]
    assert retried["messages"][-2] == {"role": "assistant", "content": BAD}
    feedback = retried["messages"][-1]["content"]
    assert feedback.startswith(FEEDBACK_LABEL) and "action.priority" in feedback
    assert [a.kind for a in pred.attempts] == [None, "not_enforced", None]  # strict: ignored
    assert pred.free_answer == DRAFT


def test_usage_sums_both_requests(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(
        Reply(content=DRAFT, usage=usage(100, 40)), Reply(content=GOOD, usage=usage(150, 20))
    )
    pred = ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")

    assert pred.usage == Usage(prompt_tokens=250, completion_tokens=60, total_tokens=310)
    assert [a.usage.total_tokens for a in pred.attempts] == [140, 170]


def test_an_output_error_carries_both_requests_and_their_usage(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(
        Reply(content=DRAFT, usage=usage(100, 40)), Reply(content=BAD, usage=usage(150, 20))
    )
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format", max_retries=0)

    with pytest.raises(OutputValidationError) as caught:
        predict(task="Ship the release")

    assert caught.value.usage.total_tokens == 310
    assert [a.raw for a in caught.value.attempts] == [DRAFT, BAD]


def test_a_budget_spent_by_the_first_request_stops_the_second_unsent(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(DRAFT, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    with ts.context(budget=Budget(requests=1)), pytest.raises(ts.BudgetExceededError) as caught:
        predict(task="Ship the release")

    assert caught.value.limit == "requests"
    assert len(server.requests) == 1
    assert "response_format" not in server.requests[0]


def test_async_calls_take_the_same_two_requests(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, BAD, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    async def main() -> ts.Prediction[Decide]:
        try:
            return await predict.acall(task="Ship the release")
        finally:
            await lm.aclose()

    pred = asyncio.run(main())

    assert pred.free_answer == DRAFT and pred.action.priority == "high"
    assert ["response_format" in r for r in server.requests] == [False, True, True]
    assert server.requests[1]["messages"][-2]["content"] == DRAFT


def test_streaming_yields_the_second_requests_partials_then_the_value(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(DRAFT, BAD, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    async def main() -> list[Any]:
        try:
            return [event async for event in predict.astream(task="Ship the release")]
        finally:
            await lm.aclose()

    events = asyncio.run(main())

    draft, failed, retried = server.requests
    assert "stream" not in draft  # the free answer is read whole
    assert failed["stream"] is True and retried["stream"] is True
    assert [e.attempt for e in events if isinstance(e, RetryStarted)] == [2]
    final = events[-1]
    assert final.free_answer == DRAFT and final.action.priority == "high"
    last = [e for e in events if isinstance(e, PartialPrediction)][-1]
    assert last.values == dict(final)


def test_the_first_request_is_capped_by_the_profiles_rule(server: StandIn) -> None:
    server.enqueue(DRAFT, GOOD)
    capped = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile="llama.cpp")
    try:
        ts.Predict(Decide, lm=capped, mode="think_then_format")(task="Ship the release")
        ts.Predict(Decide, lm=capped, mode="think_then_format", max_tokens=64)(task="again")
    finally:
        capped.close()

    assert [r.get("max_tokens") for r in server.requests] == [512, 512, 64, 64]


def test_a_cut_off_first_request_ends_the_call_before_the_second(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue(Reply(content="Let me think about this at length", finish_reason="length"))

    with pytest.raises(TruncatedOutputError) as caught:
        ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")

    assert "the draft answer" in str(caught.value)
    assert len(server.requests) == 1


def test_an_empty_first_reply_is_a_decode_error_and_nothing_more_is_sent(
    server: StandIn, lm: ts.LM
) -> None:
    server.enqueue("   ")

    with pytest.raises(OutputDecodeError) as caught:
        ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")

    assert "the draft answer was empty" in str(caught.value)
    assert len(server.requests) == 1


def test_the_reasoning_of_the_first_reply_stays_out_of_the_draft(server: StandIn) -> None:
    server.enqueue(f"<think>priorities, deadlines</think>{DRAFT}", GOOD)
    tagged = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0, profile="generic")
    try:
        pred = ts.Predict(Decide, lm=tagged, mode="think_then_format")(task="Ship the release")
    finally:
        tagged.close()

    assert pred.free_answer == DRAFT
    assert pred.attempts[0].reasoning == "priorities, deadlines"
    assert server.requests[1]["messages"][-2]["content"] == DRAFT


def test_a_refused_response_format_steps_down_without_asking_again_for_the_draft() -> None:
    with StandIn(supports_json_schema=False) as server:
        server.enqueue(DRAFT)  # scripted replies come first: the json_object reply is generated
        lm = ts.LM("gpt-4o-mini", base_url=server.base_url, api_key="k", max_retries=0)
        try:
            pred = ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")
        finally:
            lm.close()

    assert pred.free_answer == DRAFT
    formats = [r.get("response_format", {}).get("type") for r in server.requests]
    assert formats == [None, "json_schema", "json_object"]
    assert server.requests[2]["messages"][-2]["content"] == DRAFT


def test_the_cache_answers_both_requests_of_a_repeated_call(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    with ts.context(cache=MemoryCache()):
        first = predict(task="Ship the release")
        again = predict(task="Ship the release")

    assert len(server.requests) == 2
    assert again == first and again.free_answer == DRAFT


def test_history_shows_both_requests_and_render_the_first(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, GOOD)
    predict = ts.Predict(Decide, lm=lm, mode="think_then_format")

    shown = predict.render(task="Ship the release")
    assert server.requests == []
    predict(task="Ship the release")
    exchanges = last_exchanges(2)

    assert shown == server.requests[0]
    assert [e.body == r for e, r in zip(exchanges, server.requests, strict=True)] == [True, True]


def test_chain_of_thought_drafts_its_reasoning_too(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, json.dumps({"reasoning": "It is urgent.", **json.loads(GOOD)}))
    cot = ts.ChainOfThought(Decide, lm=lm, mode="think_then_format")

    pred = cot(task="Ship the release")

    assert pred.reasoning == "It is urgent." and pred.free_answer == DRAFT
    assert "- reasoning (str): Think step by step" in server.requests[0]["messages"][0]["content"]


def test_the_mode_is_a_setting_and_batch_api_files_refuse_it(lm: ts.LM, tmp_path: Any) -> None:
    with ts.context(mode="think_then_format"):
        predict = ts.Predict(Decide, lm=lm)
        with pytest.raises(ts.ConfigurationError, match="think_then_format sends two"):
            ts.batch_api.write_batch_file(predict, [{"task": "x"}], tmp_path / "in.jsonl")


class Events(ts.BaseCallback):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_attempt_start(self, call_id: str, instance: ts.lm.BaseLM, number: int) -> None:
        self.seen.append(f"attempt {number}")

    def on_lm_start(self, call_id: str, instance: ts.lm.BaseLM, request: ts.lm.LMRequest) -> None:
        self.seen.append("schema" if request.response_format else "free")

    def on_attempt_end(
        self, call_id: str, attempt: ts.prediction.Attempt | None, exception: BaseException | None
    ) -> None:
        self.seen.append(f"end {attempt.kind if attempt else None}")


def test_callbacks_and_tracing_see_each_request_as_an_attempt(server: StandIn, lm: ts.LM) -> None:
    server.enqueue(DRAFT, BAD, GOOD)
    events = Events()

    with ts.context(callbacks=[events]):
        ts.Predict(Decide, lm=lm, mode="think_then_format")(task="Ship the release")

    assert events.seen == [
        "attempt 1", "free", "end None",
        "attempt 1", "schema", "end not_enforced",
        "attempt 2", "schema", "end None",
    ]  # fmt: skip


class Write(ts.Signature):
    """Write a first draft."""

    topic: str = ts.InputField()
    draft: str = ts.OutputField()


def test_an_output_named_draft_is_still_the_output(server: StandIn, lm: ts.LM) -> None:
    server.enqueue("A short note on tides.", json.dumps({"draft": "Tides rise twice a day."}))

    pred = ts.Predict(Write, lm=lm, mode="think_then_format")(topic="tides")

    assert pred.draft == "Tides rise twice a day." == pred.outputs.draft
    assert pred.free_answer == "A short note on tides."
    assert ts.Predict(Write, lm=lm, mode="json_schema")(topic="tides").free_answer is None


class Ranked(ts.Signature):
    """Rank the release."""

    task: str = ts.InputField()
    level: Literal["low", "high"] = ts.OutputField()
    scores: list[int] = ts.OutputField()
    note: Annotated[str, Field(max_length=40)] | None = ts.OutputField()
    marks: dict[str, tuple[int, float]] = ts.OutputField()


def test_the_draft_names_each_outputs_type_and_demos_answer_in_lines(
    server: StandIn, lm: ts.LM
) -> None:
    answer = {"level": "high", "scores": [3, 1], "note": None, "marks": {"a": (1, 2.5)}}
    server.enqueue(DRAFT, json.dumps({**answer, "marks": {"a": [1, 2.5]}}))
    demos = [{"task": "Ship it", **answer}]
    ts.Predict(Ranked, lm=lm, mode="think_then_format", demos=demos)(task="Ship the release")

    system, demo_in, demo_out = server.requests[0]["messages"][:3]
    assert system["content"].splitlines()[-4:] == [
        "- level ('low' | 'high')",
        "- scores (list[int])",
        "- note (str | None)",
        "- marks (dict[str, tuple[int, float]])",
    ]
    assert demo_in == {"role": "user", "content": "<task>\nShip it\n</task>"}
    assert demo_out == {
        "role": "assistant",
        "content": 'level: high\nscores: [3,1]\nnote: null\nmarks: {"a":[1,2.5]}',
    }
