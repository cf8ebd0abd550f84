"""Signature classes: field markers, instructions, output model, definition-time errors."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
    ValidationError,
)

from typedspy.errors import ConfigurationError, SchemaError
from typedspy.schema import compile_schema
from typedspy.signature import (
    FieldTexts,
    InputField,
    OutputField,
    Signature,
    make_signature,
    with_texts,
)


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
    past: list[str] = InputField(default_factory=list, max_length=3)
    action: SpawnTask | CompleteTask | Continue = OutputField(description="the next step")
    confidence: float = OutputField(ge=0, le=1)
    summary: str = OutputField(max_length=5)


class Undocumented(Signature):
    question: str = InputField()
    context: list[str] = InputField()
    answer: int = OutputField()
    reason: str = OutputField()


# -- fields accept Pydantic Field arguments --------------------------------------------------


def test_field_descriptions_are_kept() -> None:
    assert Decide.input_fields["task"].description == "what the user asked for"
    assert Decide.output_fields["action"].description == "the next step"


def test_output_constraints_are_enforced_by_output_model() -> None:
    model = Decide.output_model
    action = {"_type": "Continue", "reason": "wait"}
    ok = model.model_validate({"action": action, "confidence": 1, "summary": "short"})
    assert ok.confidence == 1.0
    with pytest.raises(ValidationError) as too_big:
        model.model_validate({"action": action, "confidence": 1.5, "summary": "short"})
    assert [e["loc"] for e in too_big.value.errors()] == [("confidence",)]
    assert too_big.value.errors()[0]["type"] == "less_than_equal"
    with pytest.raises(ValidationError) as too_small:
        model.model_validate({"action": action, "confidence": -0.1, "summary": "short"})
    assert too_small.value.errors()[0]["type"] == "greater_than_equal"
    with pytest.raises(ValidationError) as too_long:
        model.model_validate({"action": action, "confidence": 0.5, "summary": "toolong"})
    assert too_long.value.errors()[0]["loc"] == ("summary",)
    assert too_long.value.errors()[0]["type"] == "string_too_long"


def test_input_constraints_are_enforced_by_input_model() -> None:
    model = Decide.input_model
    assert model.model_validate({"task": "t"}).model_dump() == {"task": "t", "past": []}
    with pytest.raises(ValidationError) as exc:
        model.model_validate({"task": "t", "past": ["a", "b", "c", "d"]})
    assert exc.value.errors()[0]["loc"] == ("past",)


# -- instructions --------------------------------------------------------------------------


def test_docstring_becomes_instructions() -> None:
    assert Decide.instructions == "Decide the agent's next action."


def test_multiline_docstring_is_dedented() -> None:
    class Sig(Signature):
        """Summarise the text.

            Keep it short.
        Use plain words.
        """

        text: str = InputField()
        summary: str = OutputField()

    assert Sig.instructions == "Summarise the text.\n\n    Keep it short.\nUse plain words."


def test_default_instructions_without_docstring() -> None:
    text = Undocumented.instructions
    assert text == "Given the fields `question`, `context`, produce the fields `answer`, `reason`."


def test_default_instructions_not_inherited_from_base_docstring() -> None:
    assert "Declare a module's contract" not in Undocumented.instructions


# -- order and models ----------------------------------------------------------------------


def test_field_order_is_declaration_order() -> None:
    class Mixed(Signature):
        z_in: str = InputField()
        b_out: int = OutputField()
        a_in: str = InputField()
        y_out: str = OutputField()
        c_out: bool = OutputField()

    assert list(Mixed.input_fields) == ["z_in", "a_in"]
    assert list(Mixed.output_fields) == ["b_out", "y_out", "c_out"]
    assert list(Mixed.output_model.model_fields) == ["b_out", "y_out", "c_out"]
    assert list(Mixed.input_model.model_fields) == ["z_in", "a_in"]


def test_output_model_is_one_pydantic_model_of_the_outputs() -> None:
    model = Decide.output_model
    assert isinstance(model, type)
    assert issubclass(model, BaseModel)
    assert set(model.model_fields) == {"action", "confidence", "summary"}
    assert "task" not in model.model_fields
    value = model.model_validate(
        {"action": {"task_id": "7", "result": "done"}, "confidence": "0.25", "summary": "ok"}
    )
    assert type(value.action) is CompleteTask
    assert value.confidence == 0.25


def test_output_model_is_stable_per_class() -> None:
    assert Decide.output_model is Decide.output_model
    assert Decide.input_model is Decide.input_model


def test_introspection_returns_copies() -> None:
    fields = Decide.output_fields
    fields.pop("action")
    assert "action" in Decide.output_fields


def test_signature_base_is_not_a_signature() -> None:
    with pytest.raises(SchemaError):
        _ = Signature.output_fields


def test_signature_without_inputs_is_allowed() -> None:
    class OnlyOut(Signature):
        value: int = OutputField()

    assert OnlyOut.input_fields == {}
    assert list(OnlyOut.output_fields) == ["value"]


# -- errors at class definition -----------------------------------------------------------


def test_no_output_field_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="declares no output field"):

        class NoOutput(Signature):
            question: str = InputField()


def test_field_without_marker_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match=r"Unmarked\.plain has no role") as exc:

        class Unmarked(Signature):
            question: str = InputField()
            answer: str = OutputField()
            plain: int = 3

    assert exc.value.path == ("plain",)


def test_field_without_marker_or_default_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="has no role"):

        class Bare(Signature):
            answer: str = OutputField()
            plain: int


def test_field_marked_both_in_annotation_and_default_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="both as an input and as an output") as exc:

        class Both(Signature):
            x: Annotated[int, OutputField()] = InputField()

    assert exc.value.path == ("x",)


def test_field_marked_both_inside_annotation_is_a_schema_error() -> None:
    with pytest.raises(SchemaError, match="both as an input and as an output"):

        class Both2(Signature):
            y: str = OutputField()
            x: Annotated[int, InputField(), OutputField()]


class _TaggedByUser(BaseModel):
    kind: str = Field(alias="_type")


class _Plain(BaseModel):
    value: int


def test_union_member_declaring_type_alias_is_a_schema_error() -> None:
    with pytest.raises(SchemaError) as exc:

        class Clash(Signature):
            out: _TaggedByUser | _Plain = OutputField()

    message = str(exc.value)
    assert "_TaggedByUser" in message
    assert "'_type'" in message
    assert "rename it" in message
    assert "'kind'" in message


def test_union_member_declaring_type_validation_alias_is_a_schema_error() -> None:
    class ByValidationAlias(BaseModel):
        tag: str = Field(validation_alias="_type")

    with pytest.raises(SchemaError, match=r"ByValidationAlias\.tag uses the name '_type'"):

        class Clash2(Signature):
            out: list[ByValidationAlias | _Plain] = OutputField()


def test_union_member_reading_alias_choices_parses() -> None:
    # `AliasChoices` and `AliasPath` are unhashable: the `_type` check put them in a set and
    # the class statement raised a bare TypeError.
    class Refund(BaseModel):
        order_id: str = Field(validation_alias=AliasChoices("order_id", "orderId"))
        note: str = Field(validation_alias=AliasChoices(AliasPath("meta", "note"), "note"))

    class Route(Signature):
        out: Refund | _Plain = OutputField()

    data = {"out": {"_type": "Refund", "orderId": "7", "meta": {"note": "late"}}}
    out = Route.output_model.model_validate(data).out
    assert isinstance(out, Refund)
    assert (out.order_id, out.note) == ("7", "late")
    # What the schema asks for is read too: the first one-key alias of each field.
    asked = {"out": {"_type": "Refund", "order_id": "7", "note": "late"}}
    assert Route.output_model.model_validate(asked).out == out


@pytest.mark.parametrize(
    "read", [AliasPath("meta", "note"), AliasPath("a", "b"), AliasChoices(AliasPath("x", "y"))]
)
def test_an_output_field_read_only_through_a_path_is_a_schema_error(
    read: AliasPath | AliasChoices,
) -> None:
    # The JSON schema names one key per field (the field's name, for a path): every reply
    # written to it was refused ("meta.note: Field required"), found by the llguidance corpus.
    class Refund(BaseModel):
        note: str = Field(validation_alias=read)

    with pytest.raises(SchemaError, match=r"Route\.out: Refund\.note is read only from a nested"):

        class Route(Signature):
            out: Refund | _Plain = OutputField()

    class ByName(Refund):
        model_config = ConfigDict(validate_by_name=True)

    class Fine(Signature):
        out: ByName = OutputField()

    assert Fine.output_model.model_validate({"out": {"note": "late"}}).out.note == "late"


@pytest.mark.parametrize(
    "read",
    [AliasChoices("kind", "_type"), AliasChoices("kind", AliasPath("_type", 0))],
    ids=["choices", "path"],
)
def test_union_member_reading_type_through_choices_or_a_path_is_a_schema_error(
    read: AliasChoices | AliasPath,
) -> None:
    class Tagged(BaseModel):
        tag: str = Field(validation_alias=read)

    with pytest.raises(SchemaError, match=r"Tagged\.tag uses the name '_type'"):

        class Clash4(Signature):
            out: Tagged | _Plain = OutputField()


def test_a_root_model_union_member_of_an_output_is_a_schema_error() -> None:
    # A RootModel holds no keys, so its tagged schema was an object of `_type` alone: the model
    # was asked for no value at all. As an input it is only rendered, and stays usable.
    class Count(RootModel[int]):
        pass

    class Clash3(Signature):
        out: Count | _Plain = OutputField()

    with pytest.raises(SchemaError, match=r"Count is a union member whose values are no JSON"):
        compile_schema(Clash3)

    class Given(Signature):
        count: Count | _Plain = InputField()
        out: str = OutputField()

    assert compile_schema(Given).schema["required"] == ["out"]


def test_type_alias_outside_a_union_is_allowed() -> None:
    class Single(Signature):
        out: _TaggedByUser = OutputField()

    value = Single.output_model.model_validate({"out": {"_type": "x"}})
    assert value.out.kind == "x"


def test_schema_error_is_a_type_error() -> None:
    assert issubclass(SchemaError, TypeError)


def test_texts_naming_no_field_are_refused_each_named() -> None:
    sig = make_signature("question -> answer")
    texts = FieldTexts(
        inputs={"questoin": "x"}, outputs={"answer": "y", "nope": "z"}, members={"Ghost": "g"}
    )
    with pytest.raises(ConfigurationError) as caught:
        with_texts(sig, texts)
    assert str(caught.value) == (
        "inputs.questoin: QuestionToAnswer has no input 'questoin'; "
        "outputs.nope: QuestionToAnswer has no output 'nope'; "
        "members.Ghost: QuestionToAnswer has no member 'Ghost'"
    )


def test_a_signature_deferring_its_build_is_checked_and_built_when_declared() -> None:
    class Deferred(Signature):
        model_config = ConfigDict(defer_build=True)

        question: str = InputField()
        answer: int = OutputField()

    assert Deferred.output_model.model_validate({"answer": "3"}).answer == 3  # type: ignore[attr-defined]
