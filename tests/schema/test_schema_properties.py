"""Generated signatures: every compiled schema is meta-valid, strict, and round-trips.

A seeded generator composes ~40 signatures from scalars with constraints, Literals, enums,
Optional, lists, nested models, unions of 2-4 models in various positions (some with
colliding class names), recursive models, user-discriminated unions and dicts. For each, an
instance is generated from the compiled strict schema, sent through `parse_outputs` as JSON
text, and `to_jsonable` of every parsed field must give the generated data back.
"""

from __future__ import annotations

import datetime
import enum
import json
import random
import uuid
from typing import Annotated, Any, ClassVar, Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field, create_model
from strict_walkers import all_strict_problems, resolve, sdk_changes

from typedspy.parse import parse_outputs
from typedspy.schema import compile_schema
from typedspy.schema.targets._openai_rules import check_openai_strict
from typedspy.signature import Signature, build_signature, to_jsonable
from typedspy.testing._datagen import generate_instance

N_SIGNATURES = 40
SEEDS = range(5)


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"
    MEH = "meh"


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: float


class Node(BaseModel):
    label: str
    children: list[Node | Leaf]


class Leaf(BaseModel):
    weight: Annotated[int, Field(ge=0, le=9)]


Node.model_rebuild()

SCALARS: list[Any] = [
    str,
    int,
    float,
    bool,
    Annotated[int, Field(ge=0, le=100)],
    Annotated[float, Field(gt=0, lt=1)],
    Annotated[int, Field(multiple_of=5)],
    Literal["red", "green", "blue"],
    Literal[1, 2, 3],
    Mood,
    datetime.date,
    datetime.datetime,
    uuid.UUID,
    Annotated[str, Field(pattern=r"^[a-z]+$")],
    Annotated[list[int], Field(min_length=1, max_length=3)],
]


class _Builder:
    """Composes annotations within a nesting budget (OpenAI allows 10 levels).

    ``budget`` is how many schema levels may still be opened below the current one; every
    model the builder creates has a name unique to the signature.
    """

    COSTS: ClassVar[dict[str, int]] = {
        "optional": 1,
        "list": 1,
        "model": 2,
        "union": 3,
        "dict": 3,
        "recursive": 6,
        "pets": 2,
    }

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.count = 0

    def name(self, stem: str = "M") -> str:
        self.count += 1
        return f"{stem}{self.seed}x{self.count}"

    def model(self, budget: int, name: str | None = None) -> type[BaseModel]:
        fields = {f"f{i}": (self.annotation(budget), ...) for i in range(self.rng.randint(1, 3))}
        model: type[BaseModel] = create_model(name or self.name(), **fields)  # type: ignore[call-overload]
        return model

    def union(self, budget: int) -> Any:
        members = [self.model(budget) for _ in range(self.rng.randint(2, 4))]
        if self.rng.random() < 0.3:  # two members with the same class name, in namespaces
            twin_a, twin_b = self.model(budget, "Item"), self.model(budget, "Item")
            twin_a.__qualname__, twin_b.__qualname__ = "Left.Item", "Right.Item"
            members[:2] = [twin_a, twin_b]
        union = members[0]
        for m in members[1:]:
            union = union | m
        return union

    def annotation(self, budget: int) -> Any:
        kinds = ["scalar"] * 4
        kinds += [k for k, cost in self.COSTS.items() if cost <= budget]
        kinds += ["union"] if budget >= self.COSTS["union"] else []
        kind = self.rng.choice(kinds)
        if kind == "scalar":
            return self.rng.choice(SCALARS)
        if kind == "optional":
            return Optional[self.annotation(budget - 1)]  # noqa: UP045
        if kind == "list":
            return list[self.annotation(budget - 1)]  # type: ignore[misc]
        if kind == "model":
            return self.model(budget - 2)
        if kind == "union":
            return self.placed_union(budget)
        if kind == "dict":
            return dict[str, self.annotation(budget - 3)]  # type: ignore[misc]
        if kind == "recursive":
            return Node
        return Annotated[Cat | Dog, Field(discriminator="kind")]

    def placed_union(self, budget: int) -> Any:
        """A union of models: plain, in a list, Optional, or as dict values."""
        where = self.rng.choice(["plain", "list", "optional", "dict"])
        extra = {"plain": 0, "list": 1, "optional": 0, "dict": 2}[where]
        if budget - extra < self.COSTS["union"]:
            where, extra = "plain", 0
        union = self.union(budget - extra - 3)
        if where == "list":
            return list[union]  # type: ignore[valid-type]
        if where == "optional":
            return Optional[union]  # noqa: UP045
        if where == "dict":
            return dict[str, union]  # type: ignore[valid-type]
        return union

    def signature(self) -> type[Signature]:
        outputs = {f"out{i}": (self.annotation(8), Field()) for i in range(self.rng.randint(1, 5))}
        # Every signature exercises at least one tagged union.
        outputs["act"] = (self.placed_union(8), Field(description="the action"))
        return build_signature(f"Gen{self.seed}", {"q": (str, Field())}, outputs)


_SIGNATURES: dict[int, type[Signature]] = {}


def signature(seed: int) -> type[Signature]:
    if seed not in _SIGNATURES:
        _SIGNATURES[seed] = _Builder(seed).signature()
    return _SIGNATURES[seed]


def _tag_keys(sig: type[Signature]) -> frozenset[str]:
    text = json.dumps(compile_schema(sig, target="json-schema").schema)
    return frozenset({"_type", "kind"}) if '"kind"' in text else frozenset({"_type"})


@pytest.mark.parametrize("seed", range(N_SIGNATURES))
def test_compiled_schemas_are_meta_valid(seed: int) -> None:
    sig = signature(seed)
    for target in ("openai-strict", "json-schema"):
        Draft202012Validator.check_schema(compile_schema(sig, target=target).schema)


@pytest.mark.parametrize("seed", range(N_SIGNATURES))
def test_compiled_schemas_obey_strict_rules(seed: int) -> None:
    sig = signature(seed)
    compiled = compile_schema(sig)
    assert all_strict_problems(compiled.schema, _tag_keys(sig)) == []
    assert check_openai_strict(compiled.schema, name=compiled.name) == []
    assert sdk_changes(compiled.schema) is False


def _is_pairs(node: dict[str, Any], schema: dict[str, Any]) -> bool:
    items = node.get("items")
    if node.get("type") != "array" or not isinstance(items, dict):
        return False
    item = resolve(schema, items)
    return list(item.get("properties", {})) == ["key", "value"] and "key/value pairs" in node.get(
        "description", ""
    )


def _branch_for(
    data: Any, branches: list[dict[str, Any]], schema: dict[str, Any]
) -> dict[str, Any]:
    json_type = {
        type(None): "null",
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }[type(data)]
    resolved = [resolve(schema, b) for b in branches]
    if isinstance(data, dict) and "_type" in data:
        for branch in resolved:
            if branch.get("properties", {}).get("_type", {}).get("const") == data["_type"]:
                return branch
    for branch in resolved:
        kind = branch.get("type")
        if kind == json_type or (kind == "number" and json_type == "integer"):
            return branch
        if kind is None and "anyOf" in branch:
            return branch
    return resolved[0]


def normalise(data: Any, node: dict[str, Any], schema: dict[str, Any]) -> Any:
    """Generated data in the shape `to_jsonable` gives: key/value pair lists become dicts."""
    node = resolve(schema, node)
    if "anyOf" in node:
        return normalise(data, _branch_for(data, node["anyOf"], schema), schema)
    if isinstance(data, list) and _is_pairs(node, schema):
        value_node = resolve(schema, node["items"])["properties"]["value"]
        return {p["key"]: normalise(p["value"], value_node, schema) for p in data}
    if isinstance(data, list) and isinstance(node.get("items"), dict):
        return [normalise(v, node["items"], schema) for v in data]
    if isinstance(data, dict) and isinstance(node.get("properties"), dict):
        props = node["properties"]
        return {k: normalise(v, props[k], schema) if k in props else v for k, v in data.items()}
    return data


def _field_annotation(sig: type[Signature], name: str) -> Any:
    info = sig.output_fields[name]
    return Annotated[info.annotation, info] if info.discriminator is not None else info.annotation


@pytest.mark.parametrize("seed", range(N_SIGNATURES))
def test_generated_instances_round_trip(seed: int) -> None:
    sig = signature(seed)
    schema = compile_schema(sig).schema
    validator = Draft202012Validator(schema)
    for instance_seed in SEEDS:
        data = generate_instance(schema, seed=instance_seed)
        assert isinstance(data, dict)
        assert list(validator.iter_errors(data)) == []
        result = parse_outputs(sig, json.dumps(data))
        assert result.ok, (instance_seed, result.error, data)
        assert result.value is not None
        assert list(result.value) == list(sig.output_fields)
        for name, value in result.value.items():
            expected = normalise(data[name], schema["properties"][name], schema)
            assert to_jsonable(value, _field_annotation(sig, name)) == expected, name


def test_generator_covers_the_intended_shapes() -> None:
    texts = [json.dumps(compile_schema(signature(s)).schema) for s in range(N_SIGNATURES)]
    joined = "\n".join(texts)
    assert "key/value pairs" in joined  # dicts
    assert '"const": "Node"' in joined  # recursive model in a union
    assert '"const": "Left.Item"' in joined  # namespaced twins
    assert '"kind"' in joined  # user discriminator
    assert '{"type": "null"}' in joined  # Optional
    assert '"enum": ["happy", "sad", "meh"]' in joined
    assert '"multipleOf": 5' in joined
    assert sum('"_type"' in t for t in texts) == N_SIGNATURES
    union_sizes = {t.count('"const"') for t in texts}
    assert max(union_sizes) >= 4
