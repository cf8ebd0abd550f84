"""`compile_schema` for openai-strict: inexpressible shapes, size limits, names, the cache."""

from __future__ import annotations

import enum
import functools
import json
import re
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, WithJsonSchema, create_model
from strict_walkers import resolve, union_tags

from typedspy.errors import SchemaError
from typedspy.schema import CompiledSchema, compile_schema
from typedspy.signature import OutputField, Signature, build_signature


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class Continue(BaseModel):
    reason: str


class Decide(Signature):
    """Decide the agent's next action."""

    action: SpawnTask | Continue = OutputField(description="the next step")
    confidence: float = OutputField(ge=0, le=1)


class A(BaseModel):
    a: int


class B(BaseModel):
    b: str


class Holder(BaseModel):
    choice: A | B


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: float


def strict(sig: type) -> dict[str, Any]:
    return compile_schema(sig, target="openai-strict").schema


# -- shapes strict mode cannot express --------------------------------------------------------


class HoldsAny(BaseModel):
    payload: Any


class ValueKinds(enum.Enum):
    """An array among an enum's values: no JSON type to give the enum, so the checker says so."""

    ONE = 1
    PAIR = (1, 2)


def _sig(name: str, annotation: Any) -> type[Signature]:
    return build_signature(name, {}, {"field": (annotation, Field())})


@pytest.mark.parametrize(
    ("annotation", "path", "advice"),
    [
        (Any, ("properties", "field"), "give it a concrete type"),
        (Annotated[Any, Field(description="x")], ("properties", "field"), "concrete type"),
        (dict, ("properties", "field"), "dict[str, T] with a concrete T"),
        (dict[str, Any], ("properties", "field"), "dict[str, T] with a concrete T"),
        (list, ("properties", "field"), "give its items a concrete type"),
        (HoldsAny, ("$defs", "HoldsAny", "properties", "payload"), "give it a concrete type"),
        (
            dict[Annotated[str, Field(pattern="^a")], Any],
            ("properties", "field"),
            "dict with Any values; give the values a concrete type",
        ),
        (
            Annotated[int, WithJsonSchema({"allOf": [{"type": "integer"}, {"minimum": 0}]})],
            ("properties", "field"),
            "combines schemas with allOf",
        ),
        (
            Annotated[SpawnTask, Field(json_schema_extra={"minProperties": 1})],
            ("properties", "field"),
            "constrains a reference: ['minProperties']",
        ),
        (ValueKinds, ("$defs", "ValueKinds"), "schema must have a 'type' key"),
    ],
)
def test_any_and_bare_dict_are_schema_errors(
    annotation: Any, path: tuple[str, ...], advice: str
) -> None:
    sig = _sig("Open", annotation)
    with pytest.raises(SchemaError) as exc:
        compile_schema(sig)
    assert exc.value.path == path
    assert advice in str(exc.value)
    assert path[-1] in str(exc.value)


def test_any_is_fine_for_json_schema_target() -> None:
    compiled = compile_schema(_sig("OpenJS", Any), target="json-schema")
    assert compiled.schema["properties"]["field"] == {}


# -- limits ---------------------------------------------------------------------------------


def _nested_lists(depth: int) -> Any:
    tp: Any = int
    for _ in range(depth):
        tp = list[tp]
    return tp


def test_nesting_depth_ten_is_accepted() -> None:
    compile_schema(_sig("Depth10", _nested_lists(9)))


def test_nesting_depth_over_ten_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="11 levels of nesting exceeds limit of 10") as exc:
        compile_schema(_sig("Depth11", _nested_lists(10)))
    assert exc.value.path[:2] == ("properties", "field")


def test_nesting_depth_counts_through_defs() -> None:
    tp: Any = int
    for i in range(10):
        tp = create_model(f"Level{i}", inner=(tp, ...))
    with pytest.raises(SchemaError, match="exceeds limit of 10") as exc:
        compile_schema(_sig("DeepModels", tp))
    assert exc.value.path[:1] == ("$defs",)


@functools.cache
def _many() -> Any:
    return create_model("Many", **{f"p{i}": (int, ...) for i in range(4999)})  # type: ignore[call-overload]


def test_five_thousand_properties_are_accepted() -> None:
    compile_schema(_sig("Props5000", _many()))  # 4999 + the output field itself


def test_more_than_five_thousand_properties_is_a_schema_error() -> None:
    sig = build_signature(
        "Props5001", {}, {"field": (_many(), Field()), "one_more": (int, Field())}
    )
    with pytest.raises(SchemaError, match="5001 parameters exceeds limit of 5000") as exc:
        compile_schema(sig)
    assert isinstance(exc.value.path, tuple)


def test_thousand_enum_values_are_accepted() -> None:
    compile_schema(_sig("Enum1000", Literal[tuple(f"v{i}" for i in range(1000))]))


def test_more_than_thousand_enum_values_is_a_schema_error() -> None:
    values = Literal[tuple(f"v{i}" for i in range(1001))]
    with pytest.raises(SchemaError, match="at most 1000 enum values") as exc:
        compile_schema(_sig("Enum1001", values))
    assert "received 1001" in str(exc.value)


def test_string_budget_is_a_schema_error() -> None:
    model = create_model(  # type: ignore[call-overload]
        "LongNames", **{f"p{i:04d}" + "x" * 995: (int, ...) for i in range(121)}
    )
    with pytest.raises(SchemaError, match="at most 120000 total characters"):
        compile_schema(_sig("Budget", model))


# -- names, cache, meta-schema ----------------------------------------------------------------


@pytest.mark.parametrize(
    "class_name", ["Plain", "Ünïcödé Sig", "with spaces & symbols!", "x" * 100, "a.b.c", "_"]
)
def test_name_is_valid_for_odd_class_names(class_name: str) -> None:
    compiled = compile_schema(build_signature(class_name, {}, {"out": (int, Field())}))
    assert re.fullmatch(r"^[a-zA-Z0-9_-]{1,64}$", compiled.name), compiled.name
    assert compiled.response_format["json_schema"]["name"] == compiled.name


def test_name_follows_class_name() -> None:
    assert compile_schema(Decide).name == "Decide"


def test_cache_returns_identical_object() -> None:
    first = compile_schema(Decide)
    assert compile_schema(Decide) is first
    assert compile_schema(Decide, target="openai-strict") is first
    other = compile_schema(Decide, target="json-schema")
    assert other is not first
    assert compile_schema(Decide, target="json-schema") is other


def test_compiled_schema_fields() -> None:
    compiled = compile_schema(Decide)
    assert isinstance(compiled, CompiledSchema)
    assert (compiled.target, compiled.strict) == ("openai-strict", True)
    assert compiled.output_model is Decide.output_model
    assert compiled.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "Decide", "schema": compiled.schema, "strict": True},
    }


def test_unknown_target_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="unknown schema target 'gemini'"):
        compile_schema(Decide, target="gemini")


def test_non_class_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="takes a Signature subclass or a Pydantic model"):
        compile_schema(int)


def test_signature_base_class_is_rejected() -> None:
    with pytest.raises(SchemaError):
        compile_schema(Signature)


def test_pydantic_model_with_union_compiles_with_tags() -> None:
    compiled = compile_schema(Holder)
    branches = compiled.schema["properties"]["choice"]["anyOf"]
    consts = [resolve(compiled.schema, b)["properties"]["_type"]["const"] for b in branches]
    assert consts == ["A", "B"]
    value = compiled.output_model.model_validate({"choice": {"_type": "B", "b": "x"}})
    assert value.choice == B(b="x")  # type: ignore[attr-defined]


def test_user_annotated_discriminator_inside_list_gets_no_tag() -> None:
    sig = _sig("PetList", list[Annotated[Cat | Dog, Field(discriminator="kind")]])
    schema = strict(sig)
    assert "_type" not in json.dumps(schema)
    assert union_tags(schema, frozenset({"kind"})) == []
