"""Issue 23: DSPy's ``desc=`` works; a keyword a field does not take is refused, not dropped."""

from __future__ import annotations

import pytest

import typedspy as ts
from typedspy.testing import StandIn


class Ask(ts.Signature):
    """Answer."""

    question: str = ts.InputField(desc="what the user asked")
    answer: str = ts.OutputField(desc="one short sentence")


def test_desc_is_the_description_and_reaches_the_model() -> None:
    assert Ask.input_fields["question"].description == "what the user asked"
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x")
        try:
            ts.Predict(Ask, lm=lm)(question="q")
        finally:
            lm.close()
    body = server.requests[0]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["answer"]["description"] == "one short sentence"
    assert "what the user asked" in body["messages"][0]["content"]


@pytest.mark.parametrize("keyword", ["prefix", "format", "descrption"])
def test_a_keyword_no_field_takes_is_a_schema_error_at_definition(keyword: str) -> None:
    with pytest.raises(ts.SchemaError, match=rf"InputField\(\) does not take '{keyword}'"):

        class Bad(ts.Signature):
            question: str = ts.InputField(**{keyword: "x"})
            answer: str = ts.OutputField()


def test_desc_and_description_together_are_refused() -> None:
    with pytest.raises(ts.SchemaError, match="give one of them"):
        ts.OutputField(desc="a", description="b")
