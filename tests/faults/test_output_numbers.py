"""Issue 21 (left from issue 10's audit): a number in the model's output with more digits than
Python converts (``sys.get_int_max_str_digits()``, 4,300 by default: ``max_number_digits``).

The error names the field path and the limit, wherever the number is (a top-level field, a
union member's field, a list item) and however the output is written (bare, fenced, in prose,
leniently, in marker sections, streamed); it is fed back to the model, then raised as
`ts.errors.OutputDecodeError`. It was reported as ``action: Field required; confidence: Field
required``: the region holding the number failed, and the ``action`` object nested in it was
taken for the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import typedspy as ts
from agent_models import Continue, Decide
from typedspy.parse import PartialParser
from typedspy.testing import StandIn

HUGE = "7" * 5_000
CONTINUE = '{"_type": "Continue", "reason": "wait"}'
LIMIT = "more than 4300 digits"


def spawn(description: str) -> str:
    return '{"_type": "SpawnTask", "description": ' + description + ', "priority": "low"}'


# Output text, and the path of the field holding the number.
OUTPUTS: dict[str, tuple[str, tuple[str | int, ...]]] = {
    "top_level": ('{"action": ' + CONTINUE + ', "confidence": 1' + HUGE + "}", ("confidence",)),
    "negative": ('{"action": ' + CONTINUE + ', "confidence": -' + HUGE + "}", ("confidence",)),
    "in_a_member": (
        '{"action": ' + spawn(HUGE) + ', "confidence": 0.5}',
        ("action", "description"),
    ),
    "fenced": (
        'Here:\n```json\n{"action": ' + CONTINUE + ', "confidence": ' + HUGE + "}\n```",
        ("confidence",),
    ),
    "in_prose": (
        'Sure. {"action": ' + CONTINUE + ', "confidence": ' + HUGE + "} Done.",
        ("confidence",),
    ),
    "lenient": (
        "{'action': {'_type': 'Continue', 'reason': 'wait'}, confidence: " + HUGE + ",}",
        ("confidence",),
    ),
    "after_a_draft": (
        'Draft: {"action": {"reason": 1}} Final: {"action": '
        + CONTINUE
        + ', "confidence": '
        + HUGE
        + "}",
        ("confidence",),
    ),
    "markers": (
        "[[ ## action ## ]]\n" + CONTINUE + "\n\n[[ ## confidence ## ]]\n" + HUGE,
        ("confidence",),
    ),
}


def assert_names_the_number(
    errors: tuple[ts.errors.FieldError, ...], path: tuple[str | int, ...]
) -> None:
    assert [error.path for error in errors] == [path]
    assert LIMIT in errors[0].message and "max_number_digits" in errors[0].message
    assert "Field required" not in errors[0].message


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_parse_outputs_names_the_field_and_the_limit(name: str) -> None:
    text, path = OUTPUTS[name]
    result = ts.parse.parse_outputs(Decide, text)
    assert result.kind == "decode_failed"
    assert_names_the_number(result.errors, path)


def test_a_list_item_is_named_by_its_index() -> None:
    class Scores(ts.Signature):
        """Score."""

        question: str = ts.InputField()
        scores: list[int] = ts.OutputField()

    result = ts.parse.parse_outputs(Scores, '{"scores": [1, 2, ' + HUGE + "]}")
    assert_names_the_number(result.errors, ("scores", 2))


def test_a_huge_number_anywhere_never_raises() -> None:
    for text in ("[" + HUGE + "]", HUGE, '{"action": ' + HUGE, "{'a': [{'b': " + HUGE + "}]}"):
        result = ts.parse.parse_outputs(Decide, text)
        assert not result.ok


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


GOOD = json.dumps({"action": {"_type": "Continue", "reason": "wait"}, "confidence": 0.5})


@pytest.mark.parametrize("stream", [False, True], ids=["completed", "streamed"])
def test_predict_feeds_the_field_and_the_limit_back_then_raises_them(
    server: StandIn, stream: bool
) -> None:
    text, path = OUTPUTS["top_level"]
    server.enqueue(text, text)
    lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0)
    partials: list[Any] = []
    try:
        with ts.context(lm=lm, max_retries=1), pytest.raises(ts.errors.OutputDecodeError) as caught:
            if stream:
                for event in ts.Predict(Decide).stream(task="t"):
                    partials.append(event)
            else:
                ts.Predict(Decide)(task="t")
    finally:
        lm.close()
    assert len(server.requests) == 2
    feedback = server.requests[1]["messages"][-1]["content"]
    assert "confidence" in feedback and LIMIT in feedback and "max_number_digits" in feedback
    assert "Field required" not in feedback
    for attempt in caught.value.attempts:
        assert_names_the_number(tuple(attempt.errors), path)
    assert "max_number_digits" in str(caught.value)
    assert not any(getattr(p, "confidence", None) for p in partials)


def test_predict_takes_the_corrected_answer(server: StandIn) -> None:
    server.enqueue(OUTPUTS["in_a_member"][0], GOOD)
    lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=0)
    try:
        with ts.context(lm=lm, max_retries=1):
            prediction = ts.Predict(Decide)(task="t")
    finally:
        lm.close()
    assert prediction.confidence == 0.5
    feedback = server.requests[1]["messages"][-1]["content"]
    assert "action/description" in feedback or "action.description" in feedback


def test_the_partial_parser_never_raises_and_drops_the_number_once_past_the_limit() -> None:
    text, _ = OUTPUTS["top_level"]
    parser = PartialParser(Decide)
    for start in range(0, len(text), 97):
        parser.feed(text[start : start + 97])
        shown = parser.values().get("confidence")
        assert shown is None or len(str(shown)) <= 4_300  # digits still arriving are shown
    parser.flush()
    assert "confidence" not in parser.values()  # the final validation reports it
    assert parser.values()["action"] == Continue(reason="wait")
