"""Batch API JSONL: written as Predict sends it, run by a stand-in "batch worker", read back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import typedspy as ts
from typedspy.testing import Reply, StandIn


class Double(ts.Signature):
    """Double the number."""

    number: int = ts.InputField()
    doubled: int = ts.OutputField()


INPUTS = [{"number": i} for i in range(4)]


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as running:
        yield running


@pytest.fixture
def predict(server: StandIn) -> Iterator[ts.Predict[Any, Any]]:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
    yield ts.Predict(Double, lm=lm)
    lm.close()


def run_batch_file(server: StandIn, source: Path, target: Path) -> None:
    """What the Batch API (or ``vllm run-batch``) does: POST each body, write the results."""
    out = []
    with httpx.Client(base_url=server.url) as client:
        for number, text in enumerate(source.read_text().splitlines()):
            line = json.loads(text)
            reply = client.post(line["url"], json=line["body"])
            response = {"status_code": reply.status_code, "request_id": f"r{number}"}
            out.append(
                {
                    "id": f"batch_req_{number}",
                    "custom_id": line["custom_id"],
                    "response": {**response, "body": reply.json()},
                    "error": None,
                }
            )
    target.write_text("".join(json.dumps(o) + "\n" for o in out))


def test_the_file_holds_the_bodies_predict_sends(
    server: StandIn, predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    path = tmp_path / "in.jsonl"
    ids = ts.batch_api.write_batch_file(predict, INPUTS[:2], path)
    predict(number=0)  # the live call, for comparison

    lines = [json.loads(t) for t in path.read_text().splitlines()]
    assert ids == ["item-0", "item-1"]
    assert [(x["custom_id"], x["method"], x["url"]) for x in lines] == [
        ("item-0", "POST", "/v1/chat/completions"),
        ("item-1", "POST", "/v1/chat/completions"),
    ]
    assert lines[0]["body"] == server.requests[0]
    assert lines[0]["body"]["model"] == "standin-1"
    assert lines[0]["body"]["response_format"]["type"] == "json_schema"
    assert "<number>\n1\n</number>" in lines[1]["body"]["messages"][-1]["content"]


def test_a_round_trip_gives_the_same_per_item_results_as_a_live_batch(
    server: StandIn, predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    ts.batch_api.write_batch_file(predict, INPUTS, tmp_path / "in.jsonl")
    server.enqueue('{"doubled": 0}', '{"doubled": "two"}', Reply(refusal="no"), '{"doubled": 6}')
    run_batch_file(server, tmp_path / "in.jsonl", tmp_path / "out.jsonl")

    results = ts.batch_api.read_batch_file(predict, INPUTS, tmp_path / "out.jsonl")

    assert len(server.requests) == 4  # reading sends nothing
    assert isinstance(results[0], ts.Prediction) and results[0].doubled == 0
    assert isinstance(results[1], ts.errors.OutputValidationError)
    assert str(results[1].errors[0]).startswith("doubled:")
    assert isinstance(results[2], ts.errors.RefusalError)
    assert isinstance(results[3], ts.Prediction) and results[3].doubled == 6
    assert len(results[3].attempts) == 1
    assert results.usage.total_tokens > 0
    assert [item.requests for item in results.items] == [1, 1, 1, 1]


def test_missing_failed_and_error_status_lines_are_typed_item_results(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    ids = ts.batch_api.write_batch_file(
        predict, INPUTS[:3], tmp_path / "in.jsonl", custom_ids=["a", "b", "c"]
    )
    status = {"status_code": 429, "request_id": "r", "body": {"error": {"message": "slow down"}}}
    out = [
        {"id": "1", "custom_id": "a", "response": None, "error": {"code": "x", "message": "boom"}},
        {"id": "2", "custom_id": "b", "response": status, "error": None},
    ]
    (tmp_path / "out.jsonl").write_text("".join(json.dumps(o) + "\n" for o in out))

    results = ts.batch_api.read_batch_file(
        predict, INPUTS[:3], tmp_path / "out.jsonl", custom_ids=ids
    )

    assert isinstance(results[0], ts.errors.BatchFileError) and "boom" in str(results[0])
    assert isinstance(results[1], ts.errors.LMStatusError) and results[1].status_code == 429
    assert isinstance(results[2], ts.errors.BatchFileError) and results[2].custom_id == "c"
    assert "no line" in str(results[2])


def test_an_output_line_from_another_batch_is_refused(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    line = {"custom_id": "item-99", "response": None, "error": None}
    (tmp_path / "out.jsonl").write_text(json.dumps(line) + "\n")
    with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:1: custom_id 'item-99'"):
        ts.batch_api.read_batch_file(predict, INPUTS, tmp_path / "out.jsonl")
    (tmp_path / "out.jsonl").write_text("{not json\n")
    with pytest.raises(ts.ConfigurationError, match="not a JSON line"):
        ts.batch_api.read_batch_file(predict, INPUTS, tmp_path / "out.jsonl")
    deep = '{"custom_id": "item-0", "response": ' + "[" * 5_000 + "]" * 5_000 + "}"
    (tmp_path / "out.jsonl").write_text(deep + "\n")  # was an untyped RecursionError
    with pytest.raises(ts.ConfigurationError, match=r"out\.jsonl:1: .*256 levels"):
        ts.batch_api.read_batch_file(predict, INPUTS, tmp_path / "out.jsonl")


def test_a_bad_input_writes_no_file_at_all(predict: ts.Predict[Any, Any], tmp_path: Path) -> None:
    with pytest.raises(ts.InputError, match="batch input 2"):
        ts.batch_api.write_batch_file(
            predict, [{"number": 1}, {"number": 2}, {"numbr": 3}], tmp_path / "x"
        )
    assert list(tmp_path.iterdir()) == []


def test_custom_ids_must_be_unique_and_one_per_input(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    with pytest.raises(ts.ConfigurationError, match="2 unique ids"):
        ts.batch_api.write_batch_file(predict, INPUTS[:2], tmp_path / "x", custom_ids=["a", "a"])


@pytest.mark.parametrize("ids", ["ab", [None, 7], [b"a", b"b"]], ids=["a-str", "not-strs", "bytes"])
def test_custom_ids_must_be_a_list_of_strings(
    predict: ts.Predict[Any, Any], tmp_path: Path, ids: Any
) -> None:
    # "ab" was read as the ids 'a' and 'b'; None and 7 were written as 'None' and '7'.
    with pytest.raises(ts.ConfigurationError, match="custom_ids must be a list of str ids"):
        ts.batch_api.write_batch_file(predict, INPUTS[:2], tmp_path / "x", custom_ids=ids)
    assert list(tmp_path.iterdir()) == []


def test_a_body_in_the_file_is_what_render_returns(
    predict: ts.Predict[Any, Any], tmp_path: Path
) -> None:
    ts.batch_api.write_batch_file(predict, INPUTS[:2], tmp_path / "in.jsonl")
    lines = [json.loads(t) for t in (tmp_path / "in.jsonl").read_text().splitlines()]
    assert [line["body"] for line in lines] == [predict.render(**item) for item in INPUTS[:2]]


def test_think_then_format_is_refused_writing_and_reading(server: StandIn, tmp_path: Path) -> None:
    lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-test", max_retries=0)
    two_step = ts.Predict(Double, lm=lm, mode="think_then_format")
    (tmp_path / "out.jsonl").write_text("")
    with pytest.raises(ts.ConfigurationError, match="think_then_format sends two"):
        ts.batch_api.write_batch_file(two_step, INPUTS[:1], tmp_path / "in.jsonl")
    with pytest.raises(ts.ConfigurationError, match="think_then_format sends two"):
        ts.batch_api.read_batch_file(two_step, INPUTS[:1], tmp_path / "out.jsonl")
    lm.close()
    assert not (tmp_path / "in.jsonl").exists()
    assert server.requests == []
