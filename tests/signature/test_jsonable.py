"""`to_jsonable`: JSON-ready data, union members carrying their `_type`."""

from __future__ import annotations

import datetime
import enum
import json
import uuid
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, Discriminator, Field

from typedspy.signature import to_jsonable


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class Continue(BaseModel):
    reason: str


class Tasks:
    class Created(BaseModel):
        task_id: str


class Events:
    class Created(BaseModel):
        event_id: str


class Color(enum.Enum):
    RED = "red"


class Aliased(BaseModel):
    user_name: str = Field(alias="userName")
    secret: str = Field(default="s", exclude=True)


class Envelope(BaseModel):
    action: SpawnTask | Continue
    steps: list[SpawnTask | Continue]
    plain: Continue


class Cat(BaseModel):
    kind: Literal["cat"]
    meows: int


class Dog(BaseModel):
    kind: Literal["dog"]
    barks: float


class Kennel(BaseModel):
    pet: Cat | Dog = Field(discriminator="kind")


class House(BaseModel):
    pet: Annotated[Cat | Dog, Discriminator("kind")]


SPAWN = SpawnTask(description="ship", priority="high")


def test_union_member_gets_type_first() -> None:
    out = to_jsonable(SPAWN, SpawnTask | Continue)
    assert out == {"_type": "SpawnTask", "description": "ship", "priority": "high"}
    assert next(iter(out)) == "_type"


def test_untyped_model_gets_type() -> None:
    assert to_jsonable(Continue(reason="r")) == {"_type": "Continue", "reason": "r"}


def test_model_annotated_as_itself_gets_no_type() -> None:
    assert to_jsonable(Continue(reason="r"), Continue) == {"reason": "r"}


def test_qualified_names_when_ambiguous() -> None:
    union = Tasks.Created | Events.Created
    assert to_jsonable(Tasks.Created(task_id="1"), union) == {
        "_type": "Tasks.Created",
        "task_id": "1",
    }
    assert to_jsonable(Events.Created(event_id="2"), union) == {
        "_type": "Events.Created",
        "event_id": "2",
    }


def test_simple_name_when_unique_in_union() -> None:
    assert to_jsonable(Tasks.Created(task_id="1"), Tasks.Created | Continue) == {
        "_type": "Created",
        "task_id": "1",
    }


def test_unions_inside_lists_dicts_optional_and_annotated() -> None:
    union = SpawnTask | Continue
    tagged = {"_type": "Continue", "reason": "r"}
    assert to_jsonable([Continue(reason="r")], list[union]) == [tagged]
    assert to_jsonable({"k": Continue(reason="r")}, dict[str, union]) == {"k": tagged}
    assert to_jsonable(Continue(reason="r"), Optional[union]) == tagged  # noqa: UP045
    assert to_jsonable(None, Optional[union]) is None  # noqa: UP045
    assert to_jsonable(Continue(reason="r"), Annotated[union, "meta"]) == tagged


def test_nested_model_fields_follow_their_annotations() -> None:
    env = Envelope(action=SPAWN, steps=[Continue(reason="a"), SPAWN], plain=Continue(reason="p"))
    assert to_jsonable(env, Envelope) == {
        "action": {"_type": "SpawnTask", "description": "ship", "priority": "high"},
        "steps": [
            {"_type": "Continue", "reason": "a"},
            {"_type": "SpawnTask", "description": "ship", "priority": "high"},
        ],
        "plain": {"reason": "p"},
    }


def test_user_discriminated_union_gets_no_type() -> None:
    union = Annotated[Cat | Dog, Field(discriminator="kind")]
    assert to_jsonable(Dog(kind="dog", barks=1.5), union) == {"kind": "dog", "barks": 1.5}
    kennel = Kennel(pet=Cat(kind="cat", meows=2))
    assert to_jsonable(kennel, Kennel) == {"pet": {"kind": "cat", "meows": 2}}
    by_object = Annotated[Cat | Dog, Discriminator("kind")]
    assert to_jsonable(Dog(kind="dog", barks=1.5), by_object) == {"kind": "dog", "barks": 1.5}
    house = House(pet=Cat(kind="cat", meows=2))  # on main: {"_type": "Cat", ...} inside
    assert to_jsonable(house, House) == {"pet": {"kind": "cat", "meows": 2}}


def test_aliases_and_excluded_fields() -> None:
    out = to_jsonable(Aliased(userName="ann"), Aliased)
    assert out == {"userName": "ann"}


def test_scalars_become_json_values() -> None:
    value = {
        "when": datetime.date(2024, 1, 2),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "color": Color.RED,
        "tags": {"only"},
        "pair": (1, "x"),
    }
    out = to_jsonable(value)
    assert out == {
        "when": "2024-01-02",
        "id": "12345678-1234-5678-1234-567812345678",
        "color": "red",
        "tags": ["only"],
        "pair": [1, "x"],
    }
    json.dumps(out)


def test_tuple_annotation_per_position() -> None:
    union = SpawnTask | Continue
    out = to_jsonable((Continue(reason="r"), 3), tuple[union, int])
    assert out == [{"_type": "Continue", "reason": "r"}, 3]


def test_output_is_json_serialisable() -> None:
    env = Envelope(action=SPAWN, steps=[SPAWN], plain=Continue(reason="p"))
    text = json.dumps(to_jsonable(env))
    assert json.loads(text)["_type"] == "Envelope"


def test_a_field_excluded_by_exclude_if_is_left_out_as_model_dump_leaves_it() -> None:
    class Note(BaseModel):
        text: str
        extra: str | None = Field(default=None, exclude_if=lambda v: v is None)

    assert to_jsonable(Note(text="a"), Note) == Note(text="a").model_dump() == {"text": "a"}
    assert to_jsonable(Note(text="a", extra="b"), Note) == {"text": "a", "extra": "b"}
