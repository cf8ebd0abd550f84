"""Issue 23: an input left out takes its default, and the default reaches the model."""

from __future__ import annotations

import json

import typedspy as ts
from typedspy.testing import StandIn


class Summarise(ts.Signature):
    """Summarise the document."""

    document: str = ts.InputField()
    audience: str = ts.InputField(default="engineers")
    tone: list[str] = ts.InputField(default_factory=lambda: ["plain"])
    note: str | None = ts.InputField(default=None)
    summary: str = ts.OutputField()


def sent(**inputs: object) -> str:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            ts.Predict(Summarise, lm=lm)(**inputs)
            body = ts.Predict(Summarise, lm=lm).render(**inputs)
        finally:
            lm.close()
    assert json.loads(json.dumps(body)) == server.requests[0]
    return str(server.requests[0]["messages"][-1]["content"])


def test_a_defaulted_input_left_out_is_sent_with_its_default() -> None:
    prompt = sent(document="The release slipped a week.")
    assert "<audience>\nengineers\n</audience>" in prompt
    assert "plain" in prompt  # a default_factory too
    assert "note" not in prompt  # None: not given, not sent


def test_a_given_value_wins_and_a_given_none_is_sent() -> None:
    prompt = sent(document="d", audience="managers", note=None)
    assert "managers" in prompt and "engineers" not in prompt
    assert "<note>" in prompt  # the caller said None explicitly
