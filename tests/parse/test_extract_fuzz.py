from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from typedspy.parse._extract import (
    MAX_CANDIDATES,
    Extraction,
    extract_candidates,
)
from typedspy.parse._lenient import LenientDecodeError, NonFinite, decode_lenient, scan_value
from typedspy.parse._sections import decode_section, split_marker_sections

# Few examples each, to keep the whole file within a few seconds; generating nested JSON values
# costs hypothesis far more time than extracting them.
FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)
FEW = settings(FUZZ, max_examples=60)

JSONISH = "{}[]\",:'\\ntrueflsNaIyTFNo0123456789.-+eE/*u \t\n\r“”‘’\ufeff\u200b\u00a0`<>#$_"
TOKENS = [
    "{", "}", "[", "]", ",", ":", '"a"', '"', "'b'", "'", "“k”", "1", "-2.5e3", "1e999",
    "NaN", "-Infinity", "True", "null", "tru", "// c\n", "/*", "*/", "key", " ", "\n",
    "```json\n", "```", "it's ", '\\"', "\\u00e9", "\\ud800", "\ufeff", "<json>",
    "[[ ## answer ## ]]", "[[ ## completed ## ]]",
]  # fmt: skip


def assert_plain_json(value: object) -> None:
    """Only the types json.loads produces (NonFinite standing in for NaN/Infinity)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            assert all(isinstance(key, str) for key in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, float):
            assert math.isfinite(item)
        else:
            assert item is None or isinstance(item, (str, int, bool, NonFinite)), item


def check_extraction(text: str) -> Extraction:
    result = extract_candidates(text)
    assert isinstance(result, Extraction)
    assert len(result.candidates) <= MAX_CANDIDATES
    assert (result.error is None) == bool(result.candidates)
    previous_end = 0
    for candidate in result.candidates:
        assert previous_end <= candidate.start < candidate.end <= len(text)
        previous_end = candidate.end
        assert text[candidate.start] in '{["'
        assert isinstance(candidate.value, (dict, list, str))
        assert_plain_json(candidate.value)
        # The span decodes on its own to the same value: offsets and values agree.
        span = text[candidate.start : candidate.end]
        assert decode_lenient(span, allow_truncated_root=candidate.repaired) == candidate.value
    return result


def check_markers(text: str) -> None:
    sections = split_marker_sections(text)
    assert sections is None or all(isinstance(v, str) for v in sections.values())
    ok, value, error = decode_section(text)
    assert (ok, error is None) in ((True, True), (False, False))
    if ok:
        assert_plain_json(value)


@FUZZ
@given(st.text())
def test_any_text(text: str) -> None:
    check_extraction(text)
    check_markers(text)


@FUZZ
@given(st.text(alphabet=JSONISH, max_size=200))
def test_jsonish_text(text: str) -> None:
    check_extraction(text)
    check_markers(text)


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=60).map("".join))
def test_jsonish_token_soup(text: str) -> None:
    check_extraction(text)
    check_markers(text)


@FUZZ
@given(st.text(alphabet=JSONISH, max_size=120), st.integers(min_value=0, max_value=130))
def test_scan_value_raises_only_its_own_error(text: str, start: int) -> None:
    try:
        value, end, _ = scan_value(text, start, allow_truncated_root=True)
    except LenientDecodeError as exc:
        assert exc.kind in ("syntax", "truncated", "depth")
        assert str(exc)
    else:
        assert start < end <= len(text)
        assert_plain_json(value)


# --- round trip ----------------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)
ROOTS = st.lists(VALUES, max_size=4) | st.dictionaries(st.text(max_size=8), VALUES, max_size=4)


@FEW
@given(ROOTS, st.booleans(), st.sampled_from([None, 2]))
def test_round_trip(value: object, ascii_only: bool, indent: int | None) -> None:
    dumped = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    wrappings = [
        dumped,
        f"Here's the result you asked for:\n{dumped}\nLet me know if it's wrong!",
        f"```json\n{dumped}\n```",
        f"<answer>{dumped}</answer>",
    ]
    for text in wrappings:
        result = check_extraction(text)
        assert result.candidates[-1].value == value
        assert not result.candidates[-1].repaired
    assert len(extract_candidates(dumped).candidates) == 1
    # The pure-Python parser agrees with the C decoder on standard JSON.
    assert scan_value(dumped, 0, strict_first=False) == (value, len(dumped), False)


@FEW
@given(st.dictionaries(st.text(max_size=8), VALUES, min_size=1, max_size=4))
def test_round_trip_of_truncated_root_object(value: dict[str, object]) -> None:
    dumped = json.dumps(value)
    for cut in (dumped[:-1], dumped[:-1] + ",", dumped[:-1] + ",\n  "):
        if cut.endswith(tuple("0123456789")):
            continue  # a number at the very end may have lost digits: never completed
        (candidate,) = check_extraction("Answer: " + cut).candidates
        assert candidate.value == value
        assert candidate.repaired


# --- deterministic hostile cases -----------------------------------------------------------------

HOSTILE = {
    "prose": "The quick brown fox, it's said, doesn't jump. " * 110_000,
    "nested_square": "[" * 50_000,
    "nested_curly": "{" * 50_000,
    "nested_balanced": "[" * 50_000 + "]" * 50_000,
    "nested_mixed": "[{" * 25_000,
    "nested_keys": '{"a": [' * 25_000,
    "nested_junk": "[1 " * 30_000,
    "flat_pairs": "{}" * 100_000,
    "fences": "".join(f"```json\n{{'draft': {i},}}\n```\n" for i in range(3_000)),
    "open_fences": "```json\n" * 5_000,
    "apostrophes": "[" + "it's don't won't '" * 50_000,
    "quotes": '{"' * 50_000,
    "string": '["' + "x" * 1_000_000 + '"]',
    "unterminated": '{"s": "' + "x\\n" * 300_000,
    "escapes": '"' + "\\u00e9" * 100_000 + '"',
    "backslashes": "[" + "\\" * 200_000,
    "commas": "[" + ", " * 200_000,
    "comment": "{/*" + "x" * 500_000,
    "digits": "[" + "9" * 100_000 + "]",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_input_finishes_with_a_result(name: str) -> None:
    text = HOSTILE[name]
    result = check_extraction(text)
    if result.candidates:
        assert name in ("fences", "string", "escapes", "flat_pairs")
    else:
        assert result.error
    check_markers(text[:200_000])


def test_hostile_results() -> None:
    assert extract_candidates(HOSTILE["fences"]).candidates[-1].value == {"draft": 2_999}
    assert extract_candidates(HOSTILE["string"]).candidates[0].value == ["x" * 1_000_000]
    assert extract_candidates(HOSTILE["escapes"]).candidates[0].value == "é" * 100_000
    assert extract_candidates(HOSTILE["nested_balanced"]).error == (
        "nesting deeper than 256 levels (max_json_depth) at offset 256"
    )
    assert extract_candidates(HOSTILE["prose"] + '{"a": 1}').candidates[0].value == {"a": 1}
