"""Contracts checked when a module is built or its state set, not at the first call."""

from __future__ import annotations

from typing import Any

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


def test_an_output_that_is_no_type_is_refused() -> None:
    with pytest.raises(ts.SchemaError, match=r"output= takes a type such as list\[Item\]"):
        ts.Predict("question", output=3)  # type: ignore[call-overload]


@pytest.mark.parametrize("given", [42, None, int], ids=["number", "none", "class"])
def test_a_value_that_is_no_signature_is_refused_naming_it(given: object) -> None:
    with pytest.raises(
        ts.SchemaError, match=r"expected a ts\.Signature subclass or a string"
    ) as caught:
        ts.Predict(given)  # type: ignore[call-overload]
    assert str(caught.value).endswith(f"not {given!r}")


def test_demos_are_checked_against_the_signature_when_given() -> None:
    predict = ts.Predict(Decide, demos=[GOOD_DEMO])
    assert predict.demos == [GOOD_DEMO]

    with pytest.raises(ts.ConfigurationError, match="Decide demo 0: tsak: unknown field"):
        ts.Predict(Decide, demos=[{"tsak": "Ship it", "confidence": 0.5}])
    with pytest.raises(ts.ConfigurationError, match="Decide demo 1: shows no output"):
        ts.Predict(Decide, demos=[GOOD_DEMO, {"task": "Ship it"}])
    with pytest.raises(ts.ConfigurationError, match="Decide demo 0: confidence: Input should be"):
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

    with pytest.raises(ts.ConfigurationError, match="fingerprint: saved for another QA"):
        other.load_state(saved)

    same = ts.Predict(ts.make_signature("question -> answer: int", name="QA"))
    saved["predictors"]["self"]["instructions"] = "Answer briefly."
    same.load_state(saved)
    assert same.instructions == "Answer briefly."


def test_state_of_a_string_signature_does_not_load_into_another() -> None:
    saved = ts.Predict("question -> answer").dump_state()
    with pytest.raises(
        ts.errors.SavedStateError, match="for signature QuestionToAnswer, this predic"
    ):
        ts.Predict("text -> summary").load_state(saved)


def test_the_fingerprint_follows_fields_and_types_not_descriptions() -> None:
    class Task(BaseModel):
        description: str

    class Other(BaseModel):
        summary: str

    def fingerprint(model: type[BaseModel]) -> str:
        sig = ts.make_signature("question -> task: Task", name="T", types={"Task": model})
        return str(ts.Predict(sig).dump_state()["predictors"]["self"]["fingerprint"])

    assert fingerprint(Task) == fingerprint(Task)
    assert fingerprint(Task) != fingerprint(Other)  # a field named "description" counts
    worded = ts.ChainOfThought(Decide, reasoning_description="Why, briefly.").dump_state()
    plain = ts.ChainOfThought(Decide).dump_state()
    assert worded["predictors"]["self"]["fingerprint"] == plain["predictors"]["self"]["fingerprint"]


@pytest.mark.parametrize("name", ["history", "stream", "resume_state"])
def test_inputs_named_like_call_keywords_are_refused_at_definition(name: str) -> None:
    with pytest.raises(ts.SchemaError, match=rf"\.{name}: '{name}' is a keyword") as info:
        ts.make_signature(f"{name} -> answer")
    assert info.value.path == (name,)


def test_pydantic_names_are_refused_at_class_creation_naming_the_field() -> None:
    with pytest.raises(ts.SchemaError, match=r"Config\.model_config: the name 'model_config'"):

        class Config(ts.Signature):
            model_config: str = ts.InputField()  # type: ignore[assignment,misc]
            answer: str = ts.OutputField()

    with pytest.raises(ts.SchemaError, match=r"\.model_dump: the name 'model_dump'"):
        ts.make_signature("model_dump -> answer")


def test_local_models_still_resolve_in_signatures_defined_in_functions() -> None:
    class Local(BaseModel):
        value: int

    class UsesLocal(ts.Signature):
        question: str = ts.InputField()
        out: Local = ts.OutputField()

    parsed = UsesLocal.output_model.model_validate({"out": {"value": 1}})
    assert parsed.model_dump() == {"out": {"value": 1}}


def test_chain_of_thought_refuses_a_field_it_would_replace() -> None:
    with pytest.raises(ts.SchemaError, match=r"\.reasoning: ChainOfThought adds its own"):
        ts.ChainOfThought("question -> reasoning, answer")
    with pytest.raises(ts.SchemaError, match=r"\.reasoning: ChainOfThought"):
        ts.ChainOfThought("reasoning -> answer")


@pytest.mark.parametrize("name", ["trajectory", "finished", "steps"])
def test_react_refuses_an_output_its_prediction_would_shadow(name: str) -> None:
    with pytest.raises(ts.SchemaError, match=rf"\.{name}: ReAct's prediction carries its own"):
        ts.ReAct(f"question -> {name}", tools=[])


def test_compile_schema_of_a_bare_union_says_to_use_an_output_field() -> None:
    with pytest.raises(ts.SchemaError, match="put this type in an output field"):
        ts.schema.compile_schema(Plain | Decide)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ts.Predict(Decide, mode="json"), "unknown mode 'json'; use one of"),  # type: ignore[arg-type]
        (lambda: ts.Predict(Decide, demos=[5]), "Decide demo 0 must be a mapping, not int"),  # type: ignore[list-item]
    ],
    ids=["mode", "demo"],
)
def test_a_predictor_refuses_a_bad_mode_or_demo_when_made(make: Any, message: str) -> None:
    with pytest.raises(ts.ConfigurationError, match=message):
        make()


def test_a_mode_assigned_later_is_checked_at_the_call_before_anything_is_sent() -> None:
    predict = ts.Predict(Decide, lm=ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key="k"))
    predict.mode = "json"  # type: ignore[assignment]
    with pytest.raises(ts.ConfigurationError, match="unknown mode 'json'"):
        predict(task="Ship it")


@pytest.mark.parametrize(
    "make",
    [lambda: ts.Predict(Decide), lambda: ts.ReAct(Decide, tools=[])],
    ids=["predict", "react"],
)
def test_a_call_without_any_lm_says_how_to_configure_one(make: Any) -> None:
    with pytest.raises(ts.ConfigurationError, match=r"no language model configured: pass lm="):
        make()(task="Ship it")
