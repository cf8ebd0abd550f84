"""The profile's ``max_tokens`` cap: a default that any cap the user set keeps off the wire.

Against the stand-in (a real socket, the real openai client): what each request carries when
the cap comes from the profile, the LM's defaults or the call, for Predict and both ReAct
step kinds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import StandIn


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)


@ts.tool
def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


@contextmanager
def served(profile: str, **defaults: Any) -> Iterator[tuple[StandIn, ts.LM]]:
    with StandIn() as server:
        lm = ts.LM(
            "standin-1", base_url=server.base_url, api_key="sk-x", profile=profile, **defaults
        )
        try:
            yield server, lm
        finally:
            lm.close()


def caps(server: StandIn) -> list[tuple[Any, Any]]:
    """Each request's ``(max_tokens, max_completion_tokens)``, ``None`` where absent."""
    return [(r.get("max_tokens"), r.get("max_completion_tokens")) for r in server.requests]


@pytest.mark.parametrize(
    ("profile", "cap"), [("llama.cpp", 512), ("vllm", 1024), ("generic", 1024), ("openai", None)]
)
def test_a_call_that_sets_no_cap_gets_the_profiles(profile: str, cap: int | None) -> None:
    with served(profile) as (server, lm):
        ts.Predict(Rate, lm=lm)(ticket="x")

    assert caps(server) == [(cap, None)]


@pytest.mark.parametrize(
    "given", [{"max_tokens": 2000}, {"max_completion_tokens": 2000}], ids=lambda g: next(iter(g))
)
def test_a_cap_in_the_lm_defaults_keeps_the_profile_cap_off(given: dict[str, int]) -> None:
    with served("llama.cpp", **given) as (server, lm):
        ts.Predict(Rate, lm=lm)(ticket="x")

    (body,) = server.requests
    assert {k: body.get(k) for k in ("max_tokens", "max_completion_tokens")} == {
        "max_tokens": None,
        "max_completion_tokens": None,
        **given,
    }


def test_a_cap_given_to_the_call_wins_over_the_lm_defaults() -> None:
    with served("llama.cpp", max_tokens=2000) as (server, lm):
        ts.Predict(Rate, lm=lm, max_tokens=40)(ticket="x")
        ts.Predict(Rate, lm=lm, max_completion_tokens=60)(ticket="x")

    # A call's max_completion_tokens travels beside the LM's max_tokens: both are the user's.
    assert caps(server) == [(40, None), (2000, 60)]


def test_native_react_steps_get_the_profile_cap() -> None:
    with served("vllm") as (server, lm):
        ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=2)(ticket="where is order 7?")

    assert any("tools" in body for body in server.requests)  # native steps (then extraction)
    assert caps(server) == [(1024, None)] * len(server.requests)


def test_native_react_steps_keep_the_users_own_cap() -> None:
    with served("vllm", max_completion_tokens=300) as (server, lm):
        ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=2)(ticket="where is order 7?")
    with served("vllm") as (step_server, lm):
        ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=2, max_tokens=200)(ticket="order 7?")

    assert caps(server) == [(None, 300)] * len(server.requests)
    assert caps(step_server) == [(200, None)] * len(step_server.requests)


def test_union_react_steps_get_the_profile_cap_unless_the_lm_sets_one() -> None:
    with served("llama.cpp") as (server, lm):
        ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=2)(ticket="where is order 7?")
    with served("llama.cpp", max_tokens=900) as (own_server, lm):
        ts.ReAct(Rate, tools=[lookup], lm=lm, max_iters=2)(ticket="where is order 7?")

    assert all("tools" not in body for body in server.requests)  # the union step
    assert caps(server) == [(512, None)] * len(server.requests)
    assert caps(own_server) == [(900, None)] * len(own_server.requests)


@pytest.mark.parametrize("defaults", [{}, {"max_tokens": 300}], ids=["profile cap", "LM cap"])
def test_a_cap_of_none_sends_no_cap_at_all(defaults: dict[str, int]) -> None:
    with served("llama.cpp", **defaults) as (server, lm):
        ts.Predict(Rate, lm=lm, max_tokens=None)(ticket="x")

    assert "max_tokens" not in server.requests[0]  # neither the cap nor a null
    assert caps(server) == [(None, None)]
