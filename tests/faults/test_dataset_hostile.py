"""Issue 21, D8: a malformed dataset file is a `ts.errors.DatasetError` naming the row, never
untyped.

Each case writes a real file to ``tmp_path`` and loads it with `ts.evaluation.load_dataset`: the
result is
examples or a `DatasetError` (``rows`` naming row, field and problem), within seconds.
"""

from __future__ import annotations

import csv
import re
import time
from pathlib import Path
from typing import Any

import pytest

import typedspy as ts


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def refused(path: Path) -> ts.errors.DatasetError:
    start = time.monotonic()
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(path, Ask)
    assert time.monotonic() - start < 10
    assert caught.value.source == str(path)
    return caught.value


def test_a_jsonl_row_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    # Was: UnicodeDecodeError, naming no row.
    path = tmp_path / "data.jsonl"
    path.write_bytes(b'{"question": "a", "answer": "b"}\n\n{"question": "\xff", "answer": "x"}\n')
    error = refused(path)
    assert [r.row for r in error.rows] == [2]  # the second row, on the file's third line
    assert "row 2 is not valid UTF-8 at line 3, byte 15 (invalid start byte)" in str(error)
    assert error.__context__ is None  # the decode error, holding the whole line, is not kept


def test_a_json_file_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_bytes(b'[\n  {"question": "a", "answer": "b"},\n  {"question": "\xc3"}\n]\n')
    assert "not valid UTF-8 at line 3, byte 17" in str(refused(path))


def test_csv_cells_that_are_not_utf8_are_named_by_row_and_column(tmp_path: Path) -> None:
    # Was: UnicodeDecodeError for the whole file.
    path = tmp_path / "data.csv"
    path.write_bytes(b"question,answer\nfine,ok\nq\xff,ok\nq,\xe2\x82\n")
    error = refused(path)
    assert [str(r) for r in error.rows] == [
        "row 2: question: not valid UTF-8 (byte 0xff at character 2)",
        "row 3: answer: not valid UTF-8 (byte 0xe2 at character 1)",
    ]


def test_a_csv_header_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_bytes(b"question,ans\xffwer\nq,a\n")
    error = refused(path)
    assert [str(r) for r in error.rows] == [
        "row 0: column 2: not valid UTF-8 (byte 0xff at character 4)"
    ]
    assert "the header row is not valid UTF-8" in str(error)


def test_a_csv_cell_past_the_field_size_limit_is_named(tmp_path: Path) -> None:
    # Was: _csv.Error ('field larger than field limit (131072)'), naming no row.
    limit = csv.field_size_limit()
    path = tmp_path / "data.csv"
    path.write_text(f"question,answer\nq,a\n{'x' * (limit + 1)},y\n", encoding="utf-8")
    error = refused(path)
    assert [r.row for r in error.rows] == [2]
    assert f"row 2 (line 3): a cell is longer than csv.field_size_limit() ({limit:,} " in str(error)


def test_a_csv_cell_at_the_field_size_limit_is_read(tmp_path: Path) -> None:
    limit = csv.field_size_limit()
    path = tmp_path / "data.csv"
    path.write_text(f"question,answer\n{'x' * limit},y\n", encoding="utf-8")
    [example] = ts.evaluation.load_dataset(path, Ask)
    assert len(example.question) == limit


def test_a_line_separator_inside_a_value_stays_in_its_row(tmp_path: Path) -> None:
    # U+2028 is a line break to str.splitlines, not to JSON Lines or CSV.
    jsonl, table = tmp_path / "data.jsonl", tmp_path / "data.csv"
    jsonl.write_text('{"question": "a\u2028b", "answer": "c"}\n', encoding="utf-8")
    table.write_text('question,answer\n"a\u2028b",c\n', encoding="utf-8")
    for path in (jsonl, table):
        [example] = ts.evaluation.load_dataset(path, Ask)
        assert example.question == "a\u2028b"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # Was: the cells past the header dropped unsaid (an unquoted comma in a question).
        (
            "question,answer\nok,fine\nWhat, then?,yes\n",
            "row 2: <root>: 1 cell(s) past the header's 2 columns",
        ),
        # Was: the rest of the file read as one cell of row 1.
        ('question,answer\n"q,a\nq2,a2\n', "row 1 (line 3): a quoted cell is never closed"),
        # Was: 'ab' (the quotes dropped).
        ('question,answer\n"a"b,c\n', "row 1 (line 2): not readable as CSV: ',' expected after"),
        # Was: the first column's cells dropped, the last kept.
        ("question,question,answer\nq1,q2,a\n", "the header row names ['question'] more than once"),
    ],
    ids=["extra-cells", "unclosed-quote", "text-after-quote", "duplicate-column"],
)
def test_a_csv_row_that_does_not_split_into_the_header_is_named(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "data.csv"
    path.write_text(text, encoding="utf-8")
    assert says in str(refused(path))


def test_a_quote_inside_an_unquoted_cell_is_text(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('question,answer\nhe said "hi",ok\n', encoding="utf-8")
    [example] = ts.evaluation.load_dataset(path, Ask)
    assert example.question == 'he said "hi"'


@pytest.mark.parametrize(
    ("options", "says"),
    [
        # Was: TypeError 'NoneType' object is not iterable.
        ({"source": None}, "source is null, neither a file path"),
        # Was: each key of the dict read as a row ('expected an object, got str').
        ({"source": {"question": "q", "answer": "a"}}, "source is dict, neither a file path"),
        # Was: each byte read as a row.
        ({"source": b"data.jsonl"}, "source is bytes, neither a file path"),
        # Was: TypeError 'keywords must be strings' from the first row.
        ({"rename": {"q": None}}, "rename 'q': None is not a column name and a field name"),
        # Was: ValueError 'dictionary update sequence element #0 has length 1'.
        ({"rename": "q"}, "rename is str, not a mapping of column names"),
        # Was: every row's 'qq: not a field of the signature'.
        (
            {"rename": {"q": "qq"}},
            "rename 'q': 'qq' names no field of Ask (fields: question, answer)",
        ),
    ],
    ids=["none", "a-dict", "bytes", "rename-to-none", "rename-a-string", "rename-to-no-field"],
)
def test_a_source_or_rename_of_the_wrong_shape_is_named(options: dict[str, Any], says: str) -> None:
    arguments: dict[str, Any] = {"source": [{"q": "q", "answer": "a"}], **options}
    with pytest.raises(ts.ConfigurationError, match=re.escape(says)):
        ts.evaluation.load_dataset(arguments.pop("source"), Ask, **arguments)


def test_two_columns_renamed_to_one_field_is_the_rows_problem() -> None:
    # Was: the last column kept, the other dropped unsaid.
    rows = [{"q": "q1", "answer": "a"}, {"q": "q2", "question": "q2 again", "answer": "a"}]
    with pytest.raises(ts.errors.DatasetError) as caught:
        ts.evaluation.load_dataset(rows, Ask, rename={"q": "question"})
    assert [str(r) for r in caught.value.rows] == [
        "row 2: question: given by more than one column: 'q', 'question'"
    ]


def test_a_max_row_bytes_past_what_a_read_takes_is_no_limit(tmp_path: Path) -> None:
    # Was: OverflowError 'cannot fit 'int' into an index-sized integer'.
    path = tmp_path / "data.jsonl"
    path.write_text('{"question": "q", "answer": "a"}\n', encoding="utf-8")
    [example] = ts.evaluation.load_dataset(path, Ask, max_row_bytes=10**30)
    assert example.question == "q"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("data.jsonl", '{"question": "q", "answer": "a"}\n{"question": "q1", "question": "q2"}\n'),
        ("data.json", '[{"question": "q", "answer": "a", "answer": "b"}]'),
    ],
)
def test_a_row_naming_a_key_twice_is_named(tmp_path: Path, name: str, text: str) -> None:
    # Was: the last value kept, the other dropped unsaid.
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert "appears twice in one object" in str(refused(path))
