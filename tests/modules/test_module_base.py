"""The Module base: sub-module discovery, save/load of state, the sync entry point."""

from __future__ import annotations

import asyncio
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx
from react_wire import BASE_URL, bodies, make_lm

import typedspy as ts
from pipeline_modules import Check, Estimate, Exact, Measure, Owner, Pipeline, Summarize
from typedspy.errors import ConfigurationError
from typedspy.testing import FakeLM, chat_completion

# -- signatures and modules --------------------------------------------------------------------


DEMO = {
    "question": "How long is the bridge?",
    "day": datetime.date(2024, 1, 2),
    "result": Estimate(low=1.5, high=2.0),
    "owner": Owner(name="Ann"),
}
MEASURED = {"result": {"_type": "Exact", "value": 3.0}, "owner": {"name": "Bo"}}


def ok(data: Any) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(json.dumps(data)))


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=True) as mock:
        yield mock


# -- discovery ---------------------------------------------------------------------------------


def test_named_modules_walks_attributes_lists_and_dicts_once_each() -> None:
    pipeline = Pipeline()
    pipeline.alias = pipeline.measure  # the same object twice is listed once

    names = [name for name, _ in pipeline.named_modules()]

    assert names == [
        "self",
        "measure",
        "steps[0]",
        "steps[1]",
        "experts['checker']",
        "steps[1].check",
    ]
    modules = dict(pipeline.named_modules())
    assert modules["self"] is pipeline
    assert modules["steps[1].check"] is pipeline.steps[1].check


def test_named_predictors_lists_every_predict_with_its_path() -> None:
    pipeline = Pipeline()

    found = pipeline.named_predictors()

    assert [name for name, _ in found] == [
        "measure",
        "steps[0]",
        "experts['checker']",
        "steps[1].check",
    ]
    assert [type(p).__name__ for _, p in found] == [
        "Predict",
        "ChainOfThought",
        "Predict",
        "Predict",
    ]
    assert ts.Predict(Check).named_predictors()[0][0] == "self"


# -- save / load -------------------------------------------------------------------------------


def test_predict_state_is_json_with_demo_values_as_the_prompt_shows_them(tmp_path: Path) -> None:
    predict = ts.Predict(Measure, demos=[DEMO])
    predict.instructions = "Measure carefully; prefer exact values."
    path = tmp_path / "measure.json"

    predict.save(path)

    saved = json.loads(path.read_text(encoding="utf-8"))
    assert sorted(saved) == ["predictors", "scored", "version"]
    assert saved["version"] == 2 and saved["scored"] is None
    state = saved["predictors"].pop("self")  # a predictor saved on its own is at "self"
    assert saved["predictors"] == {}
    fresh = ts.Predict(Measure).dump_state()["predictors"]["self"]
    assert state.pop("fingerprint") == fresh["fingerprint"]
    assert state == {
        "signature": "Measure",
        "instructions": "Measure carefully; prefer exact values.",
        "demos": [
            {
                "question": "How long is the bridge?",
                "day": "2024-01-02",
                "result": {"_type": "Estimate", "low": 1.5, "high": 2.0},
                "owner": {"name": "Ann"},  # not in a union: no tag, as in the prompt
            }
        ],
    }


def test_loaded_demos_are_typed_values_again(tmp_path: Path) -> None:
    path = tmp_path / "measure.json"
    ts.Predict(Measure, demos=[DEMO]).save(path)
    loaded = ts.Predict(Measure)

    loaded.load(path)

    assert loaded.demos == [DEMO]
    assert type(loaded.demos[0]["result"]) is Estimate
    assert type(loaded.demos[0]["day"]) is datetime.date


def test_loaded_predict_sends_the_loaded_instructions_and_identical_demos(
    router: respx.MockRouter, tmp_path: Path
) -> None:
    route = router.post("/chat/completions").mock(side_effect=[ok(MEASURED), ok(MEASURED)])
    original = ts.Predict(Measure, lm=make_lm(), demos=[DEMO], mode="json_schema")
    original.instructions = "Measure carefully; prefer exact values."
    path = tmp_path / "measure.json"
    original.save(path)
    loaded = ts.Predict(Measure, lm=make_lm(), mode="json_schema")
    assert loaded.instructions == "Measure the quantity."

    loaded.load(path)
    inputs = {"question": "How tall?", "day": datetime.date(2024, 5, 1)}
    first = original(**inputs)
    second = loaded(**inputs)

    sent_original, sent_loaded = bodies(route)
    assert sent_loaded["messages"] == sent_original["messages"]
    system = sent_loaded["messages"][0]
    assert system["role"] == "system"
    assert system["content"] == "Measure carefully; prefer exact values."
    assert "Measure the quantity." not in system["content"]
    assert sent_loaded["messages"][1]["content"] == (
        '<question>\nHow long is the bridge?\n</question>\n<day>\n"2024-01-02"\n</day>'
    )
    assert sent_loaded["messages"][2]["content"] == (
        '{"result":{"_type":"Estimate","low":1.5,"high":2.0},"owner":{"name":"Ann"}}'
    )
    assert first.result == second.result == Exact(value=3.0)


def test_composite_save_load_round_trip_over_the_wire(
    router: respx.MockRouter, tmp_path: Path
) -> None:
    trained = Pipeline()
    trained.measure.instructions = "Measure in metres."
    trained.measure.demos = [DEMO]
    trained.steps[0].instructions = "Summarize in five words."
    trained.experts["checker"].demos = [{"claim": "water is wet", "ok": True}]
    path = tmp_path / "pipeline.json"
    trained.save(path)
    saved = json.loads(path.read_text(encoding="utf-8"))["predictors"]
    assert sorted(saved) == ["experts['checker']", "measure", "steps[0]", "steps[1].check"]
    assert saved["steps[0]"]["instructions"] == "Summarize in five words."

    route = router.post("/chat/completions").mock(
        side_effect=[ok(MEASURED), ok({"reasoning": "It is exact.", "summary": "three metres"})]
    )
    fresh = Pipeline(lm=make_lm())
    fresh.load(path)
    out = fresh(question="How long?")

    measure_body, summary_body = bodies(route)
    assert measure_body["messages"][0]["content"] == "Measure in metres."
    assert len(measure_body["messages"]) == 4  # system, one demo (user, assistant), the inputs
    assert summary_body["messages"][0]["content"] == "Summarize in five words."
    assert fresh.steps[0].original_signature.instructions == "Summarize in five words."
    assert fresh.experts["checker"].demos == [{"claim": "water is wet", "ok": True}]
    assert out == {"result": Exact(value=3.0), "summary": "three metres"}


def test_state_of_another_module_structure_is_refused_naming_the_paths(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.json"
    Pipeline().save(path)

    class Smaller(ts.Module):
        def __init__(self) -> None:
            self.measure = ts.Predict(Measure)
            self.extra = ts.Predict(Summarize)

    target = Smaller()
    target.measure.instructions = "untouched"
    with pytest.raises(ConfigurationError) as caught:
        target.load(path)

    message = str(caught.value)
    for path_name in ("steps[0]", "experts['checker']", "steps[1].check", "extra"):
        assert path_name in message
    assert target.measure.instructions == "untouched"  # nothing loaded


def test_state_for_another_signature_at_a_path_is_refused_and_nothing_loads() -> None:
    pipeline = Pipeline()
    state = pipeline.dump_state()
    state["predictors"]["measure"]["instructions"] = "new"
    state["predictors"]["steps[1].check"]["signature"] = "Summarize"

    with pytest.raises(ConfigurationError, match=r"steps\[1\]\.check.*Summarize") as caught:
        pipeline.load_state(state)

    assert "Check" in str(caught.value)
    assert pipeline.measure.instructions == "Measure the quantity."


def test_single_predictor_state_and_composite_state_do_not_mix() -> None:
    single = ts.Predict(Measure).dump_state()
    composite = Pipeline().dump_state()

    with pytest.raises(ConfigurationError, match=r"\['self'\]") as caught:
        Pipeline().load_state(single)
    assert "measure" in str(caught.value)
    with pytest.raises(ConfigurationError, match=r"steps\[0\]"):
        ts.Predict(Measure).load_state(composite)


# -- sync entry point --------------------------------------------------------------------------


def test_a_sync_call_inside_aforward_names_acall() -> None:
    lm = FakeLM([])

    class Outer(ts.Module):
        def __init__(self) -> None:
            self.check = ts.Predict(Check, lm=lm)

        async def aforward(self, *, claim: str) -> Any:
            return self.check(claim=claim)  # sync, on typedspy's own loop: would wait for itself

    with pytest.raises(ConfigurationError) as caught:
        Outer()(claim="x")

    assert "await predict.acall(...)" in str(caught.value)
    assert lm.requests == []


def test_a_sync_call_inside_a_running_loop_works() -> None:
    lm = FakeLM(['{"ok": true}'])
    predict = ts.Predict(Check, lm=lm)

    async def cell() -> Any:
        return predict(claim="water is wet")  # a notebook cell: blocks this loop, runs on ours

    assert asyncio.run(cell()).ok is True
    assert len(lm.requests) == 1
