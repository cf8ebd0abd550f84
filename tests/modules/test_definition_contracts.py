"""Contracts checked when a module is built or its state set, not at the first call."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import typedspy as ts
from agent_models import Decide, SpawnTask

GOOD_DEMO = {
    "task": "Ship it",
    "action": SpawnTask(description="tag v1", priority="high"),
    "confidence": 0.9,
}


class Plain(BaseModel):
    question: str
    answer: str


def test_a_plain_pydantic_model_is_refused_with_how_to_declare_a_signature() -> None:
    with pytest.raises(ts.SchemaError, match=r"Plain is a pydantic BaseModel, not a ts.Signature"):
        ts.Predict(Plain)  # type: ignore[type-var]
    with pytest.raises(ts.SchemaError, match="Plain is a pydantic BaseModel"):
        ts.ChainOfThought(Plain)  # type: ignore[type-var]
    with pytest.raises(ts.SchemaError, match="declares no fields"):
        ts.Predict(ts.Signature)


def test_demos_are_checked_against_the_signature_when_given() -> None:
    predict = ts.Predict(Decide, demos=[GOOD_DEMO])
    assert predict.demos == [GOOD_DEMO]

    with pytest.raises(ts.ConfigurationError, match=r"Decide demo 0: unknown field\(s\) 'tsak'"):
        ts.Predict(Decide, demos=[{"tsak": "Ship it", "confidence": 0.5}])
    with pytest.raises(ts.ConfigurationError, match="Decide demo 1 shows no output"):
        ts.Predict(Decide, demos=[GOOD_DEMO, {"task": "Ship it"}])
    with pytest.raises(ts.ConfigurationError, match="Decide demo 0: field 'confidence'"):
        ts.Predict(Decide, demos=[{**GOOD_DEMO, "confidence": "very"}])
    with pytest.raises(ts.ConfigurationError, match="demos must be a list of mappings"):
        ts.Predict(Decide, demos=GOOD_DEMO)  # type: ignore[call-overload]


def test_demos_are_checked_when_assigned_and_the_old_ones_kept_on_failure() -> None:
    predict = ts.Predict(Decide, demos=[GOOD_DEMO])
    with pytest.raises(ts.ConfigurationError, match="unknown field"):
        predict.demos = [{"question": "?", "answer": "!"}]
    assert predict.demos == [GOOD_DEMO]


def test_state_of_a_same_named_signature_with_other_fields_does_not_load() -> None:
    saved = ts.Predict(ts.make_signature("question -> answer: int", name="QA")).dump_state()
    other = ts.Predict(ts.make_signature("question -> answer: str", name="QA"))

    with pytest.raises(ts.ConfigurationError, match="state saved for another QA"):
        other.load_state(saved)

    same = ts.Predict(ts.make_signature("question -> answer: int", name="QA"))
    same.load_state({**saved, "instructions": "Answer briefly."})
    assert same.instructions == "Answer briefly."


def test_state_of_a_string_signature_does_not_load_into_another() -> None:
    saved = ts.Predict("question -> answer").dump_state()
    with pytest.raises(ts.ConfigurationError, match="signature QuestionToAnswer cannot load"):
        ts.Predict("text -> summary").load_state(saved)


def test_the_fingerprint_follows_fields_and_types_not_descriptions() -> None:
    class Task(BaseModel):
        description: str

    class Other(BaseModel):
        summary: str

    def fingerprint(model: type[BaseModel]) -> str:
        sig = ts.make_signature("question -> task: Task", name="T", types={"Task": model})
        return str(ts.Predict(sig).dump_state()["fingerprint"])

    assert fingerprint(Task) == fingerprint(Task)
    assert fingerprint(Task) != fingerprint(Other)  # a field named "description" counts
    worded = ts.ChainOfThought(Decide, reasoning_description="Why, briefly.").dump_state()
    assert worded["fingerprint"] == ts.ChainOfThought(Decide).dump_state()["fingerprint"]
