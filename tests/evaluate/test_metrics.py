from __future__ import annotations

import asyncio
import json
import math

import pytest
from pydantic import BaseModel

import typedspy as ts
from served import served
from typedspy import metrics


class Bug(BaseModel):
    component: str
    severity: float


class Question(BaseModel):
    topic: str


class Triage(ts.Signature):
    """Triage a ticket."""

    text: str = ts.InputField()
    label: Bug | Question = ts.OutputField()
    tags: list[str] = ts.OutputField()
    summary: str = ts.OutputField()


EXAMPLE = ts.Example(
    Triage,
    text="app crash",
    label=Bug(component="app", severity=0.3),
    tags=["crash", "app"],
    summary="The app crashes.",
)


def pred(**outputs: object) -> ts.Prediction[Triage]:
    base: dict[str, object] = {
        "label": Bug(component="app", severity=0.3),
        "tags": ["crash", "app"],
        "summary": "The app crashes.",
    }
    return ts.Prediction(Triage, {**base, **outputs})


def test_comparers() -> None:
    assert metrics.exact()(0.1 + 0.2, 0.3) == 1.0
    assert metrics.exact(abs_tol=0.01)(1.0, 1.005) == 1.0
    assert metrics.exact()(1.0, 1.1) == 0.0
    assert metrics.exact()(True, 1) == 0.0  # a bool is not a number here
    assert metrics.exact()(Bug(component="a", severity=0.1), Question(topic="a")) == 0.0
    assert metrics.normalized()("The  App, crashes!", "the app crashes") == 1.0
    assert metrics.normalized()("app", "web") == 0.0
    assert metrics.type_match()(Bug(component="a", severity=1), Bug(component="b", severity=2))
    assert metrics.type_match()(Bug(component="a", severity=1), Question(topic="a")) == 0.0
    assert metrics.f1()(["a", "b", "c", "d"], ["a", "b"]) == pytest.approx(2 / 3)
    assert metrics.f1()([], []) == 1.0
    assert metrics.f1()("the app crashes", "app crashes badly") == pytest.approx(2 / 3)


def test_default_field_metric_scores_every_labelled_field() -> None:
    metric = metrics.FieldMetric()
    assert metric(EXAMPLE, pred()) == 1.0
    wrong = pred(label=Bug(component="app", severity=0.3000001), summary="The app crashes")
    assert metric.per_field(EXAMPLE, wrong) == {"label": 1.0, "tags": 1.0, "summary": 0.0}
    assert metric(EXAMPLE, wrong) == pytest.approx(2 / 3)


def test_composite_field_metric_with_weights_and_comparers() -> None:
    metric = metrics.FieldMetric(
        {"label": metrics.type_match(), "tags": metrics.f1(), "summary": metrics.normalized()},
        weights={"label": 2, "tags": 1, "summary": 1},
    )
    p = pred(label=Bug(component="web", severity=1), tags=["crash"], summary="the APP crashes")
    assert metric.per_field(EXAMPLE, p) == {
        "label": 1.0,
        "tags": pytest.approx(2 / 3),
        "summary": 1.0,
    }
    assert metric(EXAMPLE, p) == pytest.approx((2 + 2 / 3 + 1) / 4)
    assert metrics.union_accuracy("label")(EXAMPLE, pred(label=Question(topic="x"))) == 0.0


@pytest.mark.parametrize("weight", [math.nan, math.inf, -1, "2", None])
def test_a_weight_that_is_no_finite_number_at_least_zero_is_refused(weight: object) -> None:
    # A NaN or infinite weight made every score NaN (a composite's past the NaN check), a
    # string a TypeError at the first score, a negative composite weight a silent 0.0.
    with pytest.raises(ts.ConfigurationError, match=r"FieldMetric: weights\['label'\]="):
        metrics.FieldMetric(weights={"label": weight})  # type: ignore[dict-item]
    with pytest.raises(ts.ConfigurationError, match=r"composite: weights\['a'\]="):
        metrics.composite({"a": metrics.FieldMetric()}, weights={"a": weight})  # type: ignore[dict-item]


def test_a_composite_weight_naming_no_metric_is_refused() -> None:
    with pytest.raises(ts.ConfigurationError, match=r"weights name \['feilds'\]"):
        metrics.composite({"fields": metrics.FieldMetric()}, weights={"feilds": 2})


def test_integers_past_a_float_compare_by_value() -> None:
    # Labels of 400 digits (JSON reads them exactly): math.isclose raised OverflowError.
    big = 10**400
    for compare in (metrics.exact(), metrics.normalized(), metrics.f1(), metrics.type_match()):
        assert compare(big, big) == 1.0
        assert compare(big, big + 1) == 0.0
        assert compare(big, 1.0) == 0.0


def test_composite_of_plain_functions_reports_each_part() -> None:
    def short(example: ts.Example, prediction: ts.Prediction[Triage]) -> bool:
        return len(prediction.summary) < 10

    metric = metrics.composite(
        {"fields": metrics.FieldMetric(), "short": short}, weights={"fields": 3}
    )
    devset = [EXAMPLE]

    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    report = ts.evaluate(Fixed(), devset, metric)
    assert report.field_scores == {"fields": 1.0, "short": 0.0}
    assert report.score == pytest.approx(0.75)


class JudgeSummary(ts.Signature):
    """Does the predicted summary say what the expected one says?"""

    text: str = ts.InputField()
    expected_summary: str = ts.InputField()
    predicted_summary: str = ts.InputField()
    same: bool = ts.OutputField()


def test_llm_judge_fills_its_inputs_by_name_and_scores_with_its_bool() -> None:
    with served() as (standin, lm):
        standin.enqueue('{"same": true}', '{"same": false}')
        judge = ts.evaluation.LLMJudge(JudgeSummary, lm=lm)
        assert judge(EXAMPLE, pred(summary="It crashes.")) == 1.0
        assert judge(EXAMPLE, pred(summary="All fine.")) == 0.0
    first = standin.requests[0]["messages"][-1]["content"]
    assert "<expected_summary>\nThe app crashes.\n</expected_summary>" in first
    assert "<predicted_summary>\nIt crashes.\n</predicted_summary>" in first
    assert "<text>\napp crash\n</text>" in first


def test_llm_judge_needs_a_score_output() -> None:
    with pytest.raises(ts.ConfigurationError, match="needs a bool, int or float output"):
        ts.evaluation.LLMJudge(ts.make_signature("a -> verdict"))


def test_a_metric_returning_something_else_is_a_reported_failure() -> None:
    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    report = ts.evaluate(Fixed(), [EXAMPLE], lambda e, p: "yes")  # type: ignore[arg-type,return-value]
    assert report.failures == {"metric": 1}
    error = report.items[0].error
    assert error is not None and "return a finite float or a bool" in error
    assert json.loads(report.to_json())["failures"] == {"metric": 1}


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), float("-inf"), 10**400],
    ids=["nan", "inf", "-inf", "400-digits"],
)
def test_a_metric_returning_a_non_finite_score_is_a_reported_failure(value: float) -> None:
    # A NaN (0/0 in a user's metric) made the whole report's score NaN, and an optimizer's
    # comparisons with it false: the item is a metric failure at the failure score instead.
    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    examples = [EXAMPLE, EXAMPLE]
    scores = iter([value, 1.0])
    report = ts.evaluate(Fixed(), examples, lambda e, p: next(scores), concurrency=1)
    assert report.score == 0.5
    assert report.failures == {"metric": 1}
    assert report.items[0].error is not None and "a finite float" in report.items[0].error


def test_a_judge_runs_inside_each_item_its_requests_counted_and_budgeted() -> None:
    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    with served() as (standin, lm):
        standin.enqueue('{"same": true}', '{"same": false}')
        judge = ts.evaluation.LLMJudge(JudgeSummary, lm=lm)
        report = ts.evaluate(
            Fixed(), [EXAMPLE] * 3, judge, concurrency=1, budget=ts.limits.Budget(requests=2)
        )
    assert [i.score for i in report.items] == [1.0, 0.0, 0.0]
    assert [i.calls for i in report.items] == [1, 1, 0]
    assert report.failures == {"metric": 1}  # the budget refused the third judge call
    assert report.items[2].error is not None and "BudgetExceededError" in report.items[2].error


class JudgeWhole(ts.Signature):
    """Is the prediction as good as the expected answer?"""

    expected: str = ts.InputField()
    predicted: str = ts.InputField()
    score: float = ts.OutputField(ge=0, le=1)


LABELS = '{"label": {"_type": "Bug", "component": "app", "severity": 0.3}, "tags": ["crash", "app"]'


@pytest.mark.parametrize(
    ("prediction", "shown"),
    [
        (pred(summary="It crashes."), LABELS + ', "summary": "It crashes."}'),
        (  # a program returning a plain dict: its outputs, union members tagged
            {"summary": "x", "label": Question(topic="t")},
            '{"summary": "x", "label": {"_type": "Question", "topic": "t"}}',
        ),
        ("just text", '"just text"'),  # a program returning no mapping: the value itself
    ],
)
def test_llm_judge_sees_every_label_and_the_whole_prediction_as_json(
    prediction: object, shown: str
) -> None:
    with served() as (standin, lm):
        standin.enqueue('{"score": 0.5}')
        judge = ts.evaluation.LLMJudge(JudgeWhole, lm=lm)
        assert judge(EXAMPLE, prediction) == 0.5
    user = standin.requests[0]["messages"][-1]["content"]
    assert f'<expected>\n{LABELS}, "summary": "The app crashes."}}\n</expected>' in user
    assert f"<predicted>\n{shown}\n</predicted>" in user  # the input "text" is no label
    assert repr(judge) == "LLMJudge(JudgeWhole, score='score')"


def test_field_metric_scores_a_missing_output_0_and_skips_what_has_no_label() -> None:
    metric = metrics.FieldMetric(only=["summary", "tags", "unlabelled"], weights={"tags": 3})
    assert (
        repr(metric) == "FieldMetric(only=['summary', 'tags', 'unlabelled'], weights={'tags': 3.0})"
    )
    assert metric.per_field(EXAMPLE, {"summary": "The app crashes."}) == {
        "summary": 1.0,
        "tags": 0.0,  # the prediction has no tags
    }
    assert metric(EXAMPLE, {"summary": "The app crashes."}) == 0.25
    assert metric(EXAMPLE, None) == 0.0  # no prediction at all: every field 0
    assert metric(ts.Example(Triage, text="unlabelled"), pred()) == 0.0  # nothing to score
    assert repr(metrics.FieldMetric({"tags": metrics.f1()})) == "FieldMetric(tags=f1())"


def test_a_composite_scores_called_directly_sync_or_async_and_needs_a_metric() -> None:
    async def short(example: ts.Example, prediction: ts.Prediction[Triage]) -> bool:
        return len(prediction.summary) < 10  # an async plain function: awaited

    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    metric = metrics.composite({"fields": metrics.FieldMetric(), "short": short})
    assert metric(EXAMPLE, pred()) == 0.5
    ascore = metric.ascore  # type: ignore[attr-defined]
    assert asyncio.run(ascore(EXAMPLE, pred(summary="Short."))) == pytest.approx(5 / 6)
    report = ts.evaluate(Fixed(), [EXAMPLE], short)
    assert report.score == 0.0 and not report.failures
    with pytest.raises(ts.ConfigurationError, match="composite needs at least one metric"):
        metrics.composite({})


def test_f1_compares_list_items_that_are_models_or_mappings_by_value() -> None:
    bugs = [Bug(component="app", severity=0.3), Bug(component="ui", severity=1)]
    assert metrics.f1()(bugs, [Bug(component="app", severity=0.3)]) == pytest.approx(2 / 3)
    assert metrics.f1()([{"a": 1, "b": 2}], [{"b": 2, "a": 1}]) == 1.0  # key order aside
    assert metrics.f1()([[1, 2], 3], [[2, 1], 4]) == 0.0  # nothing in common


def test_field_metric_weights_that_leave_nothing_to_average_are_refused() -> None:
    # Every scored field weighing 0 scored every example 0.0, silently.
    with pytest.raises(ts.ConfigurationError, match=r"every field scored \(summary\) has weight 0"):
        metrics.FieldMetric(only=["summary"], weights={"summary": 0})
    with pytest.raises(ts.ConfigurationError, match=r"only=\[\] scores no field"):
        metrics.FieldMetric(only=[])
    with pytest.raises(ts.ConfigurationError, match=r"weights name \['sumary'\], which are not"):
        metrics.FieldMetric(only=["summary"], weights={"sumary": 2})
    with pytest.raises(ts.ConfigurationError, match=r"composite: every metric has weight 0"):
        metrics.composite(
            {"a": metrics.FieldMetric(), "b": metrics.FieldMetric()}, weights={"a": 0, "b": 0}
        )
    zero = metrics.FieldMetric(weights={"label": 0, "tags": 0, "summary": 0})
    with pytest.raises(ts.ConfigurationError, match=r"every field scored \(.*\) has weight 0"):
        zero(EXAMPLE, pred())
    partly = metrics.FieldMetric(only=["summary", "tags"], weights={"tags": 0})
    assert partly(EXAMPLE, {"summary": "The app crashes."}) == 1.0  # tags left out: weight 0


def test_an_all_zero_weight_metric_fails_each_item_visibly_in_evaluate() -> None:
    class Fixed(ts.Module):
        async def aforward(self, **inputs: object) -> ts.Prediction[Triage]:
            return pred()

    zero = metrics.FieldMetric(weights={"label": 0, "tags": 0, "summary": 0})
    report = ts.evaluate(Fixed(), [EXAMPLE], zero)
    assert report.failures and "has weight 0" in str(report.items[0].error)
