"""Checked by mypy --strict in CI (.ci/run), not run by pytest: the public API's static types."""

from __future__ import annotations

from typing import Any, assert_type

import typedspy as ts
from agent_models import Decide


def typed_predict() -> None:
    predict = ts.Predict(Decide)
    assert_type(predict, ts.Predict[Decide])
    pred = predict(task="Ship it")
    assert_type(pred, ts.Prediction[Decide])
    assert_type(pred.usage, ts.Usage)
    assert_type(pred.action, Any)  # field access type-checks; its type is the field's at runtime
    outcome = predict.try_call(task="Ship it")
    assert_type(outcome, ts.Prediction[Decide] | ts.OutputError)


async def typed_async() -> None:
    pred = await ts.Predict(Decide).acall(task="Ship it")
    assert_type(pred, ts.Prediction[Decide])
    result = ts.parse_outputs(Decide, "{}")
    assert_type(result.value, dict[str, Any] | None)
    compiled = ts.compile_schema(Decide)
    assert_type(compiled.schema, dict[str, Any])
