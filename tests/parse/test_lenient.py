from __future__ import annotations

import json
import math

import pydantic
import pytest

from typedspy._json import MAX_JSON_DEPTH as MAX_DEPTH
from typedspy.parse._lenient import (
    LenientDecodeError,
    NonFinite,
    decode_lenient,
    scan_value,
)


def repaired(text: str) -> bool:
    return scan_value(text, 0)[2]


# --- strict JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [true, false, null], "c": {"d": -1.5e3}}',
        "[]",
        "{}",
        '"just a string"',
        "0",
        "-12",
        "3.25",
        "1E+2",
        "true",
        "null",
        '  {"padded": " with whitespace "}  \n',
    ],
)
def test_strict_json_decodes_like_json_loads_and_is_not_repaired(text: str) -> None:
    assert decode_lenient(text) == json.loads(text)
    assert not repaired(text)


def test_standard_escapes_are_decoded() -> None:
    text = r'"q\" b\\ s\/ \b\f\n\r\t \u00e9 \u20ac"'
    assert decode_lenient(text) == 'q" b\\ s/ \b\f\n\r\t é €'


def test_surrogate_pair_escape_is_combined() -> None:
    assert decode_lenient(r'"\ud83d\ude00"') == "😀"
    assert decode_lenient(r'{"e": "x\uD83D\uDE00y"}') == {"e": "x😀y"}
    assert not repaired(r'"\ud83d\ude00"')


# --- lenient rules -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": 2,}', {"a": 1, "b": 2}),
        ("[1, 2, 3, ]", [1, 2, 3]),
        ('{"a": [1, {"b": [],},],}', {"a": [1, {"b": []}]}),
    ],
)
def test_trailing_commas(text: str, expected: object) -> None:
    assert decode_lenient(text) == expected
    assert repaired(text)


def test_single_quoted_strings() -> None:
    assert decode_lenient("{'name': 'Ann', 'quote': 'say \"hi\"'}") == {
        "name": "Ann",
        "quote": 'say "hi"',
    }
    assert decode_lenient(r"['it\'s']") == ["it's"]
    assert repaired("['a']")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{“name”: “Bob”}", {"name": "Bob"}),
        ("{‘name’: ‘Bob’}", {"name": "Bob"}),
        ("{”name”: 1}", {"name": 1}),
        ('{“text”: “He said "hi"”}', {"text": 'He said "hi"'}),
        ("[“a”, 'b', \"c\"]", ["a", "b", "c"]),
    ],
)
def test_curly_quotes_delimit_strings(text: str, expected: object) -> None:
    assert decode_lenient(text) == expected
    assert repaired(text)


def test_python_literals() -> None:
    assert decode_lenient("{'a': True, 'b': False, 'c': None}") == {
        "a": True,
        "b": False,
        "c": None,
    }
    assert repaired("[True]")
    assert not repaired("[true]")


def test_comments_are_ignored() -> None:
    text = """{
        // the name
        "name": "x", /* inline */ "n": 2 // trailing
        /* block
           comment */
    }"""
    assert decode_lenient(text) == {"name": "x", "n": 2}
    assert repaired(text)
    assert decode_lenient('{"url": "http://example.com/*x*/"}') == {
        "url": "http://example.com/*x*/"
    }


def test_unterminated_block_comment_is_an_error() -> None:
    with pytest.raises(LenientDecodeError, match="unterminated comment"):
        decode_lenient('{"a": 1 /* never closed')


def test_unquoted_keys() -> None:
    assert decode_lenient("{name: 'x', _type: 'y', $ref: 1, snake_case2: 2}") == {
        "name": "x",
        "_type": "y",
        "$ref": 1,
        "snake_case2": 2,
    }
    assert repaired("{a: 1}")


def test_bom_and_zero_width_characters_outside_strings_are_ignored() -> None:
    text = '\ufeff{\u200b"a"\u200c:\u200d 1\u2060,\ufeff"b": 2}'
    assert decode_lenient(text) == {"a": 1, "b": 2}
    assert repaired(text)


def test_bom_and_zero_width_characters_inside_strings_are_kept() -> None:
    assert decode_lenient('{"a": "x\u200by\ufeff"}') == {"a": "x\u200by\ufeff"}


def test_non_finite_tokens_become_non_finite() -> None:
    value = decode_lenient('{"a": NaN, "b": Infinity, "c": -Infinity}')
    assert value == {"a": NonFinite("NaN"), "b": NonFinite("Infinity"), "c": NonFinite("-Infinity")}
    assert repaired("[NaN]")


def test_float_overflow_becomes_non_finite() -> None:
    assert decode_lenient("[1e400, -1e400, 1e-400]") == [
        NonFinite("Infinity"),
        NonFinite("-Infinity"),
        0.0,
    ]
    assert not repaired("[1e400]")


def test_non_finite_is_a_value_object_and_not_a_float() -> None:
    nan = NonFinite("NaN")
    a_float: object = float("nan")
    assert repr(nan) == "NaN"
    assert str(NonFinite("-Infinity")) == "-Infinity"
    assert nan == NonFinite("NaN")
    assert nan != NonFinite("Infinity")
    assert nan != a_float
    assert hash(nan) == hash(NonFinite("NaN"))
    assert not isinstance(nan, float)
    assert len({NonFinite("NaN"), NonFinite("NaN"), NonFinite("Infinity")}) == 2
    with pytest.raises(ValueError, match="not a non-finite token"):
        NonFinite("inf")


def test_numeric_pydantic_fields_reject_non_finite() -> None:
    with pytest.raises(pydantic.ValidationError):
        pydantic.TypeAdapter(float).validate_python(NonFinite("NaN"))
    with pytest.raises(pydantic.ValidationError):
        pydantic.TypeAdapter(int).validate_python(NonFinite("Infinity"))


def test_duplicate_keys_last_wins() -> None:
    assert decode_lenient('{"a": 1, "b": 2, "a": 3}') == {"a": 3, "b": 2}
    assert decode_lenient("{a: 1, 'a': 2}") == {"a": 2}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r'"\ud800"', "\ufffd"),
        (r'"a\udc00b"', "a\ufffdb"),
        (r'"\ud800\u0041"', "\ufffdA"),
        (r'"\udbff\udbff\udfff"', "\ufffd\U0010ffff"),
        (r'["\ud83d", "\ude00"]', ["\ufffd", "\ufffd"]),
    ],
)
def test_lone_surrogate_escapes_become_replacement_character(text: str, expected: object) -> None:
    assert decode_lenient(text) == expected
    assert repaired(text)


def test_raw_control_characters_inside_strings_are_accepted() -> None:
    text = '{"poem": "line one\nline two\tend"}'
    assert decode_lenient(text) == {"poem": "line one\nline two\tend"}
    assert repaired(text)


def test_unknown_escapes_are_kept_verbatim() -> None:
    assert decode_lenient(r'{"path": "C:\Users\me", "re": "\d+"}') == {
        "path": "C:\\Users\\me",
        "re": "\\d+",
    }
    assert decode_lenient(r'"bad \u12 hex"') == "bad \\u12 hex"


def test_non_json_whitespace_between_tokens_is_skipped() -> None:
    text = '{\u00a0"a":\u3000[1,\u20282]}'
    assert decode_lenient(text) == {"a": [1, 2]}
    assert repaired(text)


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty input"),
        ("   \n ", "empty input"),
        ('{"a": 1} extra', "unexpected data after the JSON value at offset 9"),
        ('{"a" 1}', "expected ':' after a property name at offset 5"),
        ('{"a": 1 "b": 2}', "expected ',' or '}' at offset 8"),
        ("[1 2]", "expected ',' or ']' at offset 3"),
        ("{1: 2}", "expected a property name at offset 1"),
        ("[01]", "invalid number at offset 1"),
        ("[1.]", "invalid number at offset 1"),
        ("[undefined]", "unexpected token 'undefined' at offset 1"),
        ("[@]", "unexpected character '@' at offset 1"),
        ("{,}", "expected a property name at offset 1"),
        ("[,]", "unexpected character ',' at offset 1"),
    ],
)
def test_errors_say_what_and_where(text: str, message: str) -> None:
    with pytest.raises(LenientDecodeError) as info:
        decode_lenient(text)
    assert message in str(info.value)
    assert info.value.message == str(info.value)
    assert info.value.kind == "syntax"


def test_too_long_integer_is_an_error_not_a_crash() -> None:
    text = "[" + "9" * 5000 + "]"
    with pytest.raises(LenientDecodeError, match=r"more than 4300 digits.*\(offset 1\)"):
        decode_lenient(text)
    assert decode_lenient("[" + "9" * 400 + ".5]") == [NonFinite("Infinity")]


def test_nesting_up_to_the_limit_is_accepted() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = decode_lenient(text)
    for _ in range(MAX_DEPTH - 1):
        assert isinstance(value, list)
        value = value[0]
    assert value == []
    assert decode_lenient('{"a":' * MAX_DEPTH + "1" + "}" * MAX_DEPTH) is not None


@pytest.mark.parametrize(
    "text",
    [
        "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
        "[" * 50_000 + "]" * 50_000,
        "[" * 50_000,
        '{"a":' * 50_000 + "1" + "}" * 50_000,
        "[{'a': " * 5_000 + "1" + "}]" * 5_000,
    ],
)
def test_deeper_nesting_is_rejected_without_recursion(text: str) -> None:
    with pytest.raises(LenientDecodeError) as info:
        decode_lenient(text)
    assert info.value.kind == "depth"
    assert "nesting deeper than 256 levels" in info.value.message


# --- truncation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1, 2]', {"a": 1, "b": [1, 2]}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": 1, ', {"a": 1}),
        ('{"a": 1 \n', {"a": 1}),
        ('{"a": "x"', {"a": "x"}),
        ('{"a": {"b": 2}', {"a": {"b": 2}}),
        ('{"a": {"b": 2},', {"a": {"b": 2}}),
        ('{"a": true', {"a": True}),
        ('{"a": 12,', {"a": 12}),
        ("{'a': 1, b: [1, 2,],", {"a": 1, "b": [1, 2]}),
        ("{'a': NaN", {"a": NonFinite("NaN")}),
    ],
)
def test_truncation_after_a_complete_root_member_gets_its_brace(
    text: str, expected: object
) -> None:
    assert decode_lenient(text, allow_truncated_root=True) == expected
    value, end, was_repaired = scan_value(text, 0, allow_truncated_root=True)
    assert value == expected
    assert end == len(text)
    assert was_repaired
    with pytest.raises(LenientDecodeError):
        decode_lenient(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": "abc', "unterminated string at offset 6"),
        ("{'a': 'abc", "unterminated string at offset 6"),
        ('{"a": 1, "b', "unterminated string at offset 9"),
        ('{"a": 1, "b": {"c": 2', "truncated JSON"),
        ("{'a': 1, 'b': {'c': 2", "unclosed object at offset 14"),
        ('{"a": [1, 2', "truncated JSON"),
        ('{"a": 1, "b"', "truncated JSON"),
        ('{"a": 1, "b":', "truncated JSON"),
        ("{'a': 1, b", "truncated JSON"),
        ('{"a": 12', "truncated JSON"),
        ('{"a": 1.5', "truncated JSON"),
        ('{"a": tru', "incomplete literal"),
        ('{"a": 1.', "incomplete number"),
        ("{", "truncated JSON"),
        ("{ ", "truncated JSON"),
        ("[1, 2,", "truncated JSON"),
        ('["a", "b"', "truncated JSON"),
    ],
)
def test_other_truncations_are_not_repaired(text: str, message: str) -> None:
    with pytest.raises(LenientDecodeError) as info:
        decode_lenient(text, allow_truncated_root=True)
    assert message in info.value.message
    assert info.value.message.startswith("truncated JSON: ")
    assert info.value.kind == "truncated"


# --- scan_value --------------------------------------------------------------------------------


def test_scan_value_reads_one_value_and_reports_its_end() -> None:
    text = 'prefix {"a": [1, 2]} suffix'
    assert scan_value(text, 7) == ({"a": [1, 2]}, 20, False)
    assert scan_value("[1,] tail", 0) == ([1], 4, True)
    assert scan_value("x   42 y", 1) == (42, 6, False)


def test_scan_value_respects_stop() -> None:
    assert scan_value("[1] [2]", 0, stop=3) == ([1], 3, False)
    with pytest.raises(LenientDecodeError):
        scan_value('{"a": 1}', 0, stop=5)


@pytest.mark.parametrize(("text", "start"), [("hello", 0), ("[1]", 5), ("[1]", -1), ("", 0)])
def test_scan_value_raises_when_no_value_starts_there(text: str, start: int) -> None:
    with pytest.raises(LenientDecodeError):
        scan_value(text, start)


def test_floats_keep_their_precision() -> None:
    for number in (0.1, 1 / 3, 1.7976931348623157e308, 5e-324, -2.5e-10):
        assert decode_lenient(json.dumps([number])) == [number]
        assert decode_lenient(json.dumps([number]) + " // c") == [number]
    assert math.copysign(1.0, decode_lenient("-0.0")) == -1.0  # type: ignore[arg-type]
