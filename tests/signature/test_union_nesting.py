"""Automatic `_type` tags in nested positions: lists, models, Optional, recursion, dicts."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Discriminator, Field, ValidationError, create_model

import typedspy as ts
from typedspy._types import FieldError
from typedspy.parse import field_errors
from typedspy.schema import compile_schema
from typedspy.signature import OutputField, Signature


def _errors(model: type[BaseModel], data: dict[str, Any]) -> list[FieldError]:
    with pytest.raises(ValidationError) as exc:
        model.model_validate(data)
    return field_errors(exc.value)


class A(BaseModel):
    a: int


class B(BaseModel):
    b: str


class Holder(BaseModel):
    label: str
    choice: A | B


class Node(BaseModel):
    name: str
    children: list[Node | Leaf]


class Leaf(BaseModel):
    value: int


Node.model_rebuild()


class Nested(Signature):
    items: list[A | B] = OutputField()
    holder: Holder = OutputField()
    maybe: A | B | None = OutputField()
    tree: Node = OutputField()
    by_key: dict[str, A | B] = OutputField()


_GOOD: dict[str, Any] = {
    "items": [{"_type": "A", "a": 1}, {"_type": "B", "b": "x"}, {"a": 2}],
    "holder": {"label": "l", "choice": {"_type": "B", "b": "y"}},
    "maybe": {"_type": "A", "a": 5},
    "tree": {
        "name": "root",
        "children": [
            {"_type": "Leaf", "value": 1},
            {"_type": "Node", "name": "n", "children": [{"_type": "Leaf", "value": 2}]},
        ],
    },
    "by_key": [{"key": "k", "value": {"_type": "B", "b": "v"}}],
}


def test_union_as_dict_values() -> None:
    model = Nested.output_model
    assert model.model_validate(_GOOD).by_key == {"k": B(b="v")}
    plain = {**_GOOD, "by_key": {"x": {"a": 1}, "y": {"_type": "B", "b": "z"}}}
    assert model.model_validate(plain).by_key == {"x": A(a=1), "y": B(b="z")}
    bad = {**_GOOD, "by_key": [{"key": "k", "value": {"_type": "A", "a": "no"}}]}
    assert [e.path for e in _errors(model, bad)] == [("by_key", "k", "a")]


def test_union_in_list() -> None:
    value = Nested.output_model.model_validate(_GOOD)
    assert value.items == [A(a=1), B(b="x"), A(a=2)]
    assert [type(v) for v in value.items] == [A, B, A]


def test_union_in_list_error_path_has_int_index() -> None:
    data = {**_GOOD, "items": [{"_type": "A", "a": 1}, {"_type": "B", "b": 5}]}
    assert _errors(Nested.output_model, data) == [
        FieldError(("items", 1, "b"), "Input should be a valid string")
    ]


def test_union_in_nested_model_returns_users_classes() -> None:
    value = Nested.output_model.model_validate(_GOOD)
    assert type(value.holder) is Holder
    assert type(value.holder.choice) is B
    assert value.holder == Holder(label="l", choice=B(b="y"))


def test_union_in_nested_model_unknown_type_path() -> None:
    data = {**_GOOD, "holder": {"label": "l", "choice": {"_type": "Z"}}}
    errors = _errors(Nested.output_model, data)
    assert [e.path for e in errors] == [("holder", "choice")]
    assert "expected one of: A, B" in errors[0].message


def test_union_inside_optional() -> None:
    model = Nested.output_model
    assert model.model_validate({**_GOOD, "maybe": None}).maybe is None
    assert model.model_validate(_GOOD).maybe == A(a=5)
    assert model.model_validate({**_GOOD, "maybe": {"b": "s"}}).maybe == B(b="s")
    data = {**_GOOD, "maybe": {"_type": "A", "a": "q"}}
    assert [e.path for e in _errors(model, data)] == [("maybe", "a")]


def test_recursive_model() -> None:
    value = Nested.output_model.model_validate(_GOOD)
    expected = Node(name="root", children=[Leaf(value=1), Node(name="n", children=[Leaf(value=2)])])
    assert value.tree == expected
    assert type(value.tree) is Node
    assert type(value.tree.children[1]) is Node
    assert type(value.tree.children[1].children[0]) is Leaf  # type: ignore[union-attr]


def test_recursive_model_error_path() -> None:
    data = {
        **_GOOD,
        "tree": {
            "name": "r",
            "children": [{"name": "n", "children": [{"_type": "Leaf", "value": "x"}]}],
        },
    }
    errors = _errors(Nested.output_model, data)
    assert [e.path for e in errors] == [("tree", "children", 0, "children", 0, "value")]


def test_recursive_schema_tags_every_level() -> None:
    schema = compile_schema(Nested).schema
    defs = schema["$defs"]
    tagged_node = [
        name for name, d in defs.items() if d["properties"].get("_type", {}).get("const") == "Node"
    ]
    assert len(tagged_node) == 1
    inner = defs[tagged_node[0]]["properties"]["children"]["items"]["anyOf"]
    # Inside a tagged Node, the children union refers to the tagged Node again.
    assert {"$ref": f"#/$defs/{tagged_node[0]}"} in inner


# -- user discriminators, extra=forbid -----------------------------------------------------


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: float


class Pets(Signature):
    pet: Cat | Dog = OutputField(discriminator="kind")
    pets: list[Annotated[Cat | Dog, Field(discriminator="kind")]] = OutputField()


def test_user_discriminator_is_kept_and_not_tagged() -> None:
    schema = compile_schema(Pets).schema
    assert schema["properties"]["pet"] == {
        "anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]
    }
    for name in ("Cat", "Dog"):
        assert "_type" not in schema["$defs"][name]["properties"]
        assert next(iter(schema["$defs"][name]["properties"])) == "kind"
    value = Pets.output_model.model_validate(
        {"pet": {"kind": "dog", "barks": 2}, "pets": [{"kind": "cat", "meows": 1}]}
    )
    assert type(value.pet) is Dog
    assert value.pets == [Cat(kind="cat", meows=1)]


class Home(BaseModel):
    pet: Annotated[Cat | Dog, Discriminator("kind")]


def _by_discriminator_object() -> type[Signature]:
    class PetsD(Signature):
        pet: Annotated[Cat | Dog, Discriminator("kind")] = OutputField()
        home: Home | Cat = OutputField()

    return PetsD


def test_a_discriminator_object_is_the_users_own_tag_too() -> None:
    """Pydantic's `Discriminator("kind")`, as `Field(discriminator="kind")`: on main a TypeError
    from Pydantic when the class statement ran."""
    sig = _by_discriminator_object()
    schema = compile_schema(sig).schema
    assert schema["properties"]["pet"] == {
        "anyOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}]
    }
    value = sig.output_model.model_validate(
        {
            "pet": {"kind": "dog", "barks": 2},
            "home": {"_type": "Home", "pet": {"kind": "cat", "meows": 1}},
        }
    )
    assert type(value.pet) is Dog
    assert value.home == Home(pet=Cat(kind="cat", meows=1))


def test_user_discriminator_errors_name_the_users_tag() -> None:
    with pytest.raises(ValidationError) as exc:
        Pets.output_model.model_validate({"pet": {"kind": "cow"}, "pets": []})
    assert exc.value.errors()[0]["type"] == "union_tag_invalid"


class Strict1(BaseModel):
    model_config = ConfigDict(extra="forbid")
    f: int


class Strict2(BaseModel):
    model_config = ConfigDict(extra="forbid")
    g: int


class Forbidding(Signature):
    value: Strict1 | Strict2 = OutputField()


def test_extra_forbid_models_accept_type() -> None:
    value = Forbidding.output_model.model_validate({"value": {"_type": "Strict2", "g": 3}})
    assert value.value == Strict2(g=3)
    assert type(value.value) is Strict2


def test_extra_forbid_models_still_reject_other_keys() -> None:
    errors = _errors(Forbidding.output_model, {"value": {"_type": "Strict1", "f": 1, "zzz": 2}})
    assert errors == [FieldError(("value", "zzz"), "Extra inputs are not permitted")]


class WithScalar(Signature):
    either: A | B | str = OutputField()
    num: A | int | None = OutputField()


def test_union_with_scalar_members() -> None:
    model = WithScalar.output_model
    value = model.model_validate({"either": "text", "num": 3})
    assert (value.either, value.num) == ("text", 3)
    value = model.model_validate({"either": {"b": "x"}, "num": {"_type": "A", "a": 1}})
    assert (value.either, value.num) == (B(b="x"), A(a=1))
    assert model.model_validate({"either": "t", "num": None}).num is None


_FactoryA = create_model("Made", a=(int, ...))
_FactoryB = create_model("Made", b=(int, ...))


class FromFactory(Signature):
    made: _FactoryA | _FactoryB = OutputField()  # type: ignore[valid-type]


def test_classes_sharing_name_module_and_qualname_get_distinct_tags() -> None:
    schema = compile_schema(FromFactory).schema
    branches = schema["properties"]["made"]["anyOf"]
    assert len(branches) == 2
    consts = [
        schema["$defs"][b["$ref"].rsplit("/", 1)[-1]]["properties"]["_type"]["const"]
        for b in branches
    ]
    assert consts == [f"{__name__}.Made_1", f"{__name__}.Made_2"]
    value = FromFactory.output_model.model_validate({"made": {"_type": "Made_2", "a": 1, "b": 2}})
    assert type(value.made) is _FactoryB


class PlainAndTagged(Signature):
    plain: A = OutputField()
    either: A | B = OutputField()


def test_model_used_plain_and_in_a_union() -> None:
    schema = compile_schema(PlainAndTagged).schema
    plain = schema["$defs"][schema["properties"]["plain"]["$ref"].rsplit("/", 1)[-1]]
    assert "_type" not in plain["properties"]
    first = schema["properties"]["either"]["anyOf"][0]["$ref"].rsplit("/", 1)[-1]
    assert schema["$defs"][first]["properties"]["_type"] == {"type": "string", "const": "A"}
    value = PlainAndTagged.output_model.model_validate(
        {"plain": {"a": 1}, "either": {"_type": "A", "a": 2}}
    )
    assert (value.plain, value.either) == (A(a=1), A(a=2))
    assert type(value.plain) is A


class _Go(BaseModel):
    speed: int


class _Stop(BaseModel):
    reason: str


def test_object_matching_no_model_lists_the_models_complaints_not_the_str_member() -> None:
    sig = ts.make_signature("q -> v: Go | Stop | str", types={"Go": _Go, "Stop": _Stop})
    result = ts.parse.parse_outputs(sig, '{"v": {"pace": 3}}')
    assert result.kind == "validation_failed"
    (error,) = result.errors
    assert error.path == ("v",)
    assert "Go: speed: Field required" in error.message
    assert "Stop: reason: Field required" in error.message
    assert ts.parse.parse_outputs(sig, '{"v": "halt"}').value == {"v": "halt"}


def test_object_matching_no_model_still_reaches_a_dict_member() -> None:
    sig = ts.make_signature("q -> v: Go | dict[str, int]", types={"Go": _Go})
    assert ts.parse.parse_outputs(sig, '{"v": {"pace": 3}}').value == {"v": {"pace": 3}}
