"""The format-tax benchmark's logic, offline: every way, scored and tabled, on the stand-in.

The real-engine run is opt-in (``python benchmarks/format_tax.py``); this keeps its script
from rotting: the stand-in answers each item from its label except the first, so every way
must score exactly that one item wrong and type every answer.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "format_tax.py"


@pytest.fixture(scope="module")
def format_tax() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("format_tax", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["format_tax"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["format_tax"]


def test_every_way_is_scored_against_the_labels(
    format_tax: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    results = format_tax.main(["--standin", "--items", "4"])

    rows = {row.way: row for row in results["stand-in"]}
    assert list(rows) == [
        "json_schema",
        "json_object",
        "prompt",
        "cot in schema",
        "free answer",
        "think_then_format",
    ]
    for name, row in rows.items():
        assert (row.items, row.correct, row.errors, row.refused) == (4, 3, [], None), name
    assert {name: row.typed for name, row in rows.items()} == {
        **dict.fromkeys(rows, 4),
        "free answer": 0,
    }
    assert rows["think_then_format"].requests == 8  # the free answer, then its format
    assert rows["think_then_format"].mode == "free, then json_schema"
    assert rows["cot in schema"].mode == "json_schema"  # auto, under the llama.cpp profile
    out = capsys.readouterr().out
    assert "| stand-in | think_then_format | free, then json_schema | 3/4 (75%) | 4/4 |" in out


def test_the_data_set_is_labelled(format_tax: ModuleType) -> None:
    lines = format_tax.DATA.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) >= 40
    assert len({row["story"] for row in rows}) == len(rows)
    assert all(set(row) == {"story", "answer"} for row in rows)
    assert all(type(row["answer"]) is int for row in rows)


def test_the_last_number_of_a_free_answer_is_read(format_tax: ModuleType) -> None:
    assert format_tax.last_number("He has 3 and gets 4, so 7.") == 7
    assert format_tax.last_number("no number") is None
