"""The reference task's request under the openai profile: at most 0.9x the leanest peer's.

Issue #8 measured udspy and PydanticAI's native mode at 380-381 o200k_base tokens for this task
(typedspy then sent 408). Counted on the body the stand-in received, as sent by the SDK.
"""

from __future__ import annotations

import json
import warnings
from typing import Literal

import pytest

import typedspy as ts
from agent_models import CompleteTask, Continue, SpawnTask
from typedspy.testing import StandIn

LEANEST_PEER = 380


class Triage(ts.Signature):
    """Classify the message and decide the agent's next action."""

    text: str = ts.InputField()
    sentiment: Literal["positive", "negative", "neutral"] = ts.OutputField()
    confidence: float = ts.OutputField()
    action: SpawnTask | CompleteTask | Continue = ts.OutputField()


TEXT = "The deploy failed again and the customer is waiting. Can someone look at it today?"


def _sent(profile: str) -> dict[str, object]:
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile)
        ts.Predict(Triage, lm=lm)(text=TEXT)
        lm.close()
    return server.requests[0]


def _tokens(body: dict[str, object]) -> int:
    with warnings.catch_warnings():  # bpe-openai loads its vocabulary with a deprecated call
        warnings.simplefilter("ignore", DeprecationWarning)
        bpe_openai = pytest.importorskip("bpe_openai", reason="bpe-openai (dev) is not installed")
        encoding = bpe_openai.get_encoding("o200k_base")
    return len(encoding.encode(json.dumps(body, separators=(",", ":"))))


def test_the_reference_request_is_at_most_nine_tenths_of_the_leanest_peers() -> None:
    body = _sent("openai")

    assert _tokens(body) <= 0.9 * LEANEST_PEER  # 324 when written
    assert set(body) == {"model", "messages", "response_format"}


def test_a_profile_without_an_enforced_schema_shown_to_the_model_pays_for_the_hint() -> None:
    # llama.cpp enforces the schema but never shows it to the model: the hint is worth sending.
    assert _tokens(_sent("llama.cpp")) > _tokens(_sent("openai"))
