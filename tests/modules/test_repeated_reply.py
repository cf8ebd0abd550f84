"""Issue 23, item 4: a failed reply repeated byte for byte changes what the next attempt sends,
or ends the call (``repeated_reply``) instead of paying for the same answer again."""

from __future__ import annotations

import json

import pytest

import typedspy as ts
from typedspy.retry import FEEDBACK_LABEL
from typedspy.testing import StandIn

WRONG = json.dumps({"month": "2024-05-01T00:00:00"})  # a datetime where YYYY-MM is asked


class When(ts.Signature):
    """When did it happen?"""

    text: str = ts.InputField()
    month: str = ts.OutputField(pattern=r"^\d{4}-\d{2}$")


def run(
    profile: str | ts.Profile, *replies: str
) -> tuple[BaseException | ts.Prediction[When], StandIn]:
    with StandIn() as server:
        server.enqueue(*replies)
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile)
        try:
            outcome: BaseException | ts.Prediction[When] = ts.Predict(When, lm=lm)(text="May")
        except ts.TypedspyError as exc:
            outcome = exc
        finally:
            lm.close()
    return outcome, server


def test_a_local_profile_samples_after_a_repeat_and_ends_at_the_next() -> None:
    outcome, server = run("llama.cpp", WRONG, WRONG, WRONG)
    assert isinstance(outcome, ts.OutputError)
    assert [a.kind for a in outcome.attempts][-1] == "repeated_reply"
    temperatures = [body.get("temperature") for body in server.requests]
    assert temperatures == [None, None, 0.7]  # the third attempt samples


def test_sampling_after_a_repeat_can_fix_the_answer() -> None:
    outcome, server = run("llama.cpp", WRONG, WRONG, json.dumps({"month": "2024-05"}))
    assert isinstance(outcome, ts.Prediction) and outcome.month == "2024-05"
    assert server.requests[-1]["temperature"] == 0.7


@pytest.mark.parametrize("profile", ["openai", "azure"])
def test_a_hosted_profile_ends_the_call_at_the_first_repeat(profile: str) -> None:
    outcome, server = run(profile, WRONG, WRONG, WRONG)
    assert isinstance(outcome, ts.errors.OutputValidationError)
    assert len(server.requests) == 2  # the third, paid for the same answer, is never sent
    assert [a.kind for a in outcome.attempts] == ["not_enforced", "repeated_reply"]


def test_different_wrong_replies_are_retried_as_before() -> None:
    other = json.dumps({"month": "May 2024"})
    outcome, server = run("openai", WRONG, other, json.dumps({"month": "2024-05"}))
    assert isinstance(outcome, ts.Prediction) and len(server.requests) == 3


def test_a_profiles_note_for_a_repeat_is_sent_after_the_feedback() -> None:
    note = "Write the month as YYYY-MM, nothing else."
    remedy = ts.profiles.LoopRemedy(note=note, params={"temperature": 0.5})
    profile = ts.Profile(name="noted", on_repeated_reply=remedy)
    outcome, server = run(profile, WRONG, WRONG, json.dumps({"month": "2024-05"}))
    assert isinstance(outcome, ts.Prediction) and outcome.month == "2024-05"
    last = server.requests[-1]
    assert last["temperature"] == 0.5
    assert last["messages"][-1] == {"role": "user", "content": f"{FEEDBACK_LABEL}\n{note}"}
