from __future__ import annotations

import cProfile
import json
import pstats

import pytest

from typedspy.parse._extract import (
    MAX_CANDIDATES,
    Candidate,
    Extraction,
    extract_candidates,
)
from typedspy.parse._lenient import NonFinite
from typedspy.parse._sections import decode_section, split_marker_sections


def values(text: str) -> list[object]:
    result = extract_candidates(text)
    assert result.error is None, result.error
    return [c.value for c in result.candidates]


def located(text: str) -> list[tuple[object, str, bool]]:
    """Each candidate's value, the text it was decoded from, and its repaired flag."""
    return [
        (c.value, text[c.start : c.end], c.repaired) for c in extract_candidates(text).candidates
    ]


def failure(text: str) -> str:
    result = extract_candidates(text)
    assert result.candidates == ()
    assert result.error is not None
    return result.error


# --- where candidates come from ------------------------------------------------------------


def test_bare_json_object_is_one_unrepaired_candidate() -> None:
    text = '  {"a": 1, "b": [1, 2]}\n'
    assert extract_candidates(text) == Extraction(
        (Candidate({"a": 1, "b": [1, 2]}, 2, 23, False),), None
    )


def test_bare_json_array_is_returned_as_is() -> None:
    assert values('[{"a": 1}, {"a": 2}]') == [[{"a": 1}, {"a": 2}]]


def test_wrapper_objects_are_not_unwrapped() -> None:
    assert values('{"result": {"answer": 42}}') == [{"result": {"answer": 42}}]


def test_json_fence() -> None:
    text = 'Here you go:\n```json\n{"answer": 42}\n```\n'
    assert located(text) == [({"answer": 42}, '{"answer": 42}', False)]


def test_untagged_fence() -> None:
    assert values("```\n[1, 2, 3]\n```") == [[1, 2, 3]]


def test_several_fences_give_every_draft_in_order() -> None:
    text = (
        'First attempt:\n```json\n{"v": 1}\n```\n'
        'Hmm, better:\n```\n{"v": 2}\n```\n'
        'Final:\n```JSON\n{"v": 3}\n```'
    )
    assert values(text) == [{"v": 1}, {"v": 2}, {"v": 3}]


def test_prose_before_and_after() -> None:
    text = 'Sure! The answer is {"name": "Ada", "born": 1815} - hope that helps.'
    assert located(text) == [
        ({"name": "Ada", "born": 1815}, '{"name": "Ada", "born": 1815}', False)
    ]


@pytest.mark.parametrize("tag", ["json", "answer", "output"])
def test_tags(tag: str) -> None:
    assert values(f'<{tag}>\n{{"x": [1]}}\n</{tag}>') == [{"x": [1]}]


def test_quoted_example_and_final_answer_both_appear_in_order() -> None:
    text = 'The format is {"answer": "<text>"}. Thinking it over...\nSo: {"answer": "Paris"}'
    assert values(text) == [{"answer": "<text>"}, {"answer": "Paris"}]


def test_arrays_in_prose_are_candidates() -> None:
    assert values("Primes: [2, 3, 5] and [7, 11].") == [[2, 3, 5], [7, 11]]


def test_nested_values_are_not_separate_candidates() -> None:
    text = 'Result: {"a": {"b": [1, {"c": 2}]}, "d": "[not a candidate]"} end'
    assert values(text) == [{"a": {"b": [1, {"c": 2}]}, "d": "[not a candidate]"}]


def test_whole_text_json_string_is_a_candidate() -> None:
    text = ' "{\\"a\\": 1}" '
    assert extract_candidates(text) == Extraction((Candidate('{"a": 1}', 1, 13, False),), None)


def test_whole_text_string_hides_json_inside_it() -> None:
    assert values('"[1, 2] is a list"') == ["[1, 2] is a list"]


def test_fence_whose_content_is_a_string_literal() -> None:
    text = 'Encoded:\n```json\n"{\\"a\\": [1]}"\n```\nand then {"b": 2}'
    assert values(text) == ['{"a": [1]}', {"b": 2}]


def test_brackets_inside_a_fenced_string_are_no_region_of_their_own() -> None:
    """A region starting inside the fenced string is skipped: the string is the candidate."""
    text = 'Note ```json\n"[1, {\\"b\\": 2}]"\n``` then [3] and {"c": 4'
    assert values(text) == ['[1, {"b": 2}]', [3]]


def test_strings_in_prose_are_not_candidates() -> None:
    assert failure('He said "hello" and left.') == "no JSON object found"


def test_prose_brackets_are_skipped() -> None:
    text = 'Use {placeholder} here [see note] and then: [Note: the JSON is {"a": 1}]'
    assert values(text) == [{"a": 1}]


def test_unbalanced_and_stray_brackets_do_not_hide_later_json() -> None:
    assert values('} ] ) {"a": 1} ]') == [{"a": 1}]
    assert values('I will start with { and then write {"a": 1}') == [{"a": 1}]
    assert values('a [list {"x": 1} with a mismatched } and {"y": 2}') == [{"x": 1}, {"y": 2}]


def test_apostrophes_in_prose_do_not_derail_the_scan() -> None:
    text = "It's simple, isn't it? Don't worry, we'll get there. " * 50 + '{"ok": true}'
    assert values(text) == [{"ok": True}]
    assert values("[it's here] {\"a\": 'don't'} and {'b': 1}") == [{"b": 1}]


def test_lenient_candidates_are_marked_repaired() -> None:
    text = "```json\n{'a': 1, b: [1, 2,], c: True, // note\n d: NaN}\n```"
    assert located(text) == [
        (
            {"a": 1, "b": [1, 2], "c": True, "d": NonFinite("NaN")},
            "{'a': 1, b: [1, 2,], c: True, // note\n d: NaN}",
            True,
        )
    ]


def test_brackets_and_quotes_inside_comments_do_not_break_a_region() -> None:
    text = (
        'Result: {"a": 1, // the ] and } here are "prose\n'
        ' "b": [2], /* it\'s [optional] } */ "c": "x"} done'
    )
    assert values(text) == [{"a": 1, "b": [2], "c": "x"}]


def test_brackets_inside_strings_do_not_break_a_region() -> None:
    text = 'Out: {"a": "}]", \'b\': \'[{\', “c”: “}”, "d": "say \\"}\\""} end'
    assert values(text) == [{"a": "}]", "b": "[{", "c": "}", "d": 'say "}"'}]


def test_curly_quotes_and_invisible_characters() -> None:
    assert values("\ufeffAnswer: {“city”: “Oslo”,\u200b “n”: 2}") == [{"city": "Oslo", "n": 2}]


def test_strict_and_repaired_candidates_mix() -> None:
    text = 'draft {"a": 1,} final {"a": 2}'
    assert [(v, r) for v, _, r in located(text)] == [({"a": 1}, True), ({"a": 2}, False)]


# --- truncation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "b": [1, 2]', {"a": 1, "b": [1, 2]}),
        ('{"a": 1,', {"a": 1}),
        ('Here it is:\n```json\n{"a": 1, "b": {"c": 2},\n', {"a": 1, "b": {"c": 2}}),
        ("Sure: {'a': 1, b: 'x'", {"a": 1, "b": "x"}),
    ],
)
def test_truncated_root_object_gets_its_closing_brace(text: str, expected: object) -> None:
    (candidate,) = extract_candidates(text).candidates
    assert candidate.value == expected
    assert candidate.repaired
    assert candidate.end == len(text)
    assert text[candidate.start] == "{"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": "abc', "truncated JSON: unterminated string at offset 6"),
        ('{"a": 1, "b": {"c": 2', "truncated JSON"),
        ('{"a": [1, 2', "truncated JSON"),
        ('{"a": 1, "b"', "truncated JSON"),
        ('{"a": 1, "b":', "truncated JSON"),
        ('{"a": 12', "truncated JSON"),
        ('Answer: {"a": {"x": 1}, "steps": [{"s": 1}], "b": "trunc', "unterminated string"),
        ("[1, 2, 3", "truncated JSON"),
    ],
)
def test_other_truncations_give_no_candidate(text: str, message: str) -> None:
    assert message in failure(text)


def test_truncation_keeps_earlier_drafts() -> None:
    text = 'Draft: {"a": 0}\nFinal: {"a": 1, "b": "cut'
    assert extract_candidates(text) == Extraction((Candidate({"a": 0}, 7, 15, False),), None)


def test_only_a_region_reaching_the_end_of_the_text_is_completed() -> None:
    text = '```json\n{"a": 1,\n```\nThat is all.'
    assert failure(text).startswith("expected")


def test_truncated_nested_object_inside_root_array_is_not_repaired() -> None:
    assert "truncated JSON" in failure('[{"a": 1},')


# --- errors and bounds -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "no JSON object found (empty text)"),
        ("  \n\t", "no JSON object found (empty text)"),
        ("Just prose, no JSON here.", "no JSON object found"),
        ("42", "no JSON object found"),
        ("{name} and [citation needed]", "no JSON object found"),
        ("see {/path} and [/x] or {{double}}", "no JSON object found"),
        ('The string "{\\"a\\": 1}" is quoted', "no JSON object found"),
    ],
)
def test_error_when_nothing_is_found(text: str, error: str) -> None:
    assert failure(text) == error


def test_error_for_json_that_does_not_decode() -> None:
    assert failure('Result: {"a": 1 "b": 2}') == "expected ',' or '}' at offset 16, got '\"'"
    assert failure("values: [1, 2, x]") == "unexpected token 'x' at offset 15"


def test_error_for_deep_nesting() -> None:
    assert failure("[" * 300 + "]" * 300).startswith("nesting deeper than 256 levels")
    assert failure("[" * 50_000).startswith("nesting deeper than 256 levels")


def test_candidates_are_capped_keeping_the_last() -> None:
    text = "\n".join(f'Draft {i}:\n```json\n{{"i": {i}}}\n```' for i in range(150))
    found = values(text)
    assert len(found) == MAX_CANDIDATES
    assert found == [{"i": i} for i in range(150 - MAX_CANDIDATES, 150)]


def test_candidates_are_capped_on_the_lenient_path_too() -> None:
    text = " ".join(f"{{'i': {i}}}" for i in range(100))
    assert values(text) == [{"i": i} for i in range(100 - MAX_CANDIDATES, 100)]


def test_hostile_inputs_are_bounded() -> None:
    prose = "It's a {placeholder} [note] don't \"quote\" won't, can't: " * 90_000
    assert failure(prose) == "no JSON object found"
    assert values(prose + '{"a": 1}') == [{"a": 1}]
    assert failure("{" * 50_000).startswith("truncated JSON")
    assert values("[" * 50_000 + "]" * 50_000 + ' {"a": 1}') == [{"a": 1}]
    fences = "".join(f'Try {i}:\n```json\n{{"i": {i},}}\n```\n' for i in range(3000))
    assert values(fences)[-1] == {"i": 2999}
    big = "x" * 1_000_000
    assert values(f'{{"s": "{big}"}}') == [{"s": big}]
    assert "unterminated string" in failure('{"s": "' + big)
    assert values(f'Note: [it\'s {big}] {{"a": 1}}') == [{"a": 1}]


def test_many_small_objects_are_read_in_one_pass_not_one_per_object() -> None:
    # Each object the strict fast path decoded had its nesting checked to the end of the whole
    # text, not of the object: 256 objects, 256 passes over the text (a 1 MB reply took 16 s).
    # The work is counted as the calls made (Python functions and C methods), per object.
    for objects in (1_000, 4_000):
        text = '{"a": 1} ' * objects
        profile = cProfile.Profile()
        profile.enable()
        found = values(text)
        profile.disable()
        assert found == [{"a": 1}] * MAX_CANDIDATES
        assert pstats.Stats(profile).total_calls < 60 * objects  # 700 per object on main


def test_never_raises_for_odd_strings() -> None:
    for text in ["\x00", "\ud800", "{\ud800}", "```", "```json", "[" + "\\" * 10, "{'", "“", "/*"]:
        result = extract_candidates(text)
        assert isinstance(result, Extraction)


# --- markers -----------------------------------------------------------------------------------


def test_split_marker_sections_dspy_example() -> None:
    text = (
        '[[ ## reasoning ## ]]\nabc\n\n[[ ## answer ## ]]\n```json\n{"x": 1}\n```\n\n'
        "[[ ## completed ## ]]"
    )
    sections = split_marker_sections(text)
    assert sections == {"reasoning": "abc", "answer": '```json\n{"x": 1}\n```'}
    assert sections is not None
    assert decode_section(sections["answer"]) == (True, {"x": 1}, None)


def test_split_marker_sections_without_markers_is_none() -> None:
    assert split_marker_sections('{"x": 1}') is None
    assert split_marker_sections("") is None
    assert split_marker_sections("[[ # almost ## ]]") is None


def test_split_marker_sections_edges() -> None:
    text = "preamble\n[[ ## a ## ]] one [[ ## b ## ]]\n\n[[ ## completed ## ]]\ntrailing chatter"
    assert split_marker_sections(text) == {"a": "one", "b": ""}
    assert split_marker_sections("[[ ## a ## ]] first [[ ## a ## ]] second") == {"a": "second"}
    assert split_marker_sections("[[ ## completed ## ]]") == {}
    assert split_marker_sections("[[##tight##]] x") == {"tight": "x"}


def test_split_marker_sections_never_raises() -> None:
    assert split_marker_sections(None) is None  # type: ignore[arg-type]
    assert split_marker_sections("[[ ## x ## ]]" * 10_000) == {"x": ""}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"x": 1}\n```', {"x": 1}),
        ("```\n[1, 2]\n```", [1, 2]),
        ('```json {"x": 1}```', {"x": 1}),
        ("```42```", 42),
        ('```json\n{"x": 1}', {"x": 1}),
        ("  42  ", 42),
        ("true", True),
        ('"text"', "text"),
        ("{'a': None,}", {"a": None}),
        ('```json\n{"code": "```py\\nx\\n```"}\n```', {"code": "```py\nx\n```"}),
    ],
)
def test_decode_section(text: str, expected: object) -> None:
    assert decode_section(text) == (True, expected, None)


def test_decode_section_removes_only_one_fence() -> None:
    ok, value, error = decode_section("```\n```json\n[1]\n```\n```")
    assert not ok
    assert value is None
    assert error is not None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "empty section"),
        ("```json\n```", "empty section"),
        ("forty-two", "unexpected token 'forty' at offset 0"),
        ('{"a": 1', "truncated JSON"),
        ('{"a": 1} and more', "unexpected data after the JSON value"),
    ],
)
def test_decode_section_failures(text: str, error: str) -> None:
    ok, value, message = decode_section(text)
    assert (ok, value) == (False, None)
    assert message is not None
    assert error in message


def test_decode_section_never_raises() -> None:
    assert decode_section(None)[0] is False  # type: ignore[arg-type]
    assert decode_section("[" * 50_000)[0] is False


def test_round_trip_of_a_realistic_completion() -> None:
    payload = {"title": 'Q3 "report"', "items": [{"id": 1, "tags": ["a", "b"]}], "ok": None}
    text = f"Let me think... the user wants JSON.\n\n```json\n{json.dumps(payload, indent=2)}\n```"
    assert values(text) == [payload]
