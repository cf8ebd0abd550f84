from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest
from pydantic import BaseModel

import typedspy as ts


class Bug(BaseModel):
    component: str


class Question(BaseModel):
    topic: str


class Triage(ts.Signature):
    """Triage a ticket."""

    text: str = ts.InputField()
    label: Bug | Question = ts.OutputField()
    priority: int = ts.OutputField(ge=1, le=3)


def test_typed_example_validates_values_and_knows_its_inputs() -> None:
    ex = ts.Example(Triage, text="crash", label={"_type": "Bug", "component": "ui"}, priority="2")
    assert ex.label == Bug(component="ui")
    assert ex.priority == 2
    assert ex.inputs() == {"text": "crash"}
    assert ex.labels() == {"label": Bug(component="ui"), "priority": 2}
    assert ex.to_dict() == {
        "text": "crash",
        "label": {"_type": "Bug", "component": "ui"},
        "priority": 2,
    }
    assert ex.copy(priority=3).priority == 3


def test_typed_example_outputs_are_the_labels_as_the_signature() -> None:
    # Issue 23: the typed view of an example's labels, as `pred.outputs` is a prediction's.
    ex = ts.Example(Triage, text="crash", label={"_type": "Bug", "component": "ui"}, priority="2")
    assert isinstance(ex.outputs, Triage)
    assert ex.outputs.label == Bug(component="ui")
    assert ex.outputs.priority == 2
    with pytest.raises(AttributeError):
        _ = ex.outputs.text  # an input: not a label
    partial = ts.Example(Triage, text="crash", priority=1)
    with pytest.raises(AttributeError):
        _ = partial.outputs.label
    with pytest.raises(ts.ConfigurationError, match="no signature"):
        _ = ts.Example(question="q", answer="a").outputs


def test_typed_example_names_the_bad_fields() -> None:
    with pytest.raises(ts.errors.ExampleError) as caught:
        ts.Example(Triage, label={"_type": "Nope"}, priority=9, extra=1)
    paths = sorted(str(e) for e in caught.value.errors)
    assert any(p.startswith("text: required input missing") for p in paths)
    assert any(p.startswith("priority: Input should be less than or equal to 3") for p in paths)
    assert any(p.startswith("extra: not a field") for p in paths)
    assert any(p.startswith('label: _type "Nope"') for p in paths)


def test_untyped_example_works_like_dspy() -> None:
    ex = ts.Example(question="2 + 2?", answer="4").with_inputs("question")
    assert ex.inputs() == {"question": "2 + 2?"}
    assert ex.labels() == {"answer": "4"}
    with pytest.raises(ts.ConfigurationError, match="does not know its inputs"):
        ts.Example(question="q").inputs()
    with pytest.raises(ts.ConfigurationError, match="not values of this example"):
        ex.with_inputs("nope")


def test_an_example_compares_shows_and_pickles_as_its_values_and_inputs() -> None:
    ex = ts.Example(Triage, text="crash", label={"_type": "Bug", "component": "ui"}, priority=2)
    ex = ex.with_inputs("text")
    assert len(ex) == 3 and ex == ex.copy() and ex != ex.with_inputs("text", "priority")
    assert ex != dict(ex)  # a mapping of the same values has no inputs: not an example
    assert repr(ex) == (
        "Example(text='crash', label=Bug(component='ui'), priority=2, inputs=['text'])"
    )
    with pytest.raises(TypeError, match="unhashable"):
        hash(ex)
    pickled = [pickle.loads(pickle.dumps(ex, p)) for p in range(pickle.HIGHEST_PROTOCOL + 1)]
    for again in [*pickled, copy.deepcopy(ex)]:  # protocols 0 and 1 need its __getstate__
        assert again == ex and again.signature is Triage and again.label == Bug(component="ui")
        assert again.inputs() == {"text": "crash"}


def test_jsonl_rows_are_numbered_in_errors(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    rows = [
        {"text": "a", "label": {"_type": "Bug", "component": "x"}, "priority": 1},
        {"text": "b", "label": {"_type": "Bug"}, "priority": 1},
        {"text": "c", "priority": 7},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(path, Triage)
    err = caught.value
    assert [(r.row, str(r.error).split(":")[0]) for r in err.rows] == [
        (2, "label.component"),
        (3, "priority"),
    ]
    assert "2 row(s) do not fit Triage" in str(err)
    assert err.source == str(path)


def test_invalid_json_line_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a"}\n{oops\n')
    with pytest.raises(ts.errors.DatasetError, match="row 2 is not valid JSON"):
        ts.evaluation.load_dataset(path, Triage)


def test_a_line_nested_past_the_depth_limit_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"text": "a"}\n{"text": ' + "[" * 5_000 + "]" * 5_000 + "}\n")
    with pytest.raises(ts.errors.DatasetError, match=r"row 2 .*deeper than 256 levels"):
        ts.evaluation.load_dataset(path, Triage)  # was an untyped RecursionError


def test_csv_reads_json_cells_for_typed_fields_and_text_for_strings(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text(
        'ticket,label,priority\n42,"{""_type"": ""Question"", ""topic"": ""t""}",2\nhello,,\n'
    )
    [first, second] = ts.evaluation.load_dataset(path, Triage, rename={"ticket": "text"})
    assert first.text == "42"
    assert first.label == Question(topic="t")
    assert first.priority == 2
    assert second.labels() == {}


def test_list_of_dicts_and_json_files(tmp_path: Path) -> None:
    data = [{"text": "a", "priority": 1}, "not an object"]
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(data, Triage)  # type: ignore[arg-type]
    assert [r.row for r in caught.value.rows] == [2]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(data[:1]))
    assert ts.evaluation.load_dataset(path, Triage)[0].priority == 1
    with pytest.raises(ts.ConfigurationError, match="unknown dataset type"):
        ts.evaluation.load_dataset(tmp_path / "d.txt", Triage)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("d.csv", "text,priority\r\nhello,2\r\n"),  # Excel's "CSV UTF-8"
        ("d.jsonl", '{"text": "hello", "priority": 2}\n'),
        ("d.json", '[{"text": "hello", "priority": 2}]'),
    ],
)
def test_a_file_starting_with_a_utf8_byte_order_mark_loads(
    tmp_path: Path, name: str, content: str
) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + content.encode())
    [example] = ts.evaluation.load_dataset(path, Triage)
    assert (example.text, example.priority) == ("hello", 2)


def test_a_byte_order_mark_past_the_start_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"text": "a", "priority": 1}\n\xef\xbb\xbf{"text": "b", "priority": 1}\n')
    with pytest.raises(ts.errors.DatasetError, match="row 2 is not valid JSON"):
        ts.evaluation.load_dataset(path, Triage)


def test_a_jsonl_line_past_max_row_bytes_is_refused_naming_its_row_and_line(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.jsonl"
    row = json.dumps({"text": "x" * 500, "priority": 1})
    path.write_text(f'{{"text": "a", "priority": 1}}\n\n{row}\n')
    with pytest.raises(
        ts.errors.DatasetError, match=r"row 2 is longer than max_row_bytes=100 \(line 3\)"
    ):
        ts.evaluation.load_dataset(path, Triage, max_row_bytes=100)
    assert len(ts.evaluation.load_dataset(path, Triage, max_row_bytes=len(row) + 1)) == 2
    with pytest.raises(ts.ConfigurationError, match="max_row_bytes"):
        ts.evaluation.load_dataset(path, Triage, max_row_bytes=0)


def test_the_shipped_ticket_dataset_loads_with_every_class_in_both_halves() -> None:
    train, dev = ts.testing.support_tickets()
    assert len(train) == len(dev) == 12

    def classes(items: list[ts.Example]) -> set[str]:
        return {json.dumps(ex.to_dict()["route"], sort_keys=True) for ex in items}

    assert len(classes(train)) == 6
    assert classes(train) == classes(dev)


@pytest.mark.parametrize(
    ("content", "kind"), [('{"text": "a", "priority": 1}', "dict"), ("null", "null"), ("7", "int")]
)
def test_a_json_file_that_is_not_a_list_is_refused_naming_what_it_is(
    tmp_path: Path, content: str, kind: str
) -> None:
    path = tmp_path / "d.json"
    path.write_text(content)
    with pytest.raises(
        ts.errors.DatasetError, match=f"expected a JSON list of objects, got {kind}"
    ):
        ts.evaluation.load_dataset(path, Triage)


def test_a_csv_cell_that_is_no_json_for_a_typed_field_fails_validation_naming_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.csv"
    path.write_text("text,priority,label\nhello,three,\nbye,2,{oops\n")
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(path, Triage)
    assert [(r.row, str(r.error).split(":")[0]) for r in caught.value.rows] == [
        (1, "priority"),
        (2, "label"),
    ]
    assert 'got "three"' in str(caught.value)
