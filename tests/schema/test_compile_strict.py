"""`compile_schema(..., target="openai-strict")`: each strict rule, keyword moves, dicts."""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from pydantic import AnyUrl, BaseModel, ConfigDict, ValidationError, WithJsonSchema
from strict_walkers import (
    additional_properties_false,
    forbidden_keyword,
    no_unsupported_keywords,
    ref_has_no_siblings,
    required_is_every_property,
    resolve,
    root_is_object,
    sdk_changes,
    subschemas,
    union_tags,
)

from typedspy.schema import compile_schema
from typedspy.schema.targets._openai_rules import check_openai_strict
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

    task: str = OutputField(description="echo of the task")
    action: SpawnTask | CompleteTask | Continue = OutputField(description="the next step")
    confidence: float = OutputField(ge=0, le=1)


class Sub(BaseModel):
    """A sub-model with a docstring and a default."""

    x: int = 3
    note: str | None = None


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Loose(BaseModel):
    model_config = ConfigDict(extra="allow")
    a: int


class Kitchen(Signature):
    name: str = OutputField(min_length=2, max_length=5, description="a short name")
    tags: set[str] = OutputField()
    pair: tuple[int, str] = OutputField()
    url: AnyUrl = OutputField()
    when: datetime.date = OutputField()
    uid: uuid.UUID = OutputField()
    counts: dict[str, int] = OutputField(description="counts per word")
    opt: Optional[int] = OutputField(default=None)  # noqa: UP045
    sub: Sub = OutputField(description="a sub")
    subopt: Sub | None = OutputField(default=None)
    color: Color = OutputField(description="colour")
    lst: list[str] = OutputField(min_length=1, max_length=3)
    deflt: int = OutputField(default=5)
    pat: str = OutputField(pattern=r"^a+$")
    models: dict[str, Sub] = OutputField()
    loose: Loose = OutputField()


class Tasks:
    class Created(BaseModel):
        task_id: str


class Events:
    class Created(BaseModel):
        event_id: str


class A(BaseModel):
    a: int


class B(BaseModel):
    b: str


class Node(BaseModel):
    name: str
    children: list[Node | Leaf]


class Leaf(BaseModel):
    value: int


Node.model_rebuild()


class Holder(BaseModel):
    choice: A | B


class Structures(Signature):
    item: Tasks.Created | Events.Created = OutputField()
    items: list[A | B] = OutputField()
    maybe: A | B | None = OutputField()
    holder: Holder = OutputField()
    tree: Node = OutputField()
    either: A | B | str = OutputField()


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: float


class Pets(Signature):
    pet: Cat | Dog = OutputField(discriminator="kind")


class MixedValue(enum.Enum):
    ONE = 1
    A = "a"


class Values(Signature):
    mixed: Literal[1, "a", True, None] = OutputField(description="one of four")
    number: Literal[1.5, 2] = OutputField()
    member: MixedValue = OutputField()
    sub: Sub = OutputField()


CASES: dict[str, type[Signature]] = {
    "Decide": Decide,
    "Kitchen": Kitchen,
    "Structures": Structures,
    "Pets": Pets,
    "Values": Values,
}
TAG_KEYS = {"Pets": frozenset({"kind"})}


def strict(sig: type) -> dict[str, Any]:
    return compile_schema(sig, target="openai-strict").schema


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    name: str = request.param
    return name, strict(CASES[name])


# -- each strict rule, walked over the whole compiled schema -------------------------------


def test_root_is_object(case: tuple[str, dict[str, Any]]) -> None:
    assert root_is_object(case[1]) == []


def test_no_one_of_anywhere(case: tuple[str, dict[str, Any]]) -> None:
    assert forbidden_keyword(case[1], "oneOf") == []


def test_no_discriminator_anywhere(case: tuple[str, dict[str, Any]]) -> None:
    assert forbidden_keyword(case[1], "discriminator") == []


def test_no_default_anywhere(case: tuple[str, dict[str, Any]]) -> None:
    assert forbidden_keyword(case[1], "default") == []


def test_no_title_anywhere(case: tuple[str, dict[str, Any]]) -> None:
    assert forbidden_keyword(case[1], "title") == []


def test_required_equals_property_keys(case: tuple[str, dict[str, Any]]) -> None:
    assert required_is_every_property(case[1]) == []


def test_additional_properties_false_everywhere(case: tuple[str, dict[str, Any]]) -> None:
    schema = case[1]
    assert additional_properties_false(schema) == []
    # ... including union variants and $defs, which the walk reaches:
    objects = [p for p, n in subschemas(schema) if n.get("type") == "object"]
    assert any(p[:1] == ("$defs",) for p in objects) or "$defs" not in schema


def test_type_is_first_property_of_every_union_variant(case: tuple[str, dict[str, Any]]) -> None:
    name, schema = case
    assert union_tags(schema, TAG_KEYS.get(name, frozenset({"_type"}))) == []


def test_nothing_beside_ref(case: tuple[str, dict[str, Any]]) -> None:
    assert ref_has_no_siblings(case[1]) == []


def test_no_unsupported_keywords(case: tuple[str, dict[str, Any]]) -> None:
    assert no_unsupported_keywords(case[1]) == []


def test_meta_schema_valid(case: tuple[str, dict[str, Any]]) -> None:
    Draft202012Validator.check_schema(case[1])


def test_openai_sdk_strict_pass_changes_nothing(case: tuple[str, dict[str, Any]]) -> None:
    assert sdk_changes(case[1]) is False


def test_openai_rules_checker_finds_nothing(case: tuple[str, dict[str, Any]]) -> None:
    name, schema = case
    assert check_openai_strict(schema, name=compile_schema(CASES[name]).name) == []


# -- specific shapes ----------------------------------------------------------------------


def test_union_variants_in_defs_are_tagged_objects() -> None:
    schema = strict(Decide)
    branches = schema["properties"]["action"]["anyOf"]
    variants = [resolve(schema, b) for b in branches]
    assert [v["properties"]["_type"] for v in variants] == [
        {"type": "string", "const": "SpawnTask"},
        {"type": "string", "const": "CompleteTask"},
        {"type": "string", "const": "Continue"},
    ]
    assert all(v["additionalProperties"] is False for v in variants)
    assert all(v["required"][0] == "_type" for v in variants)


def test_description_beside_ref_moves_to_one_branch_any_of() -> None:
    prop = strict(Decide)["properties"]["action"]
    assert prop["description"] == "the next step"
    assert all(set(b) == {"$ref"} for b in prop["anyOf"])
    sub = strict(Kitchen)["properties"]["sub"]
    assert sub == {"anyOf": [{"$ref": "#/$defs/Sub"}], "description": "a sub"}


def test_optional_fields_are_nullable_and_required() -> None:
    schema = strict(Kitchen)
    props = schema["properties"]
    assert props["opt"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["subopt"] == {"anyOf": [{"$ref": "#/$defs/Sub"}, {"type": "null"}]}
    assert {"opt", "subopt", "deflt"} <= set(schema["required"])
    note = schema["$defs"]["Sub"]["properties"]["note"]
    assert note == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    maybe = strict(Structures)["properties"]["maybe"]["anyOf"]
    assert maybe[-1] == {"type": "null"}
    assert len(maybe) == 3


def test_non_null_default_is_restated_in_description() -> None:
    prop = strict(Kitchen)["properties"]["deflt"]
    assert prop == {"type": "integer", "description": "Default: 5"}


def test_recursion_goes_through_defs() -> None:
    schema = strict(Structures)
    tree = schema["properties"]["tree"]
    assert set(tree) == {"$ref"}
    node = resolve(schema, tree)
    assert node["properties"]["name"] == {"type": "string"}
    refs = [b["$ref"] for b in node["properties"]["children"]["items"]["anyOf"]]
    assert all(r.startswith("#/$defs/") for r in refs)
    tagged = resolve(schema, {"$ref": refs[0]})
    assert tagged["properties"]["_type"]["const"] == "Node"
    inner = [b["$ref"] for b in tagged["properties"]["children"]["items"]["anyOf"]]
    assert inner == refs  # the tagged Node refers to itself: finite and tagged at every depth
    json.dumps(schema)


def test_recursive_model_as_whole_output_has_object_root() -> None:
    compiled = compile_schema(Node)
    assert compiled.schema["type"] == "object"
    assert "$ref" not in compiled.schema
    assert list(compiled.schema["properties"]) == ["name", "children"]
    assert check_openai_strict(compiled.schema, name=compiled.name) == []
    value = compiled.output_model.model_validate(
        {"name": "r", "children": [{"_type": "Leaf", "value": 1}]}
    )
    assert value.children == [Leaf(value=1)]  # type: ignore[attr-defined]


# -- unsupported keywords: off the wire, into the description, still enforced -----------------


def test_min_max_length_restated_and_enforced() -> None:
    prop = strict(Kitchen)["properties"]["name"]
    assert "minLength" not in prop
    assert "maxLength" not in prop
    assert prop["description"] == "a short name (at least 2 characters; at most 5 characters)"
    model = compile_schema(Kitchen).output_model
    for bad in ("a", "abcdef"):
        with pytest.raises(ValidationError) as exc:
            model.model_validate({**_KITCHEN_OK, "name": bad})
        assert [e["loc"] for e in exc.value.errors()] == [("name",)]


def test_unique_items_restated_and_enforced_as_a_set() -> None:
    prop = strict(Kitchen)["properties"]["tags"]
    assert prop == {
        "items": {"type": "string"},
        "type": "array",
        "description": "Items must be unique",
    }
    value = compile_schema(Kitchen).output_model.model_validate(
        {**_KITCHEN_OK, "tags": ["a", "a", "b"]}
    )
    assert value.tags == {"a", "b"}  # type: ignore[attr-defined]


def test_tuple_restated_and_enforced() -> None:
    prop = strict(Kitchen)["properties"]["pair"]
    assert "prefixItems" not in prop
    assert prop["items"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert (prop["minItems"], prop["maxItems"]) == (2, 2)
    assert prop["description"] == "In this order: integer, string"
    model = compile_schema(Kitchen).output_model
    assert model.model_validate(_KITCHEN_OK).pair == (1, "x")  # type: ignore[attr-defined]
    with pytest.raises(ValidationError) as exc:
        model.model_validate({**_KITCHEN_OK, "pair": ["x", 1]})
    assert {e["loc"] for e in exc.value.errors()} == {("pair", 0), ("pair", 1)}


def test_tuple_of_a_model_names_the_model_in_its_order_note() -> None:
    class Placed(Signature):
        pair: tuple[Sub, int] = OutputField()

    prop = strict(Placed)["properties"]["pair"]
    assert prop["items"] == {"anyOf": [{"$ref": "#/$defs/Sub"}, {"type": "integer"}]}
    assert prop["description"] == "In this order: Sub, integer"


def test_a_one_part_all_of_is_merged_into_its_node() -> None:
    class Merged(Signature):
        n: Annotated[int, WithJsonSchema({"allOf": [{"type": "integer"}], "description": "d"})] = (
            OutputField()
        )

    assert strict(Merged)["properties"]["n"] == {"type": "integer", "description": "d"}


def test_unsupported_format_restated_and_enforced() -> None:
    prop = strict(Kitchen)["properties"]["url"]
    assert "format" not in prop
    assert "format: uri" in prop["description"]
    with pytest.raises(ValidationError) as exc:
        compile_schema(Kitchen).output_model.model_validate({**_KITCHEN_OK, "url": "not a url"})
    assert exc.value.errors()[0]["loc"] == ("url",)


def test_supported_formats_and_constraints_are_kept() -> None:
    props = strict(Kitchen)["properties"]
    assert props["when"] == {"format": "date", "type": "string"}
    assert props["uid"] == {"format": "uuid", "type": "string"}
    assert props["pat"] == {"pattern": "^a+$", "type": "string"}
    assert (props["lst"]["minItems"], props["lst"]["maxItems"]) == (1, 3)
    assert (strict(Decide)["properties"]["confidence"]) == {
        "maximum": 1,
        "minimum": 0,
        "type": "number",
    }


def test_open_model_is_closed_on_the_wire() -> None:
    loose = strict(Kitchen)["$defs"]["Loose"]
    assert loose["additionalProperties"] is False


# -- dicts as key/value pairs ----------------------------------------------------------------


_KITCHEN_OK: dict[str, Any] = {
    "name": "abc",
    "tags": ["a"],
    "pair": [1, "x"],
    "url": "https://example.org",
    "when": "2024-01-02",
    "uid": "12345678-1234-5678-1234-567812345678",
    "counts": [{"key": "a", "value": 1}, {"key": "b", "value": 2}],
    "opt": None,
    "sub": {"x": 1, "note": None},
    "subopt": None,
    "color": "red",
    "lst": ["q"],
    "deflt": 5,
    "pat": "aa",
    "models": [{"key": "k", "value": {"x": 2, "note": "n"}}],
    "loose": {"a": 1},
}


def test_dict_compiles_to_key_value_pairs() -> None:
    prop = strict(Kitchen)["properties"]["counts"]
    assert prop == {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "integer"}},
            "required": ["key", "value"],
            "additionalProperties": False,
        },
        "description": "counts per word (a mapping, given as a list of key/value pairs)",
    }
    models = strict(Kitchen)["properties"]["models"]
    assert models["items"]["properties"]["value"] == {"$ref": "#/$defs/Sub"}


def test_dict_pairs_parse_back_into_a_dict() -> None:
    value = compile_schema(Kitchen).output_model.model_validate(_KITCHEN_OK)
    assert value.counts == {"a": 1, "b": 2}  # type: ignore[attr-defined]
    assert value.models == {"k": Sub(x=2, note="n")}  # type: ignore[attr-defined]


def test_dict_as_plain_object_is_also_accepted() -> None:
    data = {**_KITCHEN_OK, "counts": {"a": 1}, "models": {"k": {"x": 4}}}
    value = compile_schema(Kitchen).output_model.model_validate(data)
    assert value.counts == {"a": 1}  # type: ignore[attr-defined]
    assert value.models == {"k": Sub(x=4)}  # type: ignore[attr-defined]


def test_dict_pair_value_errors_name_the_key() -> None:
    data = {**_KITCHEN_OK, "counts": [{"key": "a", "value": "many"}]}
    with pytest.raises(ValidationError) as exc:
        compile_schema(Kitchen).output_model.model_validate(data)
    assert exc.value.errors()[0]["loc"] == ("counts", "a")
