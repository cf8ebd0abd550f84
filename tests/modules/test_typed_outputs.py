"""`pred.outputs`: the signature-typed view of a prediction (ADR-015), at the HTTP boundary."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx

import typedspy as ts
from agent_models import Decide, SpawnTask
from typedspy.testing import chat_completion
from wire import BASE_URL, make_lm, sent

GOOD = {
    "action": {"_type": "SpawnTask", "description": "tag v1", "priority": "high"},
    "confidence": 0.75,
}


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


def test_outputs_is_an_instance_of_the_signature_with_the_typed_values(
    llm: respx.MockRouter,
) -> None:
    route = llm.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(json.dumps(GOOD)))
    )

    pred = ts.Predict(Decide, lm=make_lm())(task="Ship it")

    view = pred.outputs
    assert isinstance(view, Decide)
    assert view.action == SpawnTask(description="tag v1", priority="high")
    assert view.confidence == 0.75
    assert view.action is pred.action  # the validated values themselves, not copies
    with pytest.raises(AttributeError):
        _ = view.task  # inputs are not part of the outputs view
    assert "Ship it" in sent(route)[0]["messages"][-1]["content"]


def test_inputs_are_keywords_positional_arguments_are_refused(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(json.dumps(GOOD)))
    )
    predict = ts.Predict(Decide, lm=make_lm())

    with pytest.raises(ts.InputError, match="keywords"):
        predict("Ship it")  # type: ignore[call-overload]

    assert not route.called
