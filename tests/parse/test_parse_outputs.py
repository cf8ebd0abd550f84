"""`parse_outputs` / `validate_outputs`: typed values or a failure, never an exception."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import AfterValidator, BaseModel, field_validator, model_validator

from typedspy._types import FieldError
from typedspy.parse import ParseFailure, ParseResult, PartialParser, parse_outputs, validate_outputs
from typedspy.signature import InputField, OutputField, Signature, make_signature


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

    task: str = InputField()
    action: SpawnTask | CompleteTask | Continue = OutputField()
    confidence: float = OutputField(ge=0, le=1)


class Notes(Signature):
    title: str = OutputField()
    body: str = OutputField()
    count: int = OutputField()
    steps: list[SpawnTask | Continue] = OutputField()
    scores: dict[str, int] = OutputField()
    maybe: Optional[str] = OutputField(default=None)  # noqa: UP045
    level: Literal["low", "high"] = OutputField(default="low")


def _ok(result: ParseResult) -> dict[str, Any]:
    assert result.ok, result.error
    assert result.error is None
    assert result.value is not None
    return result.value


def _failed(result: ParseResult, kind: str) -> list[FieldError]:
    assert not result.ok
    assert result.value is None
    assert result.error is not None
    assert result.error.kind == kind
    assert result.kind == kind
    return list(result.error.errors)


def _decide(**fields: Any) -> str:
    data = {"action": {"_type": "Continue", "reason": "wait"}, "confidence": 0.5, **fields}
    return json.dumps(data)


# -- values -----------------------------------------------------------------------------------


def test_typed_values_with_users_classes() -> None:
    value = _ok(
        parse_outputs(
            Decide, _decide(action={"_type": "SpawnTask", "description": "d", "priority": "high"})
        )
    )
    assert list(value) == ["action", "confidence"]
    assert type(value["action"]) is SpawnTask
    assert value["action"] == SpawnTask(description="d", priority="high")
    assert value["confidence"] == 0.5


def test_lax_mode_numbers_from_strings() -> None:
    value = _ok(parse_outputs(Decide, _decide(confidence="0.9")))
    assert value["confidence"] == 0.9
    assert isinstance(value["confidence"], float)
    counted = _ok(parse_outputs(Notes, json.dumps({**_NOTES, "count": "7"})))
    assert counted["count"] == 7


def test_literal_is_exact() -> None:
    errors = _failed(
        parse_outputs(
            Decide, _decide(action={"_type": "SpawnTask", "description": "d", "priority": "High"})
        ),
        "validation_failed",
    )
    assert errors == [
        FieldError(("action", "priority"), "Input should be 'low' or 'high', got \"High\"")
    ]


def test_unknown_keys_are_ignored() -> None:
    text = _decide(extra=1, action={"_type": "Continue", "reason": "r", "mood": "calm"})
    value = _ok(parse_outputs(Decide, text))
    assert value == {"action": Continue(reason="r"), "confidence": 0.5}


def test_input_fields_in_the_reply_are_ignored() -> None:
    value = _ok(parse_outputs(Decide, _decide(task="echoed")))
    assert "task" not in value


def test_errors_name_field_paths() -> None:
    text = _decide(
        action={"_type": "SpawnTask", "description": "d", "priority": "urgent"}, confidence=3
    )
    errors = _failed(parse_outputs(Decide, text), "validation_failed")
    assert [e.path for e in errors] == [("action", "priority"), ("confidence",)]
    assert errors[1].message == "Input should be less than or equal to 1, got 3"
    assert str(errors[0]).startswith("action.priority: Input should be 'low' or 'high'")


def test_list_error_paths_use_int_indices() -> None:
    steps = [
        {"_type": "Continue", "reason": "r"},
        {"_type": "SpawnTask", "description": 5, "priority": "low"},
    ]
    errors = _failed(
        parse_outputs(Notes, json.dumps({**_NOTES, "steps": steps})), "validation_failed"
    )
    assert [e.path for e in errors] == [("steps", 1, "description")]
    assert str(errors[0]) == "steps[1].description: Input should be a valid string"


def test_missing_field_is_reported() -> None:
    errors = _failed(parse_outputs(Decide, json.dumps({"confidence": 0.1})), "validation_failed")
    assert errors == [FieldError(("action",), "Field required")]


def test_unknown_type_error_has_no_variant_segment() -> None:
    errors = _failed(
        parse_outputs(Decide, _decide(action={"_type": "Fly", "reason": "r"})), "validation_failed"
    )
    assert errors == [
        FieldError(
            ("action",),
            '_type "Fly" names no member of this union '
            "(expected one of: SpawnTask, CompleteTask, Continue)",
        )
    ]


def test_structural_fallback_through_parse_outputs() -> None:
    value = _ok(parse_outputs(Decide, _decide(action={"task_id": "9", "result": "done"})))
    assert value["action"] == CompleteTask(task_id="9", result="done")


# -- decode vs validation --------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "no json at all", '{"action": ', "I cannot help."])
def test_decode_failed(text: str) -> None:
    errors = _failed(parse_outputs(Decide, text), "decode_failed")
    assert len(errors) == 1
    assert errors[0].path == ()
    assert errors[0].message


def test_non_object_json_is_validation_failed() -> None:
    errors = _failed(parse_outputs(Decide, "[1, 2]"), "validation_failed")
    assert errors == [FieldError((), "expected a JSON object, got list")]


def test_deep_brackets_do_not_crash() -> None:
    result = parse_outputs(Decide, "[" * 50_000 + "]" * 50_000)
    assert not result.ok
    assert result.kind in ("decode_failed", "validation_failed")


def test_prose_and_fences_around_json() -> None:
    text = "Sure!\n```json\n" + _decide(confidence=0.25) + "\n```\nHope that helps."
    assert _ok(parse_outputs(Decide, text))["confidence"] == 0.25


def test_last_candidate_that_validates_wins() -> None:
    text = "draft: " + _decide(confidence=0.1) + " final: " + _decide(confidence=0.2)
    assert _ok(parse_outputs(Decide, text))["confidence"] == 0.2
    text = "draft: " + _decide(confidence=0.1) + " broken: " + _decide(confidence=9)
    assert _ok(parse_outputs(Decide, text))["confidence"] == 0.1


# -- double encoding ------------------------------------------------------------------------


def test_double_encoded_object_field_is_decoded_once() -> None:
    inner = json.dumps({"_type": "Continue", "reason": "r"})
    assert _ok(parse_outputs(Decide, _decide(action=inner)))["action"] == Continue(reason="r")


def test_a_double_encoded_value_deeper_than_the_stack_stays_text() -> None:
    """Within a raised max_json_depth, past what json.loads recurses to: not decoded, no crash."""
    sig = make_signature("q -> v: T", types={"T": list[Any]})
    text = json.dumps({"v": "[" * 3000 + "]" * 3000})
    errors = _failed(parse_outputs(sig, text, max_json_depth=5000), "validation_failed")
    assert errors == [FieldError(("v",), "Input should be a valid list")]


@pytest.mark.parametrize(
    ("text", "max_depth", "error"),
    [
        (
            '{"bad\\q": 1' + "0" * 5000 + ', "v": 1}',
            None,
            FieldError(
                ("bad\\q",),
                "a number of more than 4300 digits; JSON numbers may have at most 4300 "
                "(max_number_digits, sys.set_int_max_str_digits()) (offset 10)",
            ),
        ),
        (
            '{"v": [[], [], [], []',
            3,
            FieldError((), "truncated JSON: unclosed array at offset 6"),
        ),
    ],
    ids=["long-number-under-a-badly-escaped-key", "unclosed-with-many-siblings"],
)
def test_a_decode_failure_says_where(text: str, max_depth: int | None, error: FieldError) -> None:
    sig = make_signature("q -> v: T", types={"T": Any})
    assert _failed(parse_outputs(sig, text, max_json_depth=max_depth), "decode_failed") == [error]


def test_double_encoded_list_and_dict_fields() -> None:
    data = {
        **_NOTES,
        "steps": json.dumps([{"reason": "r"}]),
        "scores": json.dumps([{"key": "a", "value": 1}]),
    }
    value = _ok(parse_outputs(Notes, json.dumps(data)))
    assert value["steps"] == [Continue(reason="r")]
    assert value["scores"] == {"a": 1}


def test_triple_encoded_object_field_is_not_decoded_twice() -> None:
    twice = json.dumps(json.dumps({"_type": "Continue", "reason": "r"}))
    errors = _failed(parse_outputs(Decide, _decide(action=twice)), "validation_failed")
    assert [e.path for e in errors] == [("action",)]


def test_str_field_holding_json_text_stays_a_string() -> None:
    body = '{"not": "decoded"}'
    value = _ok(parse_outputs(Notes, json.dumps({**_NOTES, "body": body})))
    assert value["body"] == body


def test_whole_reply_double_encoded() -> None:
    assert _ok(parse_outputs(Decide, json.dumps(_decide())))["action"] == Continue(reason="wait")


# -- dicts -------------------------------------------------------------------------------------


_NOTES: dict[str, Any] = {
    "title": "t",
    "body": "b",
    "count": 1,
    "steps": [],
    "scores": [{"key": "a", "value": 1}, {"key": "b", "value": 2}],
    "maybe": None,
    "level": "high",
}


def test_dict_pairs_and_plain_objects() -> None:
    assert _ok(parse_outputs(Notes, json.dumps(_NOTES)))["scores"] == {"a": 1, "b": 2}
    plain = {**_NOTES, "scores": {"x": 3}}
    assert _ok(parse_outputs(Notes, json.dumps(plain)))["scores"] == {"x": 3}


# -- user validators that crash ----------------------------------------------------------------


class Fragile(BaseModel):
    n: int

    @field_validator("n")
    @classmethod
    def explode(cls, value: int) -> int:
        raise KeyError("missing lookup")


class Grumpy(BaseModel):
    n: int

    @model_validator(mode="after")
    def explode(self) -> Grumpy:
        raise RuntimeError("bad mood")


class Crashy(Signature):
    fragile: Fragile | None = OutputField(default=None)
    grumpy: Grumpy | None = OutputField(default=None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"fragile": {"n": 1}}', "KeyError while validating: 'missing lookup'"),
        ('Result: {"fragile": {"n": 1}}', "KeyError while validating: 'missing lookup'"),
        ('{"grumpy": {"n": 1}}', "RuntimeError while validating: bad mood"),
        ('[[ ## grumpy ## ]]\n{"n": 1}', "RuntimeError while validating: bad mood"),
    ],
)
def test_user_validator_exception_is_validation_failed(text: str, message: str) -> None:
    errors = _failed(parse_outputs(Crashy, text), "validation_failed")
    assert errors == [FieldError((), message)]


def _depth(value: Any) -> int:
    """A user validator's own recursion: as deep as the value it is given."""
    return 1 + max((_depth(v) for v in value), default=0) if isinstance(value, list) else 0


class Measured(Signature):
    tree: Annotated[Any, AfterValidator(lambda v: (_depth(v), v)[1])] = OutputField()


def _again(value: Any) -> Any:
    return _again(value)


class Bottomless(Signature):
    tree: Annotated[Any, AfterValidator(_again)] = OutputField()


_DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize(
    ("sig", "text"),
    [
        (Measured, f'{{"tree": {_DEEP}}}'),
        (Measured, f'Here:\n```json\n{{"tree": {_DEEP}}}\n```'),
        (Measured, f"[[ ## tree ## ]]\n{_DEEP}"),
        (Bottomless, '{"tree": []}'),
    ],
    ids=["clean", "fenced", "sections", "bottomless-validator"],
)
def test_a_validator_recursing_past_pythons_limit_is_a_decode_failure(
    sig: type[Signature], text: str
) -> None:
    """Within a raised max_json_depth, a user validator that recurses past Python's limit."""
    errors = _failed(parse_outputs(sig, text, max_json_depth=5000), "decode_failed")
    assert errors == [
        FieldError(
            (),
            "output nested too deeply to validate (within max_json_depth 5000, "
            "past Python's recursion limit)",
        )
    ]


def test_a_value_error_shows_an_input_json_cannot_write() -> None:
    loop: list[Any] = []
    loop.append(loop)
    result = validate_outputs(Notes.output_model, {"level": loop})
    assert FieldError(("level",), "Input should be 'low' or 'high', got [[...]]") in result.errors


def test_validate_outputs_never_raises() -> None:
    result = validate_outputs(Crashy.output_model, {"fragile": {"n": 1}})
    assert result.kind == "validation_failed"
    assert result.errors == (FieldError((), "KeyError while validating: 'missing lookup'"),)
    assert validate_outputs(Crashy.output_model, None).errors == (
        FieldError((), "expected a JSON object, got null"),
    )
    good = validate_outputs(Decide.output_model, {"action": {"reason": "r"}, "confidence": 1})
    assert good.ok
    assert good.errors == ()
    assert good.kind is None


# -- [[ ## field ## ]] sections ------------------------------------------------------------------


def test_marker_sections_str_verbatim_others_json() -> None:
    text = (
        "Some preamble the model wrote.\n"
        '[[ ## title ## ]]\n  A title: with {braces} and "quotes"  \n\n'
        "[[ ## body ## ]]\nline one\n    indented line two\n\n"
        "[[ ## count ## ]]\n42\n\n"
        "[[ ## steps ## ]]\n```json\n"
        '[{"_type": "SpawnTask", "description": "d", "priority": "low"}]\n```\n\n'
        '[[ ## scores ## ]]\n{"a": 1}\n\n'
        "[[ ## maybe ## ]]\nsome free text\n\n"
        "[[ ## level ## ]]\nhigh\n\n"
        "[[ ## completed ## ]]\n"
    )
    value = _ok(parse_outputs(Notes, text))
    assert value == {
        "title": 'A title: with {braces} and "quotes"',
        "body": "line one\n    indented line two",
        "count": 42,
        "steps": [SpawnTask(description="d", priority="low")],
        "scores": {"a": 1},
        "maybe": "some free text",
        "level": "high",
    }


def test_marker_sections_naming_no_output_leave_the_json_after_them_to_be_read() -> None:
    text = "[[ ## reasoning ## ]]\nthinking it over\n\n" + _decide()
    assert _ok(parse_outputs(Decide, text))["confidence"] == 0.5


def test_marker_section_that_is_not_json_is_decode_failed() -> None:
    text = "[[ ## title ## ]]\nt\n[[ ## body ## ]]\nb\n[[ ## count ## ]]\nmany\n"
    errors = _failed(parse_outputs(Notes, text), "decode_failed")
    assert [e.path for e in errors] == [("count",)]


def test_marker_sections_are_validated() -> None:
    text = (
        "[[ ## title ## ]]\nt\n[[ ## body ## ]]\nb\n[[ ## count ## ]]\n1\n"
        "[[ ## steps ## ]]\n[]\n[[ ## scores ## ]]\n[]\n[[ ## level ## ]]\nmedium\n"
    )
    errors = _failed(parse_outputs(Notes, text), "validation_failed")
    assert [e.path for e in errors] == [("level",)]


def test_marker_sections_missing_field() -> None:
    text = "[[ ## title ## ]]\nt\n[[ ## body ## ]]\nb\n"
    errors = _failed(parse_outputs(Notes, text), "validation_failed")
    assert {e.path for e in errors} == {("count",), ("steps",), ("scores",)}


def test_optional_str_section_null() -> None:
    text = (
        "[[ ## title ## ]]\nt\n[[ ## body ## ]]\nb\n[[ ## count ## ]]\n1\n"
        "[[ ## steps ## ]]\n[]\n[[ ## scores ## ]]\n[]\n[[ ## maybe ## ]]\nnull\n"
    )
    value = _ok(parse_outputs(Notes, text))
    assert value["maybe"] is None
    assert value["level"] == "low"


def test_parse_result_types() -> None:
    failure = ParseFailure(kind="decode_failed", errors=(FieldError((), "x"),))
    result = ParseResult(error=failure)
    assert (result.ok, result.kind, result.errors) == (False, "decode_failed", failure.errors)
    assert ParseResult(value={}).ok


# -- the depth limit (ADR-048) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [_decide(), "Here it is:\n```json\n" + _decide() + "\n```", _decide().replace('"}', '",}')],
    ids=["clean", "fenced", "lenient"],
)
def test_output_nested_past_max_json_depth_is_a_decode_failure_naming_it(text: str) -> None:
    assert _ok(parse_outputs(Decide, text, max_json_depth=2))["confidence"] == 0.5

    errors = _failed(parse_outputs(Decide, text, max_json_depth=1), "decode_failed")
    assert "nesting deeper than 1 levels (max_json_depth)" in errors[0].message


def test_the_partial_parser_shows_no_value_nested_past_its_limit() -> None:
    text = '{"action": {"_type": "Continue", "reason": "wait"}, "confidence": 0.5}'
    shallow, deep = PartialParser(Decide, max_json_depth=1), PartialParser(Decide)
    for parser in (shallow, deep):
        parser.feed(text)
    assert "action" not in shallow.values() and shallow.values()["confidence"] == 0.5
    assert deep.values()["action"] == Continue(reason="wait")


class Measure(Signature):
    reading: float = OutputField()
    samples: list[float] = OutputField()


@pytest.mark.parametrize(
    "number", ["1e999999", "-1e400", "1E+309", "9.9e0308", "1" + "0" * 400, "1" + "0" * 300 + "e10"]
)
@pytest.mark.parametrize("where", ["reading", "samples"])
def test_a_number_past_a_float_is_refused_clean_or_wrapped(number: str, where: str) -> None:
    # Read as infinity by Pydantic's own JSON reader, so clean JSON was accepted (reading=inf)
    # where the same answer after a word of prose was refused: it is refused both ways, as NaN is.
    reading, samples = (number, "[2.5]") if where == "reading" else ("1.5", f"[2.5, {number}]")
    text = f'{{"reading": {reading}, "samples": {samples}}}'
    path = ("reading",) if where == "reading" else ("samples", 1)
    for completion in (text, f"Result: {text}", f"```json\n{text}\n```"):
        errors = _failed(parse_outputs(Measure, completion), "validation_failed")
        assert [e.path for e in errors] == [path]
        parser = PartialParser(Measure)
        for char in completion:
            parser.feed(char)
        parser.flush()
        assert where not in parser.values()  # the streamed view agrees: never shown as inf


def test_large_finite_and_tiny_numbers_are_still_read() -> None:
    text = '{"reading": 1e308, "samples": [1e-999, 0.' + "0" * 400 + "1, 12e100]}"
    assert _ok(parse_outputs(Measure, text)) == {"reading": 1e308, "samples": [0.0, 0.0, 1.2e101]}
