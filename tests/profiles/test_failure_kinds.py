"""Typed failure kinds for what servers do silently, and the profiles' bounded remedies.

Over respx with the real openai client: what goes over the wire, and the typed outcome.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import chat_completion
from wire import BASE_URL, make_lm, sent


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)


class Describe(ts.Signature):
    """Describe the ticket."""

    ticket: str = ts.InputField()
    summary: str = ts.OutputField()
    code: str = ts.OutputField(min_length=3)


RATED = json.dumps({"score": 4})
LOOPED = '{"summary": "' + "so good! " * 40
LONG = '{"summary": "' + " ".join(f"word{i}" for i in range(300))


def reply(content: str, **kwargs: object) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(content, **kwargs))  # type: ignore[arg-type]


def cut(content: str) -> httpx.Response:
    return reply(content, finish_reason="length")


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def test_a_reply_violating_the_accepted_schema_is_not_enforced(
    llm: respx.MockRouter, caplog: pytest.LogCaptureFixture
) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[reply('{"score": 10}'), reply(RATED), reply(RATED)]
    )
    lm = make_lm()

    pred = ts.Predict(Rate, lm=lm)(ticket="x")
    ts.Predict(Rate, lm=lm)(ticket="x")

    assert [a.kind for a in pred.attempts] == ["not_enforced", None]
    assert pred.score == 4
    (record,) = [r for r in caplog.records if getattr(r, "typedspy_kind", None)]
    assert record.typedspy_kind == "not_enforced"  # type: ignore[attr-defined]
    assert "not_enforced" in lm.profile.observed
    first, retry, later = sent(route)
    assert "Your previous reply was valid JSON but failed validation" in json.dumps(retry)
    assert later["messages"] == first["messages"]  # requests do not drift with what was seen


def test_a_reply_within_the_schema_failing_local_checks_is_validation_failed(
    llm: respx.MockRouter,
) -> None:
    # minLength is not in OpenAI's strict subset: it is checked locally, not by the server.
    bad = json.dumps({"summary": "ok", "code": "x"})
    llm.post("/chat/completions").mock(
        side_effect=[reply(bad), reply(json.dumps({"summary": "ok", "code": "E42"}))]
    )

    pred = ts.Predict(Describe, lm=make_lm())(ticket="x")

    assert [a.kind for a in pred.attempts] == ["validation_failed", None]


class Node(BaseModel):
    v: int
    kids: list[Node]


class Grow(ts.Signature):
    """Grow the tree."""

    seed: str = ts.InputField()
    root: Node = ts.OutputField()


def nested(levels: int) -> str:
    node: dict[str, object] = {"v": 1, "kids": []}
    for _ in range(levels):
        node = {"v": 1, "kids": [node]}
    return json.dumps({"root": node})


@pytest.mark.parametrize(
    ("levels", "max_json_depth", "kind"),
    [(150, None, "decode_failed"), (300, 1000, "validation_failed")],
    ids=["past-the-lm-depth", "past-the-schema-checkers-stack"],
)
def test_a_reply_within_the_schema_too_deep_to_check_is_not_blamed_on_the_server(
    llm: respx.MockRouter, levels: int, max_json_depth: int | None, kind: str
) -> None:
    """Deeper than the LM reads, or than jsonschema recurses: the parser's verdict, not
    not_enforced (on main both were not_enforced, read at the default depth of 256)."""
    llm.post("/chat/completions").mock(side_effect=[reply(nested(levels)), reply(nested(2))])
    client = make_lm().client
    lm = ts.LM("gpt-4o-mini", client=client, max_json_depth=max_json_depth or 256)

    pred = ts.Predict(Grow, lm=lm)(seed="x")

    assert [a.kind for a in pred.attempts] == [kind, None]
    assert "not_enforced" not in lm.profile.observed


def test_prose_in_prompt_mode_stays_a_decode_failure(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(side_effect=[reply("Four, I think."), reply(RATED)])

    pred = ts.Predict(Rate, lm=make_lm(), mode="prompt")(ticket="x")

    assert [a.kind for a in pred.attempts] == ["decode_failed", None]


def test_a_whitespace_loop_gets_one_compact_re_ask(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(
        side_effect=[cut('{"score": ' + " " * 300), reply(RATED)]
    )
    lm = make_lm(profile="vllm")

    pred = ts.Predict(Rate, lm=lm)(ticket="x")

    assert pred.score == 4
    assert [a.kind for a in pred.attempts] == ["whitespace_loop", None]
    first, second = sent(route)
    assert len(second["messages"]) == len(first["messages"]) + 1  # the loop is not sent back
    assert "compact JSON on one line" in second["messages"][-1]["content"]
    assert "whitespace_loop" in lm.profile.observed


def test_a_complete_output_before_a_whitespace_loop_is_used(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=cut(RATED + "\n" * 200))

    pred = ts.Predict(Rate, lm=make_lm(profile="vllm"))(ticket="x")

    assert (pred.score, route.call_count) == (4, 1)


def test_without_a_remedy_a_whitespace_loop_is_a_typed_truncation(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=cut('{"score": ' + " " * 300))

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.Predict(Rate, lm=make_lm())(ticket="x")  # the openai profile has none

    assert caught.value.kind == "whitespace_loop"
    assert route.call_count == 1


def test_a_repetition_loop_gets_one_retry_with_a_frequency_penalty(
    llm: respx.MockRouter,
) -> None:
    good = json.dumps({"summary": "Printer jams.", "code": "P01"})
    route = llm.post("/chat/completions").mock(side_effect=[cut(LOOPED), reply(good)])

    pred = ts.Predict(Describe, lm=make_lm(profile="llama.cpp"))(ticket="x")

    assert pred.summary == "Printer jams."
    assert [a.kind for a in pred.attempts] == ["repetition_loop", None]
    first, second = sent(route)
    assert "frequency_penalty" not in first
    assert second["frequency_penalty"] == 1.0
    assert "keep every string short" in second["messages"][-1]["content"]
    assert LOOPED not in json.dumps(second)


def test_the_repetition_remedy_is_tried_once_per_call(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=cut(LOOPED))

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.Predict(Describe, lm=make_lm(profile="llama.cpp"), max_retries=3)(ticket="x")

    assert route.call_count == 2
    assert [a.kind for a in caught.value.attempts] == ["repetition_loop", "repetition_loop"]
    assert caught.value.kind == "repetition_loop"


def test_no_remedy_runs_without_a_retry_left(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=cut(LOOPED))

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.Predict(Describe, lm=make_lm(profile="llama.cpp"), max_retries=0)(ticket="x")

    assert (route.call_count, caught.value.kind) == (1, "repetition_loop")


def test_a_genuinely_long_answer_is_truncated_and_not_retried(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=cut(LONG))

    with pytest.raises(ts.errors.TruncatedOutputError) as caught:
        ts.Predict(Describe, lm=make_lm(profile="llama.cpp"))(ticket="x")

    assert (route.call_count, caught.value.kind) == (1, "truncated")
    assert caught.value.raw == LONG


def test_reasoning_content_is_surfaced_and_not_parsed(llm: respx.MockRouter) -> None:
    llm.post("/chat/completions").mock(
        return_value=reply(RATED, reasoning_content='Maybe {"score": 1}? No: 4.')
    )

    pred = ts.Predict(Rate, lm=make_lm())(ticket="x")

    assert pred.score == 4
    assert pred.reasoning_content == 'Maybe {"score": 1}? No: 4.'
    assert pred.attempts[0].reasoning == pred.reasoning_content


def test_reasoning_left_in_the_content_is_split_off_by_the_profile(
    llm: respx.MockRouter,
) -> None:
    llm.post("/chat/completions").mock(
        return_value=reply('<think>Is it {"score": 1}? No.</think>\n' + RATED)
    )

    pred = ts.Predict(Rate, lm=make_lm(profile="llama.cpp"))(ticket="x")

    assert (pred.score, pred.reasoning_content) == (4, 'Is it {"score": 1}? No.')
    assert pred.raw == RATED
