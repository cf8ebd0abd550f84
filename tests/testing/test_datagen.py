from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

import jsonschema
import pytest

from typedspy.errors import SchemaError
from typedspy.testing import generate_instance

# The draft's own checker: the catch-all FormatChecker() checks "time" by draft 3's rules.
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def obj(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def tagged(tag: str, **props: Any) -> dict[str, Any]:
    return obj(_type={"type": "string", "const": tag}, **props)


PLAN = {
    **obj(
        action={"anyOf": [{"$ref": "#/$defs/SpawnTask"}, {"$ref": "#/$defs/Finish"}]},
        backup={"anyOf": [{"$ref": "#/$defs/SpawnTask"}, {"$ref": "#/$defs/Finish"}]},
    ),
    "$defs": {
        "SpawnTask": tagged("SpawnTask", goal={"type": "string"}, priority={"type": "integer"}),
        "Finish": tagged("Finish", answer={"type": "string"}),
    },
}

TREE = {
    **obj(root={"$ref": "#/$defs/Node"}),
    "$defs": {
        "Node": obj(
            value={"type": "integer"},
            children={"type": "array", "items": {"$ref": "#/$defs/Node"}},
            next={"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            parent={"type": ["object", "null"], "properties": {"up": {"$ref": "#/$defs/Node"}}},
        )
    },
}

LINKED = obj(
    value={"type": "string"},
    rest={"anyOf": [{"$ref": "#"}, {"type": "null"}]},
)

SCHEMAS: dict[str, dict[str, Any]] = {
    "tagged-union": PLAN,
    "recursive-defs": TREE,
    "recursive-root": LINKED,
    "numbers": obj(
        small={"type": "integer", "minimum": -5, "maximum": -3},
        open_range={"type": "integer", "exclusiveMinimum": 10, "exclusiveMaximum": 12},
        above={"type": "integer", "minimum": 100},
        below={"type": "number", "maximum": -100},
        between={"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        step={"type": "integer", "multipleOf": 7, "minimum": 50},
        cents={"type": "number", "multipleOf": 0.01, "minimum": 0.05, "maximum": 1},
        halves={"type": "integer", "multipleOf": 0.5, "exclusiveMinimum": 3},
        free={"type": "number"},
    ),
    "formats": obj(
        **{
            f.replace("-", "_"): {"type": "string", "format": f}
            for f in (
                "date-time",
                "time",
                "date",
                "duration",
                "email",
                "hostname",
                "ipv4",
                "ipv6",
                "uuid",
            )
        }
    ),
    "strings": obj(
        slug={"type": "string", "pattern": "^[a-z]+$"},
        digits={"type": "string", "pattern": r"^\d+$"},
        code={"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"},
        padded={"type": "string", "minLength": 12},
        short={"type": "string", "maxLength": 3},
        plain={"type": "string"},
    ),
    "choices": obj(
        mood={"type": "string", "enum": ["calm", "angry", "sad"]},
        kind={"type": "string", "const": "fixed"},
        mixed={"enum": [1, "two", None]},
        flag={"type": "boolean"},
        nothing={"type": "null"},
    ),
    "arrays": obj(
        one={"type": "array", "items": {"type": "integer"}},
        some={"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3},
        none={"type": "array", "items": {"type": "string"}, "maxItems": 0},
        unique={
            "type": "array",
            "items": {"enum": ["a", "b", "c"]},
            "minItems": 3,
            "uniqueItems": True,
        },
        nested={"type": "array", "items": {"type": "array", "items": {"type": "boolean"}}},
    ),
    "nullable": obj(
        maybe_str={"type": ["string", "null"]},
        maybe_obj={"anyOf": [obj(a={"type": "integer"}), {"type": "null"}]},
        null_first={"type": ["null", "integer"]},
    ),
    # Keywords that imply a type, sub-schemas that are `true`, pointers into lists, odd allOf.
    "implied": {
        "type": "object",
        "properties": {
            "anything": True,
            "object": {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
            "array": {"items": {"type": "string"}},
            "string": {"pattern": "^ex"},
            "choice": {"anyOf": [{"type": "integer"}, {"type": "string", "format": "date"}]},
            "pointer": {"$ref": "#/properties/choice/anyOf/1"},
            "above": {"type": "number", "minimum": 100},
            "merged": {"allOf": [True, {"type": "object", "properties": {"b": {"const": 1}}}]},
        },
        "required": ["anything", "object", "array", "string", "pointer", "above", "undeclared"],
    },
    # Every branch but one recurses: deep down, the generator must pick the leaf.
    "recursive_leaf": {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "anyOf": [
                    *(obj(**{f"child{i}": {"$ref": "#/$defs/Node"}}) for i in range(6)),
                    {"type": "string"},
                ]
            }
        },
    },
    "loose": {
        "type": "object",
        "properties": {"anything": {}, "described": {"description": "free"}},
        "required": ["anything"],
        "allOf": [{"properties": {"extra": {"type": "integer"}}, "required": ["extra"]}],
    },
}


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_instances_validate(name: str, seed: int) -> None:
    schema = SCHEMAS[name]
    instance = generate_instance(schema, seed=seed)
    validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
    errors = [e.message for e in validator.iter_errors(instance)]
    assert errors == [], instance


def test_same_seed_gives_the_same_instance() -> None:
    for schema in SCHEMAS.values():
        assert generate_instance(schema, seed=3) == generate_instance(schema, seed=3)


def test_first_union_takes_seed_modulo_branches() -> None:
    kinds = [generate_instance(PLAN, seed=s)["action"]["_type"] for s in range(4)]  # type: ignore[index]
    assert kinds == ["SpawnTask", "Finish", "SpawnTask", "Finish"]


def test_nested_unions_rotate_from_the_first() -> None:
    value = generate_instance(PLAN, seed=0)
    assert isinstance(value, dict)
    assert (value["action"]["_type"], value["backup"]["_type"]) == ("SpawnTask", "Finish")
    value = generate_instance(PLAN, seed=1)
    assert isinstance(value, dict)
    assert (value["action"]["_type"], value["backup"]["_type"]) == ("Finish", "SpawnTask")


def test_properties_follow_schema_order() -> None:
    value = generate_instance(SCHEMAS["numbers"])
    assert isinstance(value, dict)
    assert list(value) == list(SCHEMAS["numbers"]["properties"])
    tagged_value = generate_instance(PLAN)
    assert isinstance(tagged_value, dict)
    assert list(tagged_value["action"]) == ["_type", "goal", "priority"]


def test_enum_rotates_with_the_seed() -> None:
    moods = [generate_instance(SCHEMAS["choices"], seed=s)["mood"] for s in range(4)]  # type: ignore[index]
    assert moods == ["calm", "angry", "sad", "calm"]


def test_type_list_prefers_non_null() -> None:
    value = generate_instance(SCHEMAS["nullable"])
    assert isinstance(value, dict)
    assert isinstance(value["maybe_str"], str)
    assert isinstance(value["null_first"], int)


def test_array_length_follows_bounds() -> None:
    value = generate_instance(SCHEMAS["arrays"])
    assert isinstance(value, dict)
    assert (len(value["one"]), len(value["some"]), len(value["none"])) == (1, 2, 0)
    assert value["unique"] == ["a", "b", "c"]


def nesting(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    return 0


def test_recursion_terminates_but_does_recurse() -> None:
    assert 6 < nesting(generate_instance(TREE)) < 30
    # Only the depth rule can end this one: every level has one child until it gives up.
    kids = obj(kids={"type": "array", "items": {"$ref": "#"}})
    value = generate_instance(kids)
    assert value == {"kids": [{"kids": [{"kids": [{"kids": [{"kids": []}]}]}]}]}
    # Here the union rotation ends it: Linked first, then the null branch.
    assert generate_instance(LINKED) == {
        "value": "example",
        "rest": {"value": "example", "rest": None},
    }


def test_format_values_the_installed_checker_skips_are_valid() -> None:
    value = generate_instance(SCHEMAS["formats"])
    assert isinstance(value, dict)
    datetime.fromisoformat(value["date_time"].replace("Z", "+00:00"))
    assert re.fullmatch(r"\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})", value["time"])
    duration = r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?"
    assert re.fullmatch(duration, value["duration"])
    assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+)+", value["hostname"])
    assert uuid.UUID(value["uuid"]).version == 4


def test_endless_recursion_raises_schema_error() -> None:
    endless = {
        **obj(a={"$ref": "#/$defs/Loop"}),
        "$defs": {"Loop": obj(me={"$ref": "#/$defs/Loop"})},
    }
    with pytest.raises(SchemaError):
        generate_instance(endless)


@pytest.mark.parametrize("ref", ["#/$defs/Nope", "#/required/9", "https://elsewhere/s.json"])
def test_unresolvable_ref_raises_schema_error(ref: str) -> None:
    with pytest.raises(SchemaError, match="resolve"):
        generate_instance({**obj(a={"$ref": ref}), "$defs": {}})


def test_draft_4_tuple_items_are_filled_in_order() -> None:
    schema = {"type": "array", "items": [{"type": "integer"}, {"type": "string"}], "minItems": 3}
    value = generate_instance(schema)
    assert isinstance(value, list) and len(value) == 3
    jsonschema.Draft4Validator(schema).validate(value)


def test_an_invalid_pattern_gets_the_fallback_string() -> None:
    assert generate_instance({"type": "string", "pattern": "(unclosed"}) == "standin"


def test_a_multiple_no_bound_admits_ends_the_search() -> None:
    # No multiple of 2 lies in [1, 1]: the search is bounded and gives up with the nearest one.
    assert generate_instance({"type": "integer", "multipleOf": 2, "minimum": 1, "maximum": 1}) == 2


def test_pattern_fallback_is_a_fixed_string() -> None:
    value = generate_instance(obj(code={"type": "string", "pattern": "^[A-Z]{3}\\d{5}$"}))
    assert value == {"code": "standin"}
