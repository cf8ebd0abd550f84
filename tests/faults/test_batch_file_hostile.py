"""Issue 21, D7 and D15: a hostile Batch API output file ends in typed errors, read capped.

Every case reads a real file from ``tmp_path`` with `ts.batch_api.read_batch_file` (nothing is
sent: the
LM's URL is a closed port) and ends in per-item results or a `ts.ConfigurationError` naming the
file and the line, within seconds, with no file descriptor left open.
"""

from __future__ import annotations

import json
import os
import time
import traceback
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import typedspy as ts
from faults.server import completion_body

KEY = "tok_live_B7xR2mQ9zL4vN8wK-fault"  # not sk- shaped: only the LM's own redactor knows it
INPUTS = [{"question": "q0"}, {"question": "q1"}]


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def answered(custom_id: Any, answer: str) -> dict[str, Any]:
    body = completion_body(json.dumps({"answer": answer}))
    return {"custom_id": custom_id, "response": {"status_code": 200, "body": body}, "error": None}


def write(path: Path, *lines: dict[str, Any] | bytes) -> Path:
    data = b"".join(x if isinstance(x, bytes) else json.dumps(x).encode() + b"\n" for x in lines)
    path.write_bytes(data)
    return path


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def runtime_started(tmp_path: Path) -> None:
    """The sync runtime's loop (and its file descriptors) exists before `read` counts them."""
    lm = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key=KEY)
    ts.batch_api.read_batch_file(ts.Predict(Ask, lm=lm), [], write(tmp_path / "empty.jsonl"))
    lm.close()


@pytest.fixture
def predict() -> Iterator[ts.Predict[Any, Any]]:
    lm = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key=KEY, max_retries=0)
    yield ts.Predict(Ask, lm=lm)
    lm.close()


def read(predict: ts.Predict[Any, Any], path: Path) -> ts.batch.BatchResult[Any]:
    """`read_batch_file`, bounded in time and leaving no file descriptor behind."""
    before, start = open_fds(), time.monotonic()
    try:
        return ts.batch_api.read_batch_file(predict, INPUTS, path)
    finally:
        assert time.monotonic() - start < 10
        assert open_fds() <= before


@pytest.mark.parametrize(
    ("custom_id", "kind"),
    [(["item-0"], "a list"), ({"id": "item-0"}, "an object"), (7, "a number"), (None, "missing")],
)
def test_a_custom_id_that_is_not_a_string_is_refused_naming_the_line(
    predict: ts.Predict[Any, Any], tmp_path: Path, custom_id: object, kind: str
) -> None:
    # Was: TypeError (unhashable type: 'list') for a list or an object.
    path = write(tmp_path / "out.jsonl", answered("item-1", "B"), answered(custom_id, "A"))
    expected = rf"out\.jsonl:2: the line's custom_id is {kind}"
    with pytest.raises(ts.ConfigurationError, match=expected):
        read(predict, path)


@pytest.mark.parametrize(
    ("line", "kind"),
    [(b'["item-0"]\n', "a list"), (b'"item-0"\n', "a string"), (b"7\n", "a number")],
)
def test_a_line_that_is_not_a_json_object_is_refused_naming_the_line(
    predict: ts.Predict[Any, Any], tmp_path: Path, line: bytes, kind: str
) -> None:
    path = write(tmp_path / "out.jsonl", answered("item-1", "B"), line)
    with pytest.raises(
        ts.ConfigurationError, match=rf"out\.jsonl:2: the line is {kind}, not a JSON"
    ):
        read(predict, path)


@pytest.mark.parametrize("response", [None, "ok", [200]], ids=["null", "a string", "a list"])
def test_a_line_without_a_response_object_is_that_items_error(
    predict: ts.Predict[Any, Any], tmp_path: Path, response: object
) -> None:
    path = write(
        tmp_path / "out.jsonl",
        {"custom_id": "item-0", "response": response, "error": None},
        answered("item-1", "B"),
    )
    results = read(predict, path)

    error = results[0]
    assert isinstance(error, ts.errors.BatchFileError) and error.lines == (1,)
    assert str(error) == "item-0 (line 1): the line has no response"
    assert isinstance(results[1], ts.Prediction) and results[1].answer == "B"  # the rest is kept


def test_a_line_naming_a_key_twice_is_refused_naming_the_line(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    # Was: the last custom_id read, the line taken as another item's.
    line = json.dumps(answered("item-0", "A"))[:-1] + ', "custom_id": "item-1"}\n'
    path = write(tmp_path / "out.jsonl", line.encode())
    with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:1: .*'custom_id' appears twice"):
        read(predict, path)


def test_a_line_that_is_not_utf8_is_refused_naming_the_line(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    # Was: UnicodeDecodeError, naming no line.
    bad = json.dumps(answered("item-1", "B")).encode()[:-1] + b', "note": "\xff"}\n'
    path = write(tmp_path / "out.jsonl", answered("item-0", "A"), b"\n", bad)
    with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:3: the line is not UTF-8") as got:
        read(predict, path)
    assert got.value.__cause__ is None and got.value.__context__ is None  # the line is not kept


def test_a_custom_id_on_two_lines_is_that_items_error_naming_both(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    # Was: the last line silently won (here "SECOND", and an error line could hide a success).
    path = write(
        tmp_path / "out.jsonl",
        answered("item-0", "FIRST"),
        answered("item-1", "B"),
        answered("item-0", "SECOND"),
    )
    results = read(predict, path)

    error = results[0]
    assert isinstance(error, ts.errors.BatchFileError)
    assert error.custom_id == "item-0" and error.lines == (1, 3)
    assert "item-0: 2 lines of the output file hold it (lines 1, 3); none is used" in str(error)
    assert results.items[0].requests == 0
    assert isinstance(results[1], ts.Prediction) and results[1].answer == "B"  # the rest is kept


def test_a_line_past_max_response_bytes_is_refused_without_being_held(
    tmp_path: Path,
) -> None:
    # Was: no cap; the whole line was read, decoded and parsed (a 300 MB line peaked at 715 MB).
    cap, size = 1024 * 1024, 5 * 1024 * 1024
    path = tmp_path / "out.jsonl"
    with path.open("wb") as f:  # written in pieces: the test never holds the line either
        f.write(b'{"custom_id": "item-0", "response": {"status_code": 200, "body": {"pad": "')
        for _ in range(size // 65536):
            f.write(b"x" * 65536)
        f.write(b'"}}}\n')
    lm = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key=KEY, max_response_bytes=cap)
    tracemalloc.start()
    try:
        with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:1: .*max_response_bytes"):
            read(ts.Predict(Ask, lm=lm), path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        lm.close()
    assert peak < 3 * cap  # the line is 5 MiB: at most the cap (and a piece) was held


def test_a_line_of_exactly_max_response_bytes_is_read(tmp_path: Path) -> None:
    line = json.dumps(answered("item-0", "A")).encode()
    path = write(tmp_path / "out.jsonl", line + b"\n", answered("item-1", "B"))
    for cap, fits in [(len(line), True), (len(line) - 1, False)]:
        lm = ts.LM("m", base_url="http://127.0.0.1:9/v1", api_key=KEY, max_response_bytes=cap)
        if fits:
            assert read(ts.Predict(Ask, lm=lm), path)[0].answer == "A"
        else:
            with pytest.raises(ts.ConfigurationError, match=rf"max_response_bytes={cap} bytes"):
                read(ts.Predict(Ask, lm=lm), path)
        lm.close()


def shown(exc: BaseException) -> str:
    """Every way an error is seen: its traceback (chain included), str, repr, args."""
    return "\n".join(["".join(traceback.format_exception(exc)), str(exc), repr(exc.args)])


def test_an_echoed_key_is_redacted_from_every_item_error(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    # Was: the key in the error messages of BatchFileError and LMStatusError.
    said = f"Incorrect API key provided: {KEY}. See your account."
    failed = {"custom_id": "item-0", "response": None, "error": {"message": said}}
    status = {"status_code": 401, "body": {"error": {"message": said}}}
    path = write(tmp_path / "out.jsonl", failed, {"custom_id": "item-1", "response": status})

    results = read(predict, path)

    assert isinstance(results[0], ts.errors.BatchFileError)
    assert isinstance(results[1], ts.errors.LMStatusError) and results[1].status_code == 401
    for _, error in results.errors:
        assert KEY not in shown(error)
        assert "[redacted]" in str(error)


def test_an_echoed_key_is_redacted_from_a_refused_file(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    for line in [
        json.dumps({"custom_id": f"from {KEY}", "response": None}).encode() + b"\n",
        f'{{"custom_id": "item-0", "note": "{KEY}", }}\n'.encode(),  # not JSON; quoted below
    ]:
        path = write(tmp_path / "out.jsonl", line)
        with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:1: ") as got:
            read(predict, path)
        assert KEY not in shown(got.value)
        cause = got.value.__cause__
        assert cause is None or KEY not in repr(vars(cause))  # the JSON error's copy of the line
