"""`make_signature`: the "inputs -> outputs" shorthand."""

from __future__ import annotations

import enum
from typing import Literal, Optional, Union

import pytest
from pydantic import BaseModel, ValidationError

from typedspy.errors import SchemaError
from typedspy.signature import InputField, OutputField, Signature, build_signature, make_signature


class Point(BaseModel):
    x: int
    y: int


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


def _annotations(fields: dict[str, object]) -> dict[str, object]:
    return {name: info.annotation for name, info in fields.items()}  # type: ignore[attr-defined]


def test_question_context_answer() -> None:
    sig = make_signature("question, context: list[str] -> answer: int")
    assert issubclass(sig, Signature)
    assert _annotations(sig.input_fields) == {"question": str, "context": list[str]}
    assert _annotations(sig.output_fields) == {"answer": int}
    assert sig.output_model.model_validate({"answer": "42"}).answer == 42
    assert sig.__name__ == "QuestionContextToAnswer"


def test_string_signatures_are_named_after_their_fields_so_they_differ() -> None:
    names = {
        make_signature(spec).__name__
        for spec in ("question -> answer", "text -> summary", "user_query -> answer_text: int")
    }
    assert names == {"QuestionToAnswer", "TextToSummary", "UserQueryToAnswerText"}
    assert make_signature("a -> b", name="Custom").__name__ == "Custom"
    long = make_signature(", ".join(f"field_{i}" for i in range(20)) + " -> out")
    assert len(long.__name__) == 64


def test_default_instructions_and_explicit_instructions() -> None:
    plain = make_signature("question -> answer")
    assert plain.instructions == "Given the fields `question`, produce the fields `answer`."
    told = make_signature("question -> answer", instructions="Answer briefly.", name="QA")
    assert told.instructions == "Answer briefly."
    assert told.__name__ == "QA"


def test_untyped_fields_are_strings() -> None:
    sig = make_signature("a, b -> c")
    assert _annotations(sig.input_fields) == {"a": str, "b": str}
    assert _annotations(sig.output_fields) == {"c": str}


def test_optional_literal_dict_and_union_types() -> None:
    sig = make_signature(
        "q -> a: Optional[int], b: Literal['x', 'y'], c: dict[str, list[int]], "
        "d: int | None, e: Union[int, str], f: tuple[int, ...]"
    )
    assert _annotations(sig.output_fields) == {
        "a": Optional[int],  # noqa: UP045
        "b": Literal["x", "y"],
        "c": dict[str, list[int]],
        "d": Optional[int],  # noqa: UP045
        "e": Union[int, str],  # noqa: UP007
        "f": tuple[int, ...],
    }
    model = sig.output_model
    good = {"a": None, "b": "y", "c": {"k": [1, 2]}, "d": 3, "e": "s", "f": [1, 2]}
    value = model.model_validate(good)
    assert value.b == "y"
    assert value.c == {"k": [1, 2]}
    with pytest.raises(ValidationError) as exc:
        model.model_validate({**good, "b": "z"})
    assert exc.value.errors()[0]["loc"] == ("b",)


def test_literal_with_mixed_constants() -> None:
    sig = make_signature("q -> a: Literal[1, 'one', None, True]")
    assert _annotations(sig.output_fields) == {"a": Literal[1, "one", None, True]}


def test_unknown_type_name_names_it() -> None:
    with pytest.raises(SchemaError, match="unknown type name 'Foo' for field 'answer'") as exc:
        make_signature("question -> answer: Foo")
    assert exc.value.path == ("answer",)
    assert "types=" in str(exc.value)


def test_unknown_type_name_nested_in_generic() -> None:
    with pytest.raises(SchemaError, match="unknown type name 'Widget'"):
        make_signature("q -> items: list[Optional[Widget]]")


def test_user_types_via_types_argument() -> None:
    sig = make_signature(
        "q -> where: Point, path: list[Point], mood: Mood, fixed: Literal[Mood.HAPPY]",
        types={"Point": Point, "Mood": Mood},
    )
    assert _annotations(sig.output_fields) == {
        "where": Point,
        "path": list[Point],
        "mood": Mood,
        "fixed": Literal[Mood.HAPPY],
    }
    value = sig.output_model.model_validate(
        {"where": {"x": 1, "y": 2}, "path": [], "mood": "sad", "fixed": Mood.HAPPY}
    )
    assert value.where == Point(x=1, y=2)
    assert value.mood is Mood.SAD


def test_typing_module_attribute_access() -> None:
    sig = make_signature("q -> a: typing.Optional[int]")
    assert _annotations(sig.output_fields) == {"a": Optional[int]}  # noqa: UP045


def test_user_union_of_models_gets_tags() -> None:
    class Yes(BaseModel):
        because: str

    class No(BaseModel):
        why_not: str

    sig = make_signature("q -> verdict: Yes | No", types={"Yes": Yes, "No": No})
    value = sig.output_model.model_validate({"verdict": {"_type": "No", "why_not": "x"}})
    assert type(value.verdict) is No


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("question answer", "exactly one '->'"),
        ("", "exactly one '->'"),
        ("a -> b -> c", "exactly one '->'"),
        ("q -> ", "declares no output field"),
        ("q -> 1a: int", "'1a' is not a valid field name"),
        ("q -> a-b", "not a valid field name"),
        ("q -> a: int, a: str", "field 'a' is declared twice"),
        ("q, q -> a", "field 'q' is declared twice"),
        ("q -> q", "field 'q' is both an input and an output"),
        ("q -> a: list[", "cannot read the type of field 'a'"),
        ("q -> a: __import__('os')", "unsupported type expression for field 'a'"),
        ("q -> a: int()", "unsupported type expression"),
        ("q -> a: lambda: 1", "unsupported type expression"),
        ("q -> a: int.__class__", "unsupported type expression"),
        ("q -> a: 3", "3 is not a type"),
        ("q -> a: 'Point'", "'Point' is not a type"),
        ("q -> a: list[3]", "3 is not a type"),
        ("q -> a: list[int][str]", "invalid type for field 'a'"),
    ],
)
def test_malformed_strings_raise_schema_error(spec: str, match: str) -> None:
    with pytest.raises(SchemaError, match=match):
        make_signature(spec)


def test_build_signature_refuses_a_name_among_both_inputs_and_outputs() -> None:
    with pytest.raises(SchemaError, match=r"QA\.q: a field cannot be both an input") as caught:
        build_signature("QA", {"q": (str, InputField())}, {"q": (str, OutputField())})
    assert caught.value.path == ("q",)


def test_nothing_is_evaluated() -> None:
    calls: list[str] = []

    class Spy:
        def __class_getitem__(cls, item: object) -> object:
            calls.append("getitem")
            return int

    with pytest.raises(SchemaError):
        make_signature("q -> a: Spy[print('hi')]", types={"Spy": Spy})
    assert calls == []
