"""Automatic `_type` tags: dispatch on `_type`, structural fallback, names."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from typedspy._types import FieldError
from typedspy.parse import field_errors
from typedspy.schema import compile_schema
from typedspy.signature import OutputField, Signature


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class CompleteTask(BaseModel):
    task_id: str
    result: str


class Continue(BaseModel):
    reason: str


class Decide(Signature):
    """Decide the agent's next action."""

    action: SpawnTask | CompleteTask | Continue = OutputField()


class Tasks:
    class Created(BaseModel):
        task_id: str


class Events:
    class Created(BaseModel):
        event_id: str


class Namespaced(Signature):
    item: Tasks.Created | Events.Created = OutputField()


def _action(data: dict[str, Any]) -> Any:
    return Decide.output_model.model_validate({"action": data}).action


def _errors(model: type[BaseModel], data: dict[str, Any]) -> list[FieldError]:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    return field_errors(exc.value)


# -- DSPy.rb ADR-003 shapes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"_type": "SpawnTask", "description": "ship", "priority": "high"},
            SpawnTask(description="ship", priority="high"),
        ),
        (
            {"_type": "CompleteTask", "task_id": "7", "result": "ok"},
            CompleteTask(task_id="7", result="ok"),
        ),
        ({"_type": "Continue", "reason": "wait"}, Continue(reason="wait")),
    ],
)
def test_type_present_dispatches_to_the_users_class(
    data: dict[str, Any], expected: BaseModel
) -> None:
    value = _action(data)
    assert type(value) is type(expected)
    assert value == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"description": "ship", "priority": "low"}, SpawnTask(description="ship", priority="low")),
        ({"task_id": "7", "result": "ok"}, CompleteTask(task_id="7", result="ok")),
        ({"reason": "wait"}, Continue(reason="wait")),
    ],
)
def test_type_missing_structural_fallback(data: dict[str, Any], expected: BaseModel) -> None:
    value = _action(data)
    assert type(value) is type(expected)
    assert value == expected


def test_type_wins_over_structure() -> None:
    # The keys fit SpawnTask, but _type says Continue: Continue is validated (and fails).
    errors = _errors(
        Decide.output_model,
        {"action": {"_type": "Continue", "description": "d", "priority": "low"}},
    )
    assert errors == [FieldError(("action", "reason"), "Field required")]


def test_match_statement_works_on_parsed_values() -> None:
    match _action({"_type": "SpawnTask", "description": "x", "priority": "high"}):
        case SpawnTask(priority="high"):
            matched = "spawn-high"
        case _:
            matched = "other"
    assert matched == "spawn-high"


class Small(BaseModel):
    x: int


class Big(BaseModel):
    x: int
    y: int = 0


class Twin(BaseModel):
    x: int


class TieBreak(Signature):
    first: Small | Big | Twin = OutputField()
    second: Twin | Small = OutputField()


def test_tie_break_by_most_given_keys() -> None:
    value = TieBreak.output_model.model_validate({"first": {"x": 1, "y": 2}, "second": {"x": 1}})
    assert type(value.first) is Big
    assert value.first == Big(x=1, y=2)


def test_tie_break_then_declaration_order() -> None:
    value = TieBreak.output_model.model_validate({"first": {"x": 1}, "second": {"x": 1}})
    assert type(value.first) is Small
    assert type(value.second) is Twin


class IntX(BaseModel):
    x: int


class StrX(BaseModel):
    x: str


class Stop(BaseModel):
    pass


class Go(BaseModel):
    speed: int


class Fallbacks(Signature):
    same_keys: IntX | StrX = OutputField()
    with_empty: Go | Stop = OutputField()


def test_structural_tie_skips_members_that_do_not_validate() -> None:
    data = {"same_keys": {"x": "text"}, "with_empty": {"speed": 1}}
    value = Fallbacks.output_model.model_validate(data)
    assert type(value.same_keys) is StrX
    data = {"same_keys": {"x": 3}, "with_empty": {"speed": 1}}
    assert type(Fallbacks.output_model.model_validate(data).same_keys) is IntX


def test_most_keys_member_reports_its_errors() -> None:
    # "y" only belongs to Big: Big is meant, so its error is reported (Small would drop y).
    errors = _errors(TieBreak.output_model, {"first": {"x": 1, "y": "no"}, "second": {"x": 2}})
    assert [e.path for e in errors] == [("first", "y")]


def test_empty_member_does_not_swallow_a_broken_sibling() -> None:
    errors = _errors(Fallbacks.output_model, {"same_keys": {"x": 1}, "with_empty": {"speed": "x"}})
    assert [e.path for e in errors] == [("with_empty", "speed")]
    value = Fallbacks.output_model.model_validate({"same_keys": {"x": 1}, "with_empty": {}})
    assert value.with_empty == Stop()
    tagged = {"same_keys": {"x": 1}, "with_empty": {"_type": "Stop"}}
    assert type(Fallbacks.output_model.model_validate(tagged).with_empty) is Stop


def test_unique_required_match_reports_that_members_errors() -> None:
    # Only SpawnTask has all its required keys: its own error is reported, at its own path.
    errors = _errors(Decide.output_model, {"action": {"description": "d", "priority": "urgent"}})
    assert [e.path for e in errors] == [("action", "priority")]
    assert errors[0].message.startswith("Input should be 'low' or 'high'")


def test_nothing_matches_lists_each_members_complaint() -> None:
    errors = _errors(Decide.output_model, {"action": {"unrelated": 1}})
    assert len(errors) == 1
    assert errors[0].path == ("action",)
    for name in ("SpawnTask", "CompleteTask", "Continue"):
        assert name in errors[0].message
    assert "reason: Field required" in errors[0].message


def test_non_object_value_for_union() -> None:
    errors = _errors(Decide.output_model, {"action": 42})
    assert errors == [
        FieldError(
            ("action",), "expected an object with _type one of: SpawnTask, CompleteTask, Continue"
        )
    ]


def test_double_encoded_member_is_decoded_once() -> None:
    assert _action('{"_type": "Continue", "reason": "r"}') == Continue(reason="r")  # type: ignore[arg-type]


def test_model_instances_are_accepted() -> None:
    given = CompleteTask(task_id="1", result="r")
    assert _action(given) == given  # type: ignore[arg-type]


# -- names ---------------------------------------------------------------------------------


def test_namespaced_consts_are_qualified() -> None:
    schema = compile_schema(Namespaced).schema
    consts = sorted(d["properties"]["_type"]["const"] for d in schema["$defs"].values())
    assert consts == ["Events.Created", "Tasks.Created"]
    branches = schema["properties"]["item"]["anyOf"]
    assert [b["$ref"] for b in branches] == ["#/$defs/Tasks.Created", "#/$defs/Events.Created"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("Tasks.Created", Tasks.Created),
        ("Events.Created", Events.Created),
        ("tasks::created", Tasks.Created),
        ("Events::Created", Events.Created),
        ("App.Events.Created", Events.Created),
        ("EVENTS.CREATED", Events.Created),
    ],
)
def test_namespaced_names_parse_back(given: str, expected: type[BaseModel]) -> None:
    data = {"item": {"_type": given, "task_id": "t", "event_id": "e"}}
    value = Namespaced.output_model.model_validate(data).item
    assert type(value) is expected


@pytest.mark.parametrize("given", ["Created", "AgentActions.Created", "created"])
def test_ambiguous_or_unknown_tail_is_an_error(given: str) -> None:
    errors = _errors(Namespaced.output_model, {"item": {"_type": given, "task_id": "t"}})
    assert errors == [
        FieldError(
            ("item",),
            f'_type "{given}" names no member of this union '
            "(expected one of: Tasks.Created, Events.Created)",
        )
    ]


@pytest.mark.parametrize(
    "given",
    ["AgentActions.SpawnTask", "AgentActions::SpawnTask", "spawn_task", "spawntask", "SPAWN_TASK"],
)
def test_flexible_names_resolve_when_unambiguous(given: str) -> None:
    value = _action({"_type": given, "description": "d", "priority": "low"})
    assert value == SpawnTask(description="d", priority="low")
    assert type(value) is SpawnTask


def test_unknown_type_is_one_error_at_union_path() -> None:
    errors = _errors(Decide.output_model, {"action": {"_type": "Explode", "reason": "r"}})
    assert errors == [
        FieldError(
            ("action",),
            '_type "Explode" names no member of this union '
            "(expected one of: SpawnTask, CompleteTask, Continue)",
        )
    ]


def test_non_string_type_is_an_error() -> None:
    errors = _errors(Decide.output_model, {"action": {"_type": 3, "reason": "r"}})
    assert len(errors) == 1
    assert errors[0].path == ("action",)
    assert "names no member" in errors[0].message


def test_error_inside_a_member_has_no_variant_segment() -> None:
    errors = _errors(
        Decide.output_model,
        {"action": {"_type": "SpawnTask", "description": "d", "priority": "urgent"}},
    )
    assert [e.path for e in errors] == [("action", "priority")]
    assert errors[0].message.startswith("Input should be 'low' or 'high'")


def test_a_structural_tie_that_no_member_validates_lists_each_complaint() -> None:
    errors = _errors(Fallbacks.output_model, {"same_keys": {"x": [1]}, "with_empty": {}})
    assert errors == [
        FieldError(
            ("same_keys",),
            "no member of the union matched (IntX: x: Input should be a valid integer | "
            "StrX: x: Input should be a valid string)",
        )
    ]


def test_invented_type_names_past_the_resolver_cache_still_resolve() -> None:
    """The cache of names a model wrote is bounded: past it, names still resolve."""
    for i in range(300):
        errors = _errors(Decide.output_model, {"action": {"_type": f"Nope{i}", "reason": "r"}})
        assert "names no member" in errors[0].message
    assert _action({"_type": "continue", "reason": "r"}) == Continue(reason="r")


class Roomy(BaseModel):
    """A member rewritten (it holds a union) that keeps extra keys."""

    model_config = ConfigDict(extra="allow")
    step: IntX | StrX


class Roomier(Signature):
    value: Roomy | Stop = OutputField()
    either: IntX | Annotated[int | dict[str, int], Field(description="n")] = OutputField()


def test_a_rewritten_member_keeps_its_extra_keys() -> None:
    data = {"_type": "Roomy", "step": {"_type": "IntX", "x": 1}, "note": "kept"}
    value = Roomier.output_model.model_validate({"value": data, "either": {"k": 1}})
    assert type(value.value) is Roomy
    assert value.value.step == IntX(x=1)
    assert value.value.__pydantic_extra__ == {"note": "kept"}
    assert value.either == {"k": 1}  # an object is the dict member's, not a structural IntX
