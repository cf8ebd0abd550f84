from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from saved_program import Explain, Pipeline, requests_for, requests_in_a_fresh_process

import typedspy as ts
from served import nearest, served
from typedspy.testing import support_tickets

TRAIN, DEV = support_tickets()
HERE = Path(__file__).parent
TICKETS = [ex.ticket for ex in DEV[:3]]


def compiled_program() -> ts.Module:
    optimizer = ts.optimize.BootstrapFewShot(
        max_bootstrapped_demos=3, max_labeled_demos=4, verbose=False
    )
    with served(nearest()):
        return optimizer.compile(Pipeline(), TRAIN)


def test_a_saved_optimized_program_sends_identical_requests_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    program = compiled_program()
    path = tmp_path / "optimized.json"
    program.save(path)
    here = requests_for(program, TICKETS)
    there = requests_in_a_fresh_process("Pipeline()", path, TICKETS)
    assert len(here) == 6
    assert there == here
    assert all("_type" in body for body in here[::2])  # tagged demos went out


def test_saved_state_is_json_with_tagged_typed_demos_per_predictor_path(tmp_path: Path) -> None:
    program = compiled_program()
    path = tmp_path / "optimized.json"
    program.save(path)
    saved = json.loads(path.read_text())["predictors"]
    assert sorted(saved) == ["explain", "route"]
    demo = saved["route"]["demos"][0]
    assert set(demo) == {"ticket", "reasoning", "route"}
    assert demo["route"]["_type"] in ("Billing", "Bug", "Account")
    fresh = Pipeline()
    fresh.load(path)
    assert fresh.dump_state() == program.dump_state()
    assert type(fresh.route.demos[0]["route"]).__name__ == demo["route"]["_type"]


def test_state_from_another_signature_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    program = compiled_program()
    path = tmp_path / "optimized.json"
    program.save(path)

    class Changed(ts.Signature):
        """Explain why the ticket goes to that team."""

        ticket: str = ts.InputField()
        team: int = ts.InputField()  # was str
        note: str = ts.OutputField()

    Changed.__name__ = Explain.__name__
    other = Pipeline()
    other.explain = ts.Predict(Changed)
    with pytest.raises(ts.ConfigurationError, match="fingerprint"):
        other.load(path)
    assert other.route.demos == []


class OpenTags(ts.Signature):
    """Tag the text."""

    text: str = ts.InputField()
    tags: dict[str, Any] = ts.OutputField()


def test_a_program_whose_outputs_openai_strict_refuses_saves_and_loads(tmp_path: Path) -> None:
    """An open object is fine on a JSON Schema endpoint; saving must not ask OpenAI's subset."""
    demo = {"text": "hello", "tags": {"lang": "en", "n": 1}}
    program = ts.Predict(OpenTags, lm=ts.LM("m", profile="vllm", api_key="sk-x"), demos=[demo])
    path = tmp_path / "open.json"
    program.save(path)
    loaded = ts.Predict(OpenTags)
    loaded.load(path)
    assert loaded.demos == [demo]
