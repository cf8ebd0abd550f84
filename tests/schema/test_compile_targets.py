"""The `json-schema` target, the prompt `shape`, and golden snapshots of the agent signature."""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, WithJsonSchema
from strict_walkers import forbidden_keyword, resolve

from typedspy.schema import compile_schema
from typedspy.signature import InputField, OutputField, Signature, make_signature

SNAPSHOTS = Path(__file__).parent / "snapshots"


# The DSPy.rb ADR-003 agent, as DESIGN.md writes it.
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

    task: str = InputField(description="what the user asked for")
    action: SpawnTask | CompleteTask | Continue = OutputField()
    confidence: float = OutputField(ge=0, le=1)


class Level(enum.Enum):
    LOW = "low"
    HIGH = "high"


class Sub(BaseModel):
    x: int = 3


class Rich(Signature):
    """Constraints that only full JSON Schema can carry."""

    name: str = OutputField(min_length=2, max_length=5, description="a short name")
    tags: set[str] = OutputField()
    pair: tuple[int, str] = OutputField()
    count: int = OutputField(default=7, ge=0)
    level: Level = OutputField()
    mode: Literal["fast", "slow"] = OutputField()
    action: SpawnTask | Continue = OutputField()
    sub: Sub = OutputField(description="nested")
    counts: dict[str, int] = OutputField()


def _snapshot_text(target: str) -> str:
    compiled = compile_schema(Decide, target=target)
    data = {"name": compiled.name, "strict": compiled.strict, "schema": compiled.schema}
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("target", ["openai-strict", "json-schema"])
def test_agent_signature_matches_golden_snapshot(target: str) -> None:
    path = SNAPSHOTS / f"decide_{target}.json"
    expected = path.read_text(encoding="utf-8")
    assert json.loads(_snapshot_text(target)) == json.loads(expected)
    assert _snapshot_text(target) == expected  # key order is part of the contract (_type first)


# -- json-schema target ----------------------------------------------------------------------


def js(sig: type[Signature]) -> dict[str, Any]:
    return compile_schema(sig, target="json-schema").schema


def test_json_schema_target_is_not_strict() -> None:
    compiled = compile_schema(Rich, target="json-schema")
    assert (compiled.target, compiled.strict) == ("json-schema", False)
    assert compiled.response_format["json_schema"]["strict"] is False


def test_json_schema_keeps_string_length() -> None:
    prop = js(Rich)["properties"]["name"]
    assert (prop["minLength"], prop["maxLength"]) == (2, 5)
    assert prop["description"] == "a short name"


def test_json_schema_restates_unique_items_no_engine_enforces() -> None:
    tags = js(Rich)["properties"]["tags"]
    assert "uniqueItems" not in tags  # llguidance refuses it, xgrammar lacks it
    assert tags["description"] == "Items must be unique"


def test_json_schema_keeps_defaults() -> None:
    prop = js(Rich)["properties"]["count"]
    assert prop["default"] == 7
    assert prop["minimum"] == 0
    assert "count" not in js(Rich)["required"]


def test_json_schema_keeps_tuples_and_dicts() -> None:
    props = js(Rich)["properties"]
    assert props["pair"]["prefixItems"] == [{"type": "integer"}, {"type": "string"}]
    assert props["counts"] == {"additionalProperties": {"type": "integer"}, "type": "object"}


def test_json_schema_keeps_tags() -> None:
    schema = js(Rich)
    branches = schema["properties"]["action"]["anyOf"]
    variants = [resolve(schema, b) for b in branches]
    assert [next(iter(v["properties"])) for v in variants] == ["_type", "_type"]
    assert [v["properties"]["_type"]["const"] for v in variants] == ["SpawnTask", "Continue"]
    assert [v["required"][0] for v in variants] == ["_type", "_type"]


def test_json_schema_has_no_titles_or_one_of() -> None:
    schema = js(Rich)
    assert forbidden_keyword(schema, "title") == []
    assert forbidden_keyword(schema, "oneOf") == []
    assert forbidden_keyword(schema, "discriminator") == []


def test_json_schema_is_meta_valid_and_validates_instances() -> None:
    schema = js(Rich)
    Draft202012Validator.check_schema(schema)
    good = {
        "name": "abc",
        "tags": ["a"],
        "pair": [1, "x"],
        "level": "low",
        "mode": "fast",
        "action": {"_type": "Continue", "reason": "r"},
        "sub": {},
        "counts": {"a": 1},
    }
    assert list(Draft202012Validator(schema).iter_errors(good)) == []
    bad = {**good, "tags": ["a", "a"], "name": "a"}  # duplicates: only a local check now
    assert [e.message for e in Draft202012Validator(schema).iter_errors(bad)] == [
        "'a' is too short"
    ]


def test_targets_share_the_output_model() -> None:
    assert compile_schema(Rich, target="json-schema").output_model is Rich.output_model
    assert compile_schema(Rich).output_model is Rich.output_model


# -- prompt shape ----------------------------------------------------------------------------


def test_shape_names_every_field_tag_and_enum_value() -> None:
    for target in ("openai-strict", "json-schema"):
        shape = compile_schema(Rich, target=target).shape
        for field in Rich.output_fields:
            assert f'"{field}":' in shape
        assert '"_type": "SpawnTask"' in shape
        assert '"_type": "Continue"' in shape
        assert '"fast" | "slow"' in shape
        assert '"low" | "high"' in shape  # both the Literal and the Enum


def test_shape_of_agent_signature() -> None:
    shape = compile_schema(Decide).shape
    assert shape.splitlines()[:4] == [
        "{",
        '  "action": SpawnTask | CompleteTask | Continue,',
        '  "confidence": number  // >= 0, <= 1',
        "}",
    ]
    assert 'SpawnTask = {\n  "_type": "SpawnTask",' in shape
    assert '"priority": "low" | "high"' in shape
    assert '"task"' not in shape  # inputs are not part of the output shape


def test_shape_mentions_descriptions_and_constraints() -> None:
    shape = compile_schema(Rich).shape
    assert '"name": string,  // a short name, at least 2 characters, at most 5 characters' in shape
    assert "default 7" in shape


def test_shape_renders_a_fields_own_schema_with_a_type_list_and_an_inline_object() -> None:
    sig = make_signature(
        "q -> a: A, b: B",
        types={
            "A": Annotated[
                str | None, WithJsonSchema({"type": ["string", "null"], "maxLength": 3})
            ],
            "B": Annotated[
                dict[str, int],
                WithJsonSchema({"type": "object", "properties": {"k": {"type": "integer"}}}),
            ],
        },
    )
    assert compile_schema(sig, target="json-schema").shape.splitlines() == [
        "{",
        '  "a": string | null,  // at most 3 characters',
        '  "b": {',
        '    "k": integer',
        "  }",
        "}",
    ]
