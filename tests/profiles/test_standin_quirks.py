"""Each profile against a stand-in that fails the way that profile's server fails.

The stand-in (a real socket, the real openai client) impersonates the documented quirks of
llama.cpp, vLLM, Ollama and LM Studio (`Quirks`); each test shows typedspy's typed outcome:
the value when the profile's remedy works, the typed error naming the failure kind when not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import Quirks, StandIn


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)
    reason: str = ts.OutputField()


class Refund(BaseModel):
    amount: float


class Escalate(BaseModel):
    team: str


class Route(ts.Signature):
    """Route the ticket."""

    ticket: str = ts.InputField()
    action: Refund | Escalate = ts.OutputField()


class Tag(ts.Signature):
    """Tag the ticket (open-ended metadata: outside OpenAI's strict subset)."""

    ticket: str = ts.InputField()
    tags: dict[str, Any] = ts.OutputField()


@contextmanager
def quirky(
    quirks: Quirks, profile: str | ts.Profile, **options: Any
) -> Iterator[tuple[StandIn, ts.LM]]:
    with StandIn(quirks=quirks, **options) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile)
        try:
            yield server, lm
        finally:
            lm.close()


def test_llama_cpp_failing_open_is_not_enforced_and_the_retry_gives_the_value() -> None:
    with quirky(Quirks.of("llama.cpp", times=1), "llama.cpp") as (server, lm):
        pred = ts.Predict(Rate, lm=lm)(ticket="the app crashes")

    assert 1 <= pred.score <= 5
    assert [a.kind for a in pred.attempts] == ["not_enforced", None]
    assert "not_enforced" in lm.profile.observed
    # The bound was broken at the server (a number outside le=5), and the feedback names it.
    assert "score" in json.dumps(server.requests[1]["messages"][-1])


def test_llama_cpp_failing_open_every_time_is_a_typed_error_naming_the_kind() -> None:
    with quirky(Quirks.of("llama.cpp"), "llama.cpp") as (server, lm):
        with pytest.raises(ts.errors.OutputValidationError) as caught:
            ts.Predict(Rate, lm=lm, max_retries=1)(ticket="x")

    assert caught.value.kind == "not_enforced"
    assert "score" in str(caught.value)
    assert len(server.requests) == 2  # bounded: the retry bound, nothing more


def test_servers_that_ignore_strict_take_schemas_openai_would_refuse() -> None:
    for name in ("llama.cpp", "vllm", "ollama"):
        with quirky(Quirks.of(name, times=0), name) as (server, lm):
            pred = ts.Predict(Tag, lm=lm)(ticket="x")
        assert isinstance(pred.tags, dict), name
        assert server.requests[0]["response_format"]["type"] == "json_schema", name

    with quirky(Quirks(), "openai") as (server, lm), pytest.raises(ts.SchemaError):
        ts.Predict(Tag, lm=lm)(ticket="x")  # refused before sending: the strict subset


def test_vllm_whitespace_loop_gets_the_compact_re_ask() -> None:
    with quirky(Quirks.of("vllm", times=1), "vllm") as (server, lm):
        pred = ts.Predict(Route, lm=lm)(ticket="refund me")

    assert isinstance(pred.action, (Refund, Escalate))
    assert [a.kind for a in pred.attempts] == ["whitespace_loop", None]
    assert server.requests[0]["max_tokens"] == lm.profile.max_tokens  # the loop stops at the cap
    assert "compact JSON on one line" in server.requests[1]["messages"][-1]["content"]


def test_vllm_whitespace_looping_every_time_is_a_typed_truncation() -> None:
    with quirky(Quirks.of("vllm"), "vllm") as (server, lm):
        with pytest.raises(ts.errors.TruncatedOutputError) as caught:
            ts.Predict(Route, lm=lm)(ticket="refund me")

    assert caught.value.kind == "whitespace_loop"
    assert len(server.requests) == 2  # one remedy, never a blind retry


def test_a_repetition_loop_gets_one_retry_with_a_frequency_penalty() -> None:
    quirks = Quirks(ignores_strict=True, repetition_loop=True, times=1)
    with quirky(quirks, "llama.cpp") as (server, lm):
        pred = ts.Predict(Rate, lm=lm)(ticket="x")

    assert [a.kind for a in pred.attempts] == ["repetition_loop", None]
    assert server.requests[1]["frequency_penalty"] == 1.0
    assert "frequency_penalty" not in server.requests[0]


def test_lmstudio_rejecting_json_mode_is_never_asked_for_and_typed_when_forced() -> None:
    with quirky(Quirks.of("lmstudio"), "lmstudio") as (server, lm):
        pred = ts.Predict(Rate, lm=lm)(ticket="x")
        with pytest.raises(ts.errors.LMUnsupportedFeatureError) as caught:
            ts.Predict(Rate, lm=lm, mode="json_object")(ticket="x")

    assert 1 <= pred.score <= 5
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    assert caught.value.feature == "response_format"
    assert "must be 'json_schema'" in str(caught.value)


def test_vllm_constraining_tool_steps_cannot_bite_an_agent_on_its_profile() -> None:
    ran: list[str] = []

    @ts.tool
    def lookup(order: str) -> str:
        """Look an order up."""
        ran.append(order)
        return f"order {order}: shipped"

    with quirky(Quirks.of("vllm", times=0), "vllm") as (server, lm):
        pred = ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=3)(ticket="where is order 7?")

    assert 1 <= pred.score <= 5
    # The profile never sends response_format beside tools, so every tool step stays free.
    assert not [r for r in server.requests if "tools" in r and "response_format" in r]
    assert len(ran) == 3  # every step could call the tool; the answer came after max_iters


def test_the_stand_in_constrains_tool_steps_like_vllm() -> None:
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {}}}
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    body |= {"tools": [tool], "tool_choice": "required"}
    fmt = ts.schema.compile_schema(Route).response_format
    with StandIn(quirks=Quirks.of("vllm", times=0)) as server:
        url = server.base_url + "/chat/completions"
        free = httpx.post(url, json=body).json()["choices"][0]["message"]
        both = httpx.post(url, json=body | {"response_format": fmt}).json()["choices"][0]["message"]

    assert free["tool_calls"][0]["function"]["name"] == "lookup"
    assert "tool_calls" not in both or not both["tool_calls"]
    assert "action" in json.loads(both["content"])


def test_an_unknown_quirks_preset_names_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"no quirks preset 'tgi'; known: .*'vllm'"):
        Quirks.of("tgi")


def test_failing_open_breaks_a_lower_bound_past_true_sub_schemas() -> None:
    schema = {
        "type": "object",
        "properties": {"note": True, "count": {"type": "integer", "minimum": 3}},
        "required": ["note", "count"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "Count", "schema": schema}}
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "response_format": fmt}
    with StandIn(quirks=Quirks.of("llama.cpp")) as server:
        reply = httpx.post(server.base_url + "/chat/completions", json=body).json()
    assert json.loads(reply["choices"][0]["message"]["content"]) == {"note": None, "count": -6}
