"""Issue 23: the prompt's output shape keeps the constraints of Optional and nested fields."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

import typedspy as ts
from typedspy.testing import StandIn


class Report(ts.Signature):
    """Report when it happened."""

    text: str = ts.InputField()
    month: str = ts.OutputField(pattern=r"^\d{4}-\d{2}$")
    opt_month: str | None = ts.OutputField(pattern=r"^\d{4}-\d{2}$")
    scores: list[Annotated[int, Field(ge=1, le=5)]] = ts.OutputField(max_length=3)
    rating: int | None = ts.OutputField(ge=1, le=5)


def test_the_shape_a_local_server_relies_on_shows_every_constraint() -> None:
    # llama.cpp fails open on constructs its grammar lacks; the model then has only the shape.
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="llama.cpp")
        try:
            prompt = ts.Predict(Report, lm=lm).render(text="May 2024")["messages"][0]["content"]
        finally:
            lm.close()
    lines = {line.split(":")[0].strip(): line for line in prompt.splitlines() if '": ' in line}
    assert r"matching ^\d{4}-\d{2}$" in lines['"opt_month"']
    assert "each >= 1, <= 5" in lines['"scores"'] and "at most 3 items" in lines['"scores"']
    assert ">= 1, <= 5" in lines['"rating"']
