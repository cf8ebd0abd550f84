from __future__ import annotations

import copy
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from typedspy.schema import meta_schema_violation
from typedspy.schema.targets._openai_rules import (
    ALLOWED_KEYWORDS,
    MAX_ENUM_VALUES,
    MAX_NESTING_DEPTH,
    MAX_PROPERTIES,
    MAX_REPORTED,
    MAX_WALK_NODES,
    NAME_PATTERN,
    SUPPORTED_STRING_FORMATS,
    UNSUPPORTED_KEYWORDS,
    StrictViolation,
    check_name,
    check_openai_strict,
    format_violation,
    measure_schema,
)

REQUIRED = (
    "'required' is required to be supplied and to be an array including every key in properties."
)


def obj(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def with_prop(schema: dict[str, Any]) -> dict[str, Any]:
    """A valid root whose single property `x` is `schema`."""
    return obj(x=schema)


def messages(schema: object, **kwargs: Any) -> list[str]:
    return [v.message for v in check_openai_strict(schema, **kwargs)]


VALID: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {
            "anyOf": [
                {"$ref": "#/$defs/SpawnTask"},
                {"$ref": "#/$defs/Finish"},
                {"type": "null"},
            ],
            "description": "what to do next",
        },
        "tree": {"$ref": "#/$defs/Node"},
        "score": {"type": ["number", "null"], "minimum": 0, "exclusiveMaximum": 1},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 5},
        "mood": {"type": "string", "enum": ["calm", "angry"]},
        "when": {"type": "string", "format": "date-time", "pattern": "^2"},
        "count": {"type": "integer", "multipleOf": 2, "title": "Count"},
        "ok": {"type": "boolean"},
    },
    "required": ["action", "tree", "score", "tags", "mood", "when", "count", "ok"],
    "additionalProperties": False,
    "$defs": {
        "SpawnTask": obj(_type={"type": "string", "const": "SpawnTask"}, goal={"type": "string"}),
        "Finish": obj(_type={"type": "string", "const": "Finish"}, answer={"type": "string"}),
        "Node": obj(
            value={"type": "integer"},
            children={"type": "array", "items": {"$ref": "#/$defs/Node"}},
            parent={"anyOf": [{"$ref": "#"}, {"type": "null"}]},
        ),
    },
}


def test_valid_schema_with_recursion_and_tagged_union_has_no_violations() -> None:
    assert check_openai_strict(VALID, name="Plan_v2-ok") == []


def test_checker_does_not_mutate_its_input() -> None:
    before = copy.deepcopy(VALID)
    check_openai_strict(VALID)
    assert before == VALID


def test_root_must_be_an_object() -> None:
    found = check_openai_strict({"type": "array", "items": {"type": "string"}})
    assert found[0] == StrictViolation(
        (), "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'."
    )


def test_root_anyof_is_rejected_with_type_none() -> None:
    found = check_openai_strict({"anyOf": [VALID["$defs"]["SpawnTask"]]})
    assert found[0].message == (
        "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."
    )
    assert found[0].path == ()


def test_root_object_may_not_carry_anyof() -> None:
    schema = {**obj(a={"type": "string"}), "anyOf": [obj(b={"type": "string"})]}
    assert StrictViolation((), "'anyOf' is not permitted.") in check_openai_strict(schema)


@pytest.mark.parametrize("value", [None, [1, 2], "object", 3, True])
def test_non_dict_schema_is_a_violation_not_an_exception(value: object) -> None:
    found = check_openai_strict(value)
    assert found and found[0].path == ()
    assert "got 'type: \"None\"'" in found[0].message


@pytest.mark.parametrize("extra", [{}, {"additionalProperties": True}])
def test_every_object_needs_additional_properties_false(extra: dict[str, Any]) -> None:
    inner = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    schema = with_prop({**inner, **extra})
    assert check_openai_strict(schema) == [
        StrictViolation(
            ("properties", "x"),
            "'additionalProperties' is required to be supplied and to be false.",
        )
    ]


def test_open_additional_properties_schema_is_rejected() -> None:
    mapping = {"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}
    assert messages(with_prop(mapping)) == [
        "'additionalProperties' is required to be supplied and to be false."
    ]


def test_additional_properties_inside_anyof_branches_and_defs_are_checked() -> None:
    schema = copy.deepcopy(VALID)
    del schema["$defs"]["Finish"]["additionalProperties"]
    found = check_openai_strict(schema)
    assert [v.path for v in found] == [("$defs", "Finish")]


def test_required_must_name_every_property() -> None:
    schema = with_prop({**obj(id={"type": "string"}, n={"type": "integer"}), "required": ["n"]})
    assert messages(schema) == [f"{REQUIRED} Missing 'id'."]


def test_required_must_not_name_unknown_keys() -> None:
    schema = with_prop({**obj(id={"type": "string"}), "required": ["id", "x"]})
    assert messages(schema) == [f"{REQUIRED} Extra required key 'x' supplied."]


def test_required_missing_entirely() -> None:
    inner = obj(a={"type": "string"})
    del inner["required"]
    assert messages(with_prop(inner)) == [f"{REQUIRED} Missing 'a'."]


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("oneOf", [{"type": "string"}]),
        ("allOf", [{"type": "string"}]),
        ("not", {"type": "integer"}),
        ("if", {"type": "string"}),
        ("then", {"type": "string"}),
        ("else", {"type": "string"}),
        ("dependentRequired", {}),
        ("dependentSchemas", {}),
        ("patternProperties", {}),
        ("uniqueItems", True),
        ("prefixItems", []),
        ("minLength", 1),
        ("maxLength", 5),
        ("default", "hi"),
        ("discriminator", {"propertyName": "kind"}),
        ("minProperties", 1),
        ("maxProperties", 2),
        ("contains", {"type": "string"}),
        ("propertyNames", {"type": "string"}),
        ("unevaluatedProperties", False),
        ("x-custom", 1),
    ],
)
def test_unsupported_keyword_is_not_permitted(keyword: str, value: object) -> None:
    schema = with_prop({"type": "string", keyword: value})
    assert check_openai_strict(schema) == [
        StrictViolation(("properties", "x"), f"'{keyword}' is not permitted.")
    ]


def test_unsupported_keywords_list_names_the_documented_ones() -> None:
    documented = {"oneOf", "allOf", "not", "if", "then", "else", "dependentRequired"}
    documented |= {"dependentSchemas", "patternProperties", "uniqueItems", "prefixItems"}
    documented |= {"minLength", "maxLength", "default", "discriminator", "minProperties"}
    assert documented <= UNSUPPORTED_KEYWORDS
    assert not UNSUPPORTED_KEYWORDS & frozenset().union(*ALLOWED_KEYWORDS.values())


def test_keyword_of_another_kind_is_not_permitted() -> None:
    schema = with_prop({"type": "integer", "pattern": "^1"})
    assert messages(schema) == ["'pattern' is not permitted."]


def test_pydantic_discriminated_union_reports_oneof_first() -> None:
    class Cat(BaseModel):
        kind: Literal["cat"]

    class Dog(BaseModel):
        kind: Literal["dog"]

    class Owner(BaseModel):
        pet: Cat | Dog = Field(discriminator="kind")

    found = [v for v in check_openai_strict(Owner.model_json_schema()) if v.path]
    first = next(v for v in found if v.path == ("properties", "pet"))
    assert first.message == "'oneOf' is not permitted."


def test_ref_with_sibling_keywords_is_rejected() -> None:
    schema = {**VALID, "properties": {**VALID["properties"]}}
    schema["properties"]["tree"] = {"$ref": "#/$defs/Node", "description": "d", "title": "T"}
    found = check_openai_strict(schema)
    assert found == [
        StrictViolation(
            ("properties", "tree"), "$ref cannot have keywords {'description', 'title'}."
        )
    ]


def test_unresolvable_ref_is_rejected() -> None:
    found = check_openai_strict(with_prop({"$ref": "#/$defs/Missing"}))
    assert len(found) == 1
    assert found[0].path == ("properties", "x")
    assert "#/$defs/Missing" in found[0].message


@pytest.mark.parametrize(
    "schema",
    [{}, {"description": "anything"}, {"const": "fact"}, {"enum": ["a", "b"]}],
)
def test_schema_without_type_is_rejected(schema: dict[str, Any]) -> None:
    assert messages(with_prop(schema)) == ["schema must have a 'type' key."]


def test_invalid_type_value_is_rejected() -> None:
    found = messages(with_prop({"type": "str"}))
    assert len(found) == 1 and found[0].startswith("'type' must be one of")


def test_unsupported_string_format_is_rejected() -> None:
    found = messages(with_prop({"type": "string", "format": "uri"}))
    assert len(found) == 1 and found[0].startswith('format "uri" is not supported')


@pytest.mark.parametrize("fmt", sorted(SUPPORTED_STRING_FORMATS))
def test_supported_string_formats_pass(fmt: str) -> None:
    assert check_openai_strict(with_prop({"type": "string", "format": fmt})) == []


def test_supported_formats_are_the_documented_nine() -> None:
    assert SUPPORTED_STRING_FORMATS == {
        "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
    }  # fmt: skip


def test_tuple_items_are_rejected() -> None:
    schema = with_prop({"type": "array", "items": [{"type": "string"}, {"type": "integer"}]})
    assert messages(schema) == ["'items' must be a single schema; tuple forms are not permitted."]


def test_array_without_items_is_rejected() -> None:
    assert messages(with_prop({"type": "array"})) == ["array schema missing items."]


def test_object_without_properties_is_rejected() -> None:
    schema = with_prop({"type": "object", "additionalProperties": False})
    assert messages(schema) == ["object schema missing properties."]


@pytest.mark.parametrize("name", ["has space", "dotted.name", "", "x" * 65, "naïve"])
def test_bad_name_is_a_violation_at_the_root(name: str) -> None:
    found = check_openai_strict(VALID, name=name)
    assert len(found) == 1
    assert found[0].path == () and found[0].scope == "name"
    assert format_violation(found[0], name=name).startswith(
        "Invalid 'response_format.json_schema.name': string"
    )


def test_name_pattern_accepts_64_chars_of_the_allowed_set() -> None:
    assert NAME_PATTERN == r"^[a-zA-Z0-9_-]{1,64}$"
    assert check_openai_strict(VALID, name="a-Z_9" * 12 + "abcd") == []


def test_format_violation_uses_openai_wording() -> None:
    v = StrictViolation(("properties", "x"), "'oneOf' is not permitted.")
    assert format_violation(v, name="Out") == (
        "Invalid schema for response_format 'Out': In context=('properties', 'x'), "
        "'oneOf' is not permitted."
    )
    assert format_violation(v, name="f", kind="function") == (
        "Invalid schema for function 'f': In context=('properties', 'x'), 'oneOf' is not permitted."
    )
    root = StrictViolation((), "'additionalProperties' is required to be supplied and to be false.")
    assert format_violation(root, name="Out") == (
        "Invalid schema for response_format 'Out': In context=(), "
        "'additionalProperties' is required to be supplied and to be false."
    )


def nested(levels: int) -> dict[str, Any]:
    """A schema whose deepest sub-schema sits `levels` levels below the root."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = obj(a=schema)
    return schema


def test_depth_at_the_limit_passes() -> None:
    assert measure_schema(nested(MAX_NESTING_DEPTH)).depth == MAX_NESTING_DEPTH
    assert check_openai_strict(nested(MAX_NESTING_DEPTH)) == []


def test_depth_over_the_limit_uses_openai_wording_without_context() -> None:
    found = check_openai_strict(nested(MAX_NESTING_DEPTH + 1), name="Deep")
    assert [format_violation(v, name="Deep") for v in found] == [
        "Invalid schema for response_format 'Deep': 11 levels of nesting exceeds limit of 10."
    ]
    assert found[0].scope == "schema"
    assert found[0].path == ("properties", "a") * 11


def test_depth_follows_refs_into_definitions() -> None:
    defs = {f"D{i}": obj(n={"$ref": f"#/$defs/D{i + 1}"}) for i in range(6)}
    defs["D6"] = obj(v={"type": "string"})
    schema = {**obj(root={"$ref": "#/$defs/D0"}), "$defs": defs}
    measures = measure_schema(schema)
    assert measures.depth == 8
    assert measures.deepest_path == ("$defs", "D6", "properties", "v")
    defs["D6"] = nested(3)  # three more levels inside the last definition
    assert measure_schema(schema).depth == 10
    defs["D6"] = nested(4)
    assert messages(schema) == ["11 levels of nesting exceeds limit of 10."]


def test_recursive_refs_are_measured_once_per_cycle() -> None:
    measures = measure_schema(VALID)
    # tree (1) -> Node.children (2) -> items (3); the $ref back to Node stops there.
    assert measures.depth == 3
    self_loop = {**obj(me={"$ref": "#"}), "$defs": {"A": obj(b={"$ref": "#/$defs/A"})}}
    assert check_openai_strict(self_loop) == []


def test_total_properties_limit() -> None:
    at_limit = obj(**{f"p{i}": {"type": "boolean"} for i in range(MAX_PROPERTIES)})
    assert measure_schema(at_limit).properties == MAX_PROPERTIES
    assert check_openai_strict(at_limit) == []
    over = obj(**{f"p{i}": {"type": "boolean"} for i in range(MAX_PROPERTIES + 1000)})
    assert messages(over) == ["6000 parameters exceeds limit of 5000."]


def test_total_enum_values_limit() -> None:
    half = {"type": "integer", "enum": list(range(MAX_ENUM_VALUES // 2))}
    assert check_openai_strict(obj(a=half, b=half)) == []
    bigger = {"type": "integer", "enum": list(range(600))}
    assert messages(obj(a=bigger, b=bigger)) == [
        "Expected at most 1000 enum values in total within a single schema when using "
        "structured outputs, but received 1200. Consider reducing the number of enums, "
        "or use 'strict: false' to opt out of structured outputs."
    ]


def test_large_string_enum_character_limit() -> None:
    values = [f"{i:03d}" + "v" * 57 for i in range(251)]  # 251 values x 60 chars = 15060
    found = check_openai_strict(with_prop({"type": "string", "enum": values}))
    assert len(found) == 1
    assert found[0].path == ("properties", "x")
    assert found[0].message.startswith(
        "Expected at most 15000 total characters across enum values when there are more "
        "than 250 enum values, but received 15060."
    )
    assert check_openai_strict(with_prop({"type": "string", "enum": values[:250]})) == []


def test_string_budget_counts_names_definitions_enums_and_consts() -> None:
    schema = {
        **obj(ab={"type": "string", "enum": ["xyz", 12]}, c={"type": "string", "const": "k"}),
        "$defs": {"Defn": obj(d={"type": "null"})},
    }
    # "ab" + "c" + "d" (property names) + "Defn" + "xyz" + "12" + "k"
    assert measure_schema(schema).string_budget == 2 + 1 + 1 + 4 + 3 + 2 + 1


def test_string_budget_limit() -> None:
    big = "v" * 60_001
    found = messages(obj(a={"type": "string", "const": big}, b={"type": "string", "const": big}))
    assert len(found) == 1
    assert found[0].startswith("Expected at most 120000 total characters")
    assert "received 120004" in found[0]


def test_violations_come_in_document_order() -> None:
    schema = obj(
        first={"type": "string", "default": "a"},
        second={"oneOf": [{"type": "string"}]},
        third={"type": "array"},
    )
    assert [v.path[-1] for v in check_openai_strict(schema)] == [
        "first",
        "second",
        "second",
        "third",
    ]


def test_hostile_deeply_nested_dict_does_not_raise() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(20_000):
        deep = {"type": "object", "properties": {"a": deep}}
    found = check_openai_strict(deep)
    assert any(v.message.endswith("levels of nesting exceeds limit of 10.") for v in found)
    deep_list: list[Any] = []
    for _ in range(20_000):
        deep_list = [deep_list]
    assert check_openai_strict(obj(x={"type": "string", "const": deep_list})) == []


def test_self_containing_dict_does_not_hang() -> None:
    loop: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["me"]}
    loop["properties"] = {"me": loop}
    found = check_openai_strict(loop)
    assert any("levels of nesting exceeds limit" in v.message for v in found)


_LOOP: list[Any] = []
_LOOP.append(_LOOP)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (with_prop(3), "schema must be a JSON object, got number."),
        (with_prop([{"type": "string"}]), "schema must be a JSON object, got array."),
        (with_prop(None), "schema must be a JSON object, got null."),
        (with_prop(True), "schema must be a JSON object, got boolean."),
        (with_prop({"$ref": 3}), "reference 3 cannot be resolved; use '#' or '#/$defs/<name>'."),
        (
            with_prop({"$ref": "other.json#/x"}),
            "reference \"other.json#/x\" cannot be resolved; use '#' or '#/$defs/<name>'.",
        ),
        (with_prop({**obj(), "properties": ["a"]}), "'properties' must be an object."),
        (
            with_prop({"type": "array", "items": "string"}),
            "'items' must be a schema object, got string.",
        ),
        (with_prop({"type": "string", "enum": []}), "'enum' must be a non-empty array."),
        (with_prop({"type": "string", "enum": "a"}), "'enum' must be a non-empty array."),
        (with_prop({"anyOf": []}), "'anyOf' must be a non-empty array."),
        (with_prop({"type": "string", "pattern": 1}), "'pattern' must be a string."),
        ({**obj(), "$defs": ["A"]}, "'$defs' must be an object."),
        ({**obj(), "definitions": None}, "'definitions' must be an object."),
        (with_prop({"type": "number", "minimum": "0"}), "'minimum' must be a number."),
        (with_prop({"type": "integer", "multipleOf": True}), "'multipleOf' must be a number."),
        (
            with_prop({"type": "array", "items": {"type": "string"}, "maxItems": -1}),
            "'maxItems' must be a non-negative integer.",
        ),
        (
            with_prop({"type": "array", "items": {"type": "string"}, "minItems": 1.5}),
            "'minItems' must be a non-negative integer.",
        ),
        (
            with_prop({"type": _LOOP}),
            "'type' must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', "
            "'string', or a list of them; got <unprintable>.",
        ),
    ],
)
def test_malformed_keyword_values_are_violations_at_their_path(
    schema: dict[str, Any], message: str
) -> None:
    """Hostile shapes a compiler never emits: each is one violation at the node, never a raise."""
    found = check_openai_strict(schema)
    assert message in [v.message for v in found]
    assert all(v.path in {(), ("properties", "x")} for v in found)


@pytest.mark.parametrize("name", [None, 3, b"Out"])
def test_a_name_that_is_no_string_is_a_name_violation(name: object) -> None:
    assert check_name(name) == [StrictViolation((), "expected a string.", "name")]


def test_a_huge_schema_is_reported_partly_and_said_to_be_unchecked() -> None:
    """More sub-schemas than the walk visits: the first MAX_REPORTED problems, then a note."""
    schema = obj(**{f"p{i}": {} for i in range(MAX_WALK_NODES)})
    found = check_openai_strict(schema)
    structural = [v for v in found if v.scope == "context"]
    assert MAX_REPORTED <= len(structural) < MAX_REPORTED + 10
    assert structural[0] == StrictViolation(("properties", "p0"), "schema must have a 'type' key.")
    notes = [v.message for v in found if v.scope == "schema"]
    assert f"schema has more than {MAX_WALK_NODES} sub-schemas and was not fully checked." in notes


def test_meta_schema_check_of_a_value_that_is_no_json_is_a_violation_not_a_raise() -> None:
    assert meta_schema_violation(VALID) is None
    assert meta_schema_violation({"type": "object", "enum": {1, 2}}) == StrictViolation(
        (), "the schema is not JSON.", "schema"
    )
