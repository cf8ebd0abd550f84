"""Malformed type forms are a `SchemaError` naming the field when the signature is defined.

Pydantic reads ``list[int, str]`` as ``list[int]`` (the second argument silently dropped), fails
on ``dict[str]`` or on a discriminator put on something that is not a union of models with a
bare ``TypeError`` naming no field, and fails on ``Literal[int]`` only when the schema is
serialised. Both the string form and the class form are checked, before Pydantic builds the class.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Discriminator, Field, RootModel

import typedspy as ts
from typedspy.errors import SchemaError
from typedspy.signature import InputField, OutputField, Signature, make_signature
from typedspy.testing import StandIn


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


@pytest.mark.parametrize(
    ("type_text", "match"),
    [
        (
            "list[int, str]",
            r"list\[int, str\] gives 2 type arguments; list takes 1 .*list\[int \| str\]",
        ),
        ("set[int, str]", r"set takes 1"),
        ("frozenset[int, str]", r"frozenset takes 1"),
        ("dict[str]", r"dict\[str\] gives 1 type argument; dict takes 2"),
        ("dict[str, int, int]", r"gives 3 type arguments; dict takes 2"),
        ("list[dict[str, int, int]]", r"dict takes 2"),
        ("tuple[int, ..., str]", r"'\.\.\.' goes only second"),
        ("tuple[..., int]", r"'\.\.\.' goes only second"),
        ("tuple[int, int, ...]", r"'\.\.\.' goes only second"),
        ("Literal[int]", r"Literal takes values .* not int"),
        ("Optional[int, str]", r"Optional requires a single type"),
        ("List[int, str]", r"Too many arguments"),
    ],
)
def test_string_form_malformed_generics_name_the_field(type_text: str, match: str) -> None:
    with pytest.raises(SchemaError, match=match) as info:
        make_signature(f"q -> a: {type_text}")
    assert info.value.path == ("a",)


@pytest.mark.parametrize(
    "type_text",
    ["tuple[int, ...]", "tuple[int, str]", "tuple[()]", "dict[str, list[int]]", "Literal['a', 1]"],
)
def test_string_form_well_formed_neighbours_still_build(type_text: str) -> None:
    assert make_signature(f"q -> a: {type_text}").output_fields["a"].annotation is not None


def test_class_form_list_with_two_arguments_is_refused() -> None:
    with pytest.raises(SchemaError, match=r"Pairs\.a: list\[int, str\]") as info:

        class Pairs(Signature):
            q: str = InputField()
            a: list[int, str] = OutputField()  # type: ignore[type-arg]

    assert info.value.path == ("a",)


def test_malformed_generic_inside_a_model_names_the_path() -> None:
    class Inner(BaseModel):
        items: list[int, str]  # type: ignore[type-arg]

    with pytest.raises(SchemaError, match=r"Outer\.inner\.items: list\[int, str\]") as info:

        class Outer(Signature):
            q: str = InputField()
            inner: Inner = OutputField()

    assert info.value.path == ("inner", "items")


def test_input_dict_with_one_argument_is_refused_not_a_type_error() -> None:
    with pytest.raises(SchemaError, match=r"Lookup\.table: dict\[str\]") as info:

        class Lookup(Signature):
            table: dict[str] = InputField()  # type: ignore[type-arg]
            a: str = OutputField()

    assert info.value.path == ("table",)


@pytest.mark.parametrize(
    "annotation",
    [
        Annotated[int, Field(discriminator="kind")],
        Annotated[int, Discriminator("kind")],
        Annotated[Cat | int, Field(discriminator="kind")],
        Annotated[list[Cat], Field(discriminator="kind")],
        list[Annotated[int, Field(discriminator="kind")]],
        Annotated[Cat | Dog, Field(discriminator="missing")],
    ],
)
def test_discriminator_on_no_union_of_models_is_a_schema_error(annotation: object) -> None:
    namespace = {
        "__annotations__": {"q": str, "pet": annotation},
        "q": InputField(),
        "pet": OutputField(),
    }
    with pytest.raises(SchemaError, match=r"Pets\.pet: .*a discriminator picks") as info:
        type("Pets", (Signature,), namespace)
    assert info.value.path == ("pet",)


def test_field_discriminator_on_an_int_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"Count\.n: .*not a valid discriminated union"):

        class Count(Signature):
            q: str = InputField()
            n: int = OutputField(discriminator="kind")


def test_discriminated_union_of_models_still_builds() -> None:
    class Pets(Signature):
        q: str = InputField()
        pet: Annotated[Cat | Dog, Field(discriminator="kind")] = OutputField()
        maybe: Annotated[Cat | Dog | None, Discriminator("kind")] = OutputField()

    out = Pets.output_model.model_validate({"pet": {"kind": "dog", "good": True}, "maybe": None})
    assert isinstance(out.pet, Dog)  # type: ignore[attr-defined]


class Frozen(BaseModel, frozen=True):
    x: int


@pytest.mark.parametrize(
    ("type_text", "match"),
    [
        (
            "set[Cat]",
            r"set\[Cat\]: a set holds hashable items and Cat is not.*make the model frozen",
        ),
        ("frozenset[dict[str, int]]", r"hashable items and dict\[str, int\] is not"),
        ("set[list[int]]", r"hashable items and list\[int\] is not"),
        ("dict[list[int], str]", r"JSON object keys are text, which no list\[int\] is read from"),
        ("dict[tuple[int, int], str]", r"no tuple\[int, int\] is read from"),
        ("dict[Cat, int]", r"no Cat is read from"),
    ],
)
def test_an_output_no_reply_can_be_read_as_is_refused(type_text: str, match: str) -> None:
    # Each was accepted, and every reply refused ('Set items should be hashable', 'Input should
    # be a valid list' at a key), each retry the same.
    with pytest.raises(SchemaError, match=match) as info:
        make_signature(f"q -> a: {type_text}", types={"Cat": Cat})
    assert info.value.path == ("a",)


def test_sets_of_hashable_items_and_text_keys_still_build_and_inputs_are_not_checked() -> None:
    sig = make_signature(
        "q: set[list[int]] -> a: set[Frozen], b: frozenset[tuple[int, str]], c: dict[int, str]",
        types={"Frozen": Frozen},
    )
    out = sig.output_model.model_validate({"a": [{"x": 1}], "b": [[1, "s"]], "c": {"1": "x"}})
    assert out.a == {Frozen(x=1)}  # type: ignore[attr-defined]


class Sku(RootModel[str], frozen=True):
    """A key read from text through its root: a frozen RootModel of str."""


class Rank(RootModel[int], frozen=True):
    pass


class Loose(RootModel[str]):
    pass


class Listed(RootModel[list[int]], frozen=True):
    pass


def test_a_dict_keyed_by_a_frozen_root_model_of_text_still_builds_and_reads(
    standin: tuple[StandIn, ts.LM],
) -> None:
    # A RootModel of str or int is read from a JSON key (its root is); frozen, it is hashable.
    # It was refused as a model key ('no Sku is read from'), though every reply was read.
    _, lm = standin

    class Stock(Signature):
        q: str = InputField()
        stock: dict[Sku, int] = OutputField()
        ranks: dict[Annotated[Rank, Field(description="a rank")], str] = OutputField()

    pred = ts.Predict(Stock, lm=lm)(q="what is in stock?")
    assert pred.stock and all(isinstance(k, Sku) for k in pred.stock)
    assert pred.ranks and all(isinstance(k, Rank) for k in pred.ranks)
    assert make_signature("q -> a: dict[Sku, int]", types={"Sku": Sku}).output_fields


def test_a_dict_keyed_by_a_root_model_no_key_makes_is_refused() -> None:
    # Neither was ever read: Loose is unhashable, and no JSON key is read as a list.
    unhashable = r"dict\[Loose, int\]: a dict key is hashable and Loose is not.*frozen"
    with pytest.raises(SchemaError, match=unhashable):
        make_signature("q -> a: dict[Loose, int]", types={"Loose": Loose})
    with pytest.raises(SchemaError, match=r"dict\[Listed, int\]: .*no list\[int\] is read from"):
        make_signature("q -> a: dict[Listed, int]", types={"Listed": Listed})
