"""parse_outputs never raises, whatever the completion text (the whole pipeline, not one stage)."""

from __future__ import annotations

import json
from typing import Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, field_validator

import typedspy as ts
from agent_models import Decide


class Node(BaseModel):
    name: str
    children: list[Node | Leaf] = []


class Leaf(BaseModel):
    value: int

    @field_validator("value")
    @classmethod
    def odd_lookup(cls, value: int) -> int:
        if value == 13:
            raise KeyError("unlucky")  # a user validator raising something unexpected
        return value


Node.model_rebuild()


class Tree(ts.Signature):
    """Grow a tree."""

    seed: str = ts.InputField()
    root: Node = ts.OutputField()
    tags: dict[str, int] = ts.OutputField()
    mood: Literal["calm", "busy"] | None = ts.OutputField()


SIGNATURES = [Decide, Tree]
JSONISH = st.text(alphabet="{}[]\":,'`\\ \n\ttrueflsNaIy0123456789.-eE/*#_type", max_size=300)
GOOD = json.dumps(
    {
        "action": {"_type": "SpawnTask", "description": "x", "priority": "high"},
        "confidence": 0.5,
    }
)


def check(sig: type[ts.Signature], text: str) -> ts.parse.ParseResult:
    result = ts.parse.parse_outputs(sig, text)
    assert isinstance(result, ts.parse.ParseResult)
    assert result.ok == (result.value is not None) == (result.error is None)
    if result.error is not None:
        assert result.error.kind in ("decode_failed", "validation_failed")
        assert result.error.errors
        assert all(isinstance(e.message, str) and e.message for e in result.error.errors)
    return result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SIGNATURES), st.text(max_size=400))
def test_arbitrary_text(sig: type[ts.Signature], text: str) -> None:
    check(sig, text)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SIGNATURES), JSONISH)
def test_json_like_text(sig: type[ts.Signature], text: str) -> None:
    check(sig, text)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(GOOD)), st.integers(0, 20), st.text(max_size=8))
def test_mutated_valid_completion(at: int, cut: int, insert: str) -> None:
    check(Decide, GOOD[:at] + insert + GOOD[at + cut :])


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
        max_leaves=25,
    )
)
def test_any_json_value_for_a_recursive_signature(value: object) -> None:
    check(Tree, json.dumps(value))


def test_a_user_validator_raising_keyerror_is_a_validation_failure() -> None:
    text = json.dumps(
        {"root": {"name": "r", "children": [{"value": 13}]}, "tags": {}, "mood": None}
    )
    result = check(Tree, text)
    assert result.kind == "validation_failed"


def test_hostile_inputs_give_results_not_exceptions() -> None:
    hostile = {
        "5 MB of prose": "lorem ipsum dolor sit amet " * 200_000,
        "50,000 nested brackets": "[" * 50_000,
        "50,000 nested objects": '{"a":' * 50_000,
        "thousands of fences": "```json\n{}\n```\n" * 3_000,
        "a 1 MB string": '{"action": "' + "x" * 1_000_000,
        "unbalanced quotes": "it's " * 100_000 + GOOD,
    }
    kinds = {name: check(Decide, text).kind for name, text in hostile.items()}
    assert kinds["5 MB of prose"] == "decode_failed"
    assert kinds["50,000 nested brackets"] == "decode_failed"
    assert kinds["thousands of fences"] == "validation_failed"
    assert kinds["unbalanced quotes"] is None  # the JSON after the prose still wins
