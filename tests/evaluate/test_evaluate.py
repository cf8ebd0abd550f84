from __future__ import annotations

import csv
import datetime
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest

import typedspy as ts
from served import nearest, served
from typedspy.testing import Reply, RouteTicket, support_tickets

_, DEV = support_tickets()
BILLING = '{"route":{"_type":"Billing","kind":"refund"}}'


def test_every_failure_kind_is_reported_and_the_run_goes_on() -> None:
    devset = DEV[:7]
    with served() as (server, _):
        server.enqueue(
            BILLING,  # right for DEV[0]
            "not json at all",  # decode
            '{"route":{"_type":"Billing","kind":"gift"}}',  # validation
            Reply(content='{"route":', finish_reason="length"),  # truncation
            Reply(refusal="I cannot help with that."),  # refusal
            Reply(status=500),  # transport
            '{"route":{"_type":"Account","action":"close"}}',  # wrong answer for DEV[6]
        )
        report = ts.evaluate(ts.Predict(RouteTicket, max_retries=0), devset, concurrency=1)
    assert [i.failure for i in report.items] == [
        None, "decode", "validation", "truncation", "refusal", "transport", None,
    ]  # fmt: skip
    assert report.failures == {
        "decode": 1, "validation": 1, "truncation": 1, "refusal": 1, "transport": 1,
    }  # fmt: skip
    assert [i.score for i in report.items] == [1.0, 0, 0, 0, 0, 0, 0.0]
    assert report.score == pytest.approx(1 / 7)
    assert report.field_scores == {"route": 0.5}  # over the two items that ran
    assert report.items[0].outputs == {"route": {"_type": "Billing", "kind": "refund"}}
    assert report.items[2].error is not None and "OutputValidationError" in report.items[2].error
    assert report.calls == 7  # requests sent (docs/evaluate.md): the 500 went out too
    assert report.prompt_tokens == sum(i.prompt_tokens for i in report.items) > 0
    assert [i.index for i in report.worst(2)] == [1, 2]  # failures first, dataset order
    assert len(report.slowest(3)) == 3


def test_report_exports_json_csv_and_a_table(tmp_path: Path) -> None:
    with served(nearest()):
        report = ts.evaluate(ts.Predict(RouteTicket), DEV)
    assert report.percent == 16.67  # the model answers its fallback: right for 2 of 12
    data = json.loads(report.to_json(tmp_path / "r.json"))
    assert data["score"] == report.score
    assert len(data["items"]) == 12
    assert (
        ts.evaluation.EvaluationReport.model_validate_json((tmp_path / "r.json").read_text())
        == report
    )
    rows = list(csv.DictReader(io.StringIO(report.to_csv(tmp_path / "r.csv"))))
    assert (tmp_path / "r.csv").read_text() == report.to_csv()
    assert [float(r["score.route"]) for r in rows].count(1.0) == 2
    assert json.loads(rows[0]["expected"]) == {"route": DEV[0].to_dict()["route"]}
    assert json.loads(rows[0]["inputs"]) == {"ticket": DEV[0].ticket}
    table = str(report)
    assert "score             16.67%" in table
    assert "route             16.67%" in table
    assert "12 calls" in table
    assert "worst:" in table and "slowest:" in table


def test_a_program_that_raises_is_an_error_item_not_an_exception() -> None:
    class Broken(ts.Module):
        async def aforward(self, **inputs: object) -> object:
            raise RuntimeError("bug in my module")

    report = ts.evaluate(Broken(), DEV[:2])
    assert report.failures == {"error": 2}
    assert report.items[0].error == "RuntimeError: bug in my module"
    assert report.score == 0.0


def test_evaluate_class_is_reusable_and_failure_score_applies() -> None:
    class Broken(ts.Module):
        async def aforward(self, **inputs: object) -> object:
            raise ts.errors.LMConnectionError("down")

    dev = ts.evaluation.Evaluate(DEV[:3], failure_score=0.25)
    report = dev(Broken())
    assert report.failures == {"transport": 3}
    assert report.score == 0.25
    with pytest.raises(ts.ConfigurationError, match="empty"):
        ts.evaluate(Broken(), [])


def test_evaluate_runs_on_the_batch_machinery_budget_and_progress() -> None:
    seen: list[int] = []
    with served(nearest()) as (server, _):
        report = ts.evaluate(
            ts.Predict(RouteTicket, max_retries=0),
            DEV,
            concurrency=1,
            budget=ts.limits.Budget(requests=4),
            on_progress=lambda p: seen.append(p.done),
        )
    assert len(server.requests) == 4
    assert report.failures == {"budget": 8}
    assert [i.failure for i in report.items[:5]] == [None, None, None, None, "budget"]
    assert seen == list(range(1, 13))


def test_an_item_past_the_timeout_is_reported_as_a_timeout_and_the_others_score() -> None:
    answer = nearest()
    hung = DEV[1].ticket
    release = threading.Event()

    def reply(body: dict[str, Any]) -> str:
        if hung in body["messages"][-1]["content"]:
            release.wait(60)  # a bound; the test releases it as soon as the evaluation ends
        return answer(body)

    try:
        with served(reply) as (server, _):  # type: ignore[arg-type]
            report = ts.evaluate(ts.Predict(RouteTicket), DEV[:3], concurrency=3, timeout=3.0)
    finally:
        release.set()
    assert [i.failure for i in report.items] == [None, "timeout", None]
    assert report.failures == {"timeout": 1}
    assert report.items[1].error is not None and "ItemTimeoutError" in report.items[1].error
    assert report.items[1].score == 0.0
    assert report.worst(1)[0].index == 1
    assert report.slowest(1)[0].index == 1 and report.items[1].seconds >= 3.0
    assert len(server.requests) == 3
    assert "failures         timeout 1" in report.table()


class Measure(ts.Signature):
    """Measure the text."""

    text: str = ts.InputField()
    size: float = ts.OutputField()


def test_a_report_of_a_row_with_a_lone_surrogate_or_nan_is_written_and_read_back(
    tmp_path: Path,
) -> None:
    # A JSONL row may escape half an emoji ("\ud83d") and label a NaN. Was: to_json raised
    # PydanticSerializationError and to_csv(path) UnicodeEncodeError for the surrogate, and
    # to_json wrote the NaN as null (it read back as None) where to_csv wrote NaN.
    path = tmp_path / "dev.jsonl"
    path.write_text('{"text": "hi \\ud83d", "size": NaN}\n', encoding="utf-8")
    devset = ts.evaluation.load_dataset(path, Measure)
    with served(lambda _: '{"size": 2.0}') as (server, _):
        report = ts.evaluate(ts.Predict(Measure), devset)
    assert server.requests[0]["messages"][-1]["content"].count("hi \ufffd") == 1  # as sent
    [item] = report.items
    assert item.inputs == {"text": "hi \ufffd"}
    back = ts.evaluation.EvaluationReport.model_validate_json(report.to_json(tmp_path / "r.json"))
    assert back.items[0].inputs == item.inputs
    assert str(back.items[0].expected["size"]) == "nan"
    report.to_csv(tmp_path / "r.csv")
    [row] = csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8")))
    assert row["inputs"] == '{"text": "hi \ufffd"}' and row["expected"] == '{"size": NaN}'


class Opaque:
    """A value JSON cannot hold (like a numpy scalar)."""

    def __repr__(self) -> str:
        return "Opaque()"


class Dated:
    """A result with its own ``to_dict``, whose date is no JSON type."""

    def to_dict(self) -> dict[str, object]:
        return {"when": datetime.date(2026, 11, 27)}


@pytest.mark.parametrize(
    ("result", "outputs", "written"),
    [
        ({"n": Opaque()}, {"result": "{'n': Opaque()}"}, {"result": "{'n': Opaque()}"}),
        (Dated(), {"when": datetime.date(2026, 11, 27)}, {"when": "2026-11-27"}),
    ],
)
def test_a_result_json_cannot_hold_keeps_its_score_and_the_report_writes(
    tmp_path: Path, result: object, outputs: dict[str, object], written: dict[str, object]
) -> None:
    # Was: ts.evaluate raised PydanticSerializationError after every run, report lost.
    class Odd(ts.Module):
        async def aforward(self, **inputs: object) -> object:
            return result

    report = ts.evaluate(Odd(), DEV[:2], lambda example, prediction: 1.0)
    assert report.score == 1.0 and not report.failures
    assert report.items[0].outputs == outputs
    saved = json.loads(report.to_json(tmp_path / "r.json"))
    assert saved["items"][0]["outputs"] == written


def test_an_example_value_json_cannot_hold_is_shown_by_its_repr_and_the_report_writes(
    tmp_path: Path,
) -> None:
    # A custom module's raw bytes input: Example.to_dict raised UnicodeDecodeError (an object:
    # PydanticSerializationError) when the report was built, and the evaluation was lost.
    class Sniff(ts.Module):
        async def aforward(self, **inputs: object) -> object:
            return {"kind": "png" if inputs["data"] == b"\x89PNG" else "other"}

    devset = [
        ts.Example(data=b"\x89PNG", kind="png").with_inputs("data"),
        ts.Example(data=b"\xff", kind="other").with_inputs("data"),
    ]
    report = ts.evaluate(Sniff(), devset, lambda example, prediction: 1.0)
    assert report.score == 1.0 and not report.failures
    assert [item.inputs for item in report.items] == [
        {"data": "b'\\x89PNG'"},
        {"data": "b'\\xff'"},
    ]
    assert report.items[1].expected == {"kind": "other"}
    saved = json.loads(report.to_json(tmp_path / "r.json"))
    assert saved["items"][1]["inputs"] == {"data": "b'\\xff'"}
