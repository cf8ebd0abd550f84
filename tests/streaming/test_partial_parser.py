"""`PartialParser`: attribution of streamed text to fields, and the outputs as they stand."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field

import typedspy as ts
from typedspy.parse._partial import PartialParser


class SpawnTask(BaseModel):
    description: str
    priority: Literal["low", "high"]


class Continue(BaseModel):
    reason: str


class Task(BaseModel):
    name: str


class TaskList(BaseModel):
    names: list[str]


class Decide(ts.Signature):
    """Decide."""

    task: str = ts.InputField()
    action: SpawnTask | Continue = ts.OutputField()
    confidence: float = ts.OutputField(ge=0, le=1)


class Pick(ts.Signature):
    """Pick."""

    task: str = ts.InputField()
    choice: Task | TaskList = ts.OutputField()
    steps: list[SpawnTask | Continue] = ts.OutputField()


def _even(value: int) -> int:
    if value % 2:
        raise ValueError("must be even")
    return value


class Report(ts.Signature):
    """Report."""

    question: str = ts.InputField()
    summary: str = ts.OutputField()
    count: Annotated[int, AfterValidator(_even)] = ts.OutputField()
    tags: list[str] = ts.OutputField()


def feed_all(parser: PartialParser, pieces: list[str]) -> list[tuple[str | None, str]]:
    segments: list[tuple[str | None, str]] = []
    for piece in pieces:
        segments += parser.feed(piece)
    return segments + parser.flush()


def by_field(segments: list[tuple[str | None, str]]) -> dict[str | None, str]:
    out: dict[str | None, str] = {}
    for name, text in segments:
        out[name] = out.get(name, "") + text
    return out


def states(sig: type[ts.Signature], text: str) -> list[tuple[dict[str, Any], str | None]]:
    """Values and field in progress after each character."""
    parser = PartialParser(sig)
    seen = []
    for char in text:
        parser.feed(char)
        seen.append((parser.values(), parser.current))
    return seen


# -- attribution --------------------------------------------------------------------------------


def test_value_text_goes_to_its_field_and_structure_to_none() -> None:
    text = '{"summary": "a, b: {c}", "count": 4, "tags": ["x", "y"]}'
    segments = feed_all(PartialParser(Report), [text[i : i + 5] for i in range(0, len(text), 5)])
    assert "".join(t for _, t in segments) == text
    assert by_field(segments) == {
        None: '{"summary":, "count":, "tags":}',
        "summary": ' "a, b: {c}"',
        "count": " 4",
        "tags": ' ["x", "y"]',
    }


def test_one_piece_spanning_fields_is_split_between_them() -> None:
    parser = PartialParser(Report)
    parser.feed('{"summary": "ok')
    assert parser.feed('", "count": 2') == [("summary", '"'), (None, ', "count":'), ("count", " 2")]
    assert parser.current == "count"


def test_escapes_split_across_pieces_do_not_end_a_string() -> None:
    parser = PartialParser(Report)
    segments = feed_all(parser, ['{"summary": "say \\', '"hi\\', '"", "cou', 'nt": 2}'])
    assert by_field(segments)["summary"] == ' "say \\"hi\\""'
    assert parser.values() == {"summary": 'say "hi"', "count": 2}


def test_escaped_key_is_decoded() -> None:
    parser = PartialParser(Report)
    feed_all(parser, ['{"sum\\u006dary": "x", "count": 6}'])
    assert parser.values() == {"summary": "x", "count": 6}


def test_a_key_with_a_bad_escape_is_no_field_and_the_rest_is_read() -> None:
    parser = PartialParser(Report)
    segments = feed_all(parser, ['{"sum\\qary": "x", "count": 6}'])
    assert by_field(segments)[None].startswith('{"sum\\qary": "x", ')
    assert parser.values() == {"count": 6}


def test_text_around_the_object_belongs_to_no_field_and_does_not_undo_values() -> None:
    parser = PartialParser(Report)
    text = 'Sure:\n```json\n{"summary": "s", "count": 2, "tags": []}\n```\nBye {x}'
    segments = feed_all(parser, list(text))
    assert by_field(segments)[None].startswith("Sure:\n```json\n{")
    assert by_field(segments)[None].endswith("}\n```\nBye {x}")
    assert parser.values() == {"summary": "s", "count": 2, "tags": []}
    assert parser.current is None


# -- values ---------------------------------------------------------------------------------


def test_completed_fields_are_validated_and_invalid_ones_left_out() -> None:
    seen = states(Report, '{"summary": "s", "count": 3, "tags": ["a"]}')
    counts = [values.get("count") for values, _ in seen]
    assert 3 in counts  # shown while in progress ...
    assert seen[-1] == ({"summary": "s", "tags": ["a"]}, None)  # ... left out once complete
    seen = states(Decide, '{"confidence": 1, "action": {"_type": "Continue", "reason": "r"}}')
    values, _ = next(s for s in seen if s[1] == "action")
    assert values["confidence"] == 1.0 and isinstance(values["confidence"], float)
    assert seen[-1][0] == {"confidence": 1.0, "action": Continue(reason="r")}


def test_a_union_is_a_dict_until_its_type_name_is_complete() -> None:
    text = '{"choice": {"_type": "TaskList", "names": ["a", "b"]}, "steps": []}'
    seen = states(Pick, text)
    choices = [v["choice"] for v, _ in seen if "choice" in v]
    # "Task" is a complete name of another member: it must not be picked on the way.
    assert not any(isinstance(c, Task) for c in choices)
    first = next(i for i, c in enumerate(choices) if isinstance(c, TaskList))
    assert all(isinstance(c, dict) for c in choices[:first])
    assert choices[first].model_dump(exclude_unset=True) == {}
    assert choices[-1] == TaskList(names=["a", "b"])
    assert {"names": ["a"]} in [c.model_dump(exclude_unset=True) for c in choices[first:]]


def test_list_of_unions_in_progress_builds_each_member() -> None:
    parser = PartialParser(Pick)
    parser.feed('{"steps": [{"_type": "Continue", "reason": "wait"}, {"_type": "SpawnTask", "desc')
    assert parser.current == "steps"
    assert parser.values()["steps"] == [Continue(reason="wait"), SpawnTask.model_construct()]
    parser.feed('ription": "go", "priority": "lo')
    step = parser.values()["steps"][1]
    assert isinstance(step, SpawnTask) and (step.description, step.priority) == ("go", "lo")


def test_news_reports_a_field_completing_even_when_its_value_looks_equal() -> None:
    parser = PartialParser(Decide)
    parser.feed('{"confidence": 1')
    assert parser.news() == {"confidence": 1}
    assert parser.news() is None
    parser.feed(",")
    done = parser.news()
    assert done == {"confidence": 1.0} and isinstance(done["confidence"], float)
    assert parser.current is None
    parser.feed(' "action":')
    assert parser.news() is None and parser.current == "action"


def test_malformed_json_keeps_the_last_values_and_nan_never_validates() -> None:
    parser = PartialParser(Report)
    parser.feed('{"summary": "s", "count": 2, ')
    assert parser.values() == {"summary": "s", "count": 2}
    parser.feed("// a comment\n")
    assert parser.values() == {"summary": "s", "count": 2}
    parser = PartialParser(Decide)
    parser.feed('{"confidence": NaN, "action": {}}')
    assert parser.values() == {}


# -- markers --------------------------------------------------------------------------------


def test_marker_sections_are_attributed_and_validated() -> None:
    text = (
        "[[ ## summary ## ]]\nAll good [1]\n\n[[ ## count ## ]]\n4\n\n"
        '[[ ## tags ## ]]\n["a", "b"]\n\n[[ ## completed ## ]]\n'
    )
    parser = PartialParser(Report)
    segments = feed_all(parser, list(text))
    assert "".join(t for _, t in segments) == text
    texts = by_field(segments)
    assert texts["summary"] == "\nAll good [1]\n\n"
    assert texts["count"] == "\n4\n\n"
    assert texts[None] == (
        "[[ ## summary ## ]][[ ## count ## ]][[ ## tags ## ]][[ ## completed ## ]]\n"
    )
    assert parser.values() == {"summary": "All good [1]", "count": 4, "tags": ["a", "b"]}
    assert parser.current is None


def test_a_marker_arriving_in_pieces_is_held_back_until_it_is_complete() -> None:
    parser = PartialParser(Report)
    assert parser.feed("[[ ## summary ## ]]\nHi") == [
        (None, "[[ ## summary ## ]]"),
        ("summary", "\nHi"),
    ]
    assert parser.feed("\n[[ ## co") == [("summary", "\n")]
    assert parser.values() == {"summary": "Hi"} and parser.current == "summary"
    assert parser.feed("unt ## ]]\n1") == [(None, "[[ ## count ## ]]"), ("count", "\n1")]
    assert parser.values() == {"summary": "Hi", "count": 1}
    assert parser.current == "count"
    # A bracket that turns out not to start a marker is released.
    assert parser.feed("2 [") == [("count", "2 ")]
    assert parser.feed("x") == [("count", "[x")]
    assert parser.flush() == []


def test_a_marker_cut_off_by_the_end_of_the_stream_is_its_sections_text() -> None:
    """Held back while it might be a marker; at the end, read as the final parse reads it."""
    sig = ts.make_signature("question -> summary")
    text = "[[ ## summary ## ]]\nHi\n[[ ## co"
    parser = PartialParser(sig)
    assert parser.feed(text) == [(None, "[[ ## summary ## ]]"), ("summary", "\nHi\n")]
    assert parser.flush() == [("summary", "[[ ## co")]
    assert parser.flush() == []
    assert parser.values() == ts.parse.parse_outputs(sig, text).value == {"summary": "Hi\n[[ ## co"}
    assert parser.current is None


def test_the_last_section_is_complete_when_the_stream_ends_without_a_completed_marker() -> None:
    """Validated as the final parse reads it: models, not the raw dicts of a partial value."""
    sig = ts.make_signature("question -> tasks: T", types={"T": dict[str, Task]})
    text = '[[ ## tasks ## ]]\n{"a": {"name": "write"}}'
    parser = PartialParser(sig)
    parser.feed(text)
    assert parser.current == "tasks"
    assert parser.flush() == []
    assert (
        parser.values()
        == ts.parse.parse_outputs(sig, text).value
        == {"tasks": {"a": Task(name="write")}}
    )
    assert parser.current is None


class Odd(ts.Signature):
    """Odd annotations."""

    question: str = ts.InputField()
    marks: list[Annotated[int, {"unhashable": []}]] = ts.OutputField()
    floor: Annotated[int, Field(ge=0)] | None = ts.OutputField()
    tasks: dict[str, Task | TaskList] = ts.OutputField()


def test_odd_annotations_stream_their_values_in_sections_and_json() -> None:
    """Unhashable metadata, Annotated inside Optional, a dict of unions whose _type is open."""
    parser = PartialParser(Odd)
    parser.feed(
        '[[ ## marks ## ]]\n[1, 2]\n[[ ## floor ## ]]\n3\n[[ ## tasks ## ]]\n{"a": {"_type": "Ta'
    )
    assert parser.values() == {"marks": [1, 2], "floor": 3, "tasks": {"a": {}}}
    parser.feed('sk", "name": "w"}}')
    parser.flush()
    assert parser.values() == {"marks": [1, 2], "floor": 3, "tasks": {"a": Task(name="w")}}
    parser = PartialParser(Odd)
    parser.feed('{"floor": 2, "floor": 2, "marks": [1')  # a key repeated with the same value
    assert parser.values() == {"floor": 2, "marks": [1]}


def test_marker_section_in_progress_shows_its_partial_json() -> None:
    parser = PartialParser(Pick)
    parser.feed('[[ ## choice ## ]]\n```json\n{"_type": "Task", "name": "wr')
    assert parser.values() == {"choice": Task.model_construct(name="wr")}
    parser.feed('ite"}\n```\n\n[[ ## steps ## ]]\n[{"_type": "Continue", "reason": "x"}')
    values = parser.values()
    assert values["choice"] == Task(name="write")
    assert values["steps"] == [Continue(reason="x")]
    assert parser.current == "steps"
    parser.feed("]")
    assert parser.flush() == []
    assert parser.values()["steps"] == [Continue(reason="x")]


def test_text_before_any_output_is_held_only_while_it_may_be_a_marker() -> None:
    parser = PartialParser(Report)
    assert parser.feed("Thinking... [") == [(None, "Thinking... ")]
    assert parser.feed("[ ## summary ## ]] ok") == [
        (None, "[[ ## summary ## ]]"),
        ("summary", " ok"),
    ]
    assert parser.values() == {"summary": "ok"}
