"""Request parameters are checked by name where they are given (issue 9, ADR-045).

A misspelt ``temprature=0`` used to go into the request body unchecked; an endpoint's own
parameters now go through ``extra_body={...}``, sent as is.
"""

from __future__ import annotations

import asyncio
import enum
import json
import re
from collections.abc import Callable, Iterator
from typing import Any, cast

import httpx
import openai
import pytest
import respx
from openai.types.chat import completion_create_params

import typedspy as ts
from typedspy.errors import ConfigurationError
from typedspy.lm import CHAT_COMPLETIONS_PARAMS
from typedspy.testing import chat_completion
from wire import BASE_URL, make_lm


class Ask(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as mock:
        yield mock


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())


def test_the_list_is_the_sdks_completion_create_params() -> None:
    base = completion_create_params.CompletionCreateParamsBase
    sdk = set(base.__required_keys__ | base.__optional_keys__) | {"stream"}
    assert sdk - CHAT_COMPLETIONS_PARAMS == set()  # a newer SDK: add its parameters to the list
    if _version(openai.__version__) >= (3, 57):  # the version the list was taken from
        assert CHAT_COMPLETIONS_PARAMS - sdk == set()


BUILDERS: dict[str, Callable[..., object]] = {
    "LM": lambda **kw: ts.LM("gpt-test", base_url=BASE_URL, api_key="k", **kw),
    "Predict": lambda **kw: ts.Predict(Ask, **kw),
    "ChainOfThought": lambda **kw: ts.ChainOfThought(Ask, **kw),
    "ReAct": lambda **kw: ts.ReAct(Ask, tools=[], **kw),
}


@pytest.mark.parametrize("builder", BUILDERS.values(), ids=BUILDERS.keys())
def test_a_misspelt_parameter_is_refused_at_construction_naming_the_close_match(
    builder: Callable[..., object],
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        builder(temperature=0, temprature=0)
    message = str(caught.value)
    assert "'temprature'" in message
    assert "did you mean 'temperature'?" in message
    assert "extra_body" in message
    assert isinstance(caught.value, ts.TypedspyError)


@pytest.mark.parametrize("builder", BUILDERS.values(), ids=BUILDERS.keys())
def test_an_unknown_name_without_a_close_match_is_refused_too(
    builder: Callable[..., object],
) -> None:
    with pytest.raises(ConfigurationError, match="unknown request parameter 'top_k'"):
        builder(top_k=40)


def test_a_per_call_parameter_is_checked_before_anything_is_sent(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion("hi"))
    )
    lm = make_lm()
    with pytest.raises(ConfigurationError, match="did you mean 'max_tokens'"):
        lm("hello", max_token=5)
    assert not route.called
    assert lm("hello", max_tokens=5) == "hi"
    assert json.loads(route.calls[0].request.content)["max_tokens"] == 5


def test_extra_body_passes_anything_through_to_the_request_body(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion(json.dumps({"answer": "4"})))
    )
    extra = {"top_k": 40, "chat_template_kwargs": {"enable_thinking": False}}
    predict = ts.Predict(Ask, lm=make_lm(), temperature=0, extra_body=extra)

    assert predict(question="2 + 2?").answer == "4"

    body = json.loads(route.calls[0].request.content)
    assert body["temperature"] == 0
    assert body["top_k"] == 40  # sent as is, at the top level of the body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_lm_defaults_may_carry_extra_body_and_params_merge_over_them(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion("ok"))
    )
    client = openai.AsyncOpenAI(
        base_url=BASE_URL, api_key="k", max_retries=0, http_client=cast(Any, httpx.AsyncClient())
    )
    lm = ts.LM("gpt-test", client=client, extra_body={"top_k": 5}, seed=1)
    asyncio.run(lm.acall("hello", extra_body={"min_p": 0.1}))
    body = json.loads(route.calls[0].request.content)
    assert (body["seed"], body["top_k"], body["min_p"]) == (1, 5, 0.1)  # extra_bodies merge


class Effort(enum.StrEnum):
    LOW = "low"


class Seed(enum.IntEnum):
    ONE = 1


def test_a_list_parameter_is_sent_as_a_list_and_none_unsets_a_default_option(
    router: respx.MockRouter,
) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion("ok"))
    )
    client = openai.AsyncOpenAI(
        base_url=BASE_URL, api_key="k", max_retries=0, http_client=cast(Any, httpx.AsyncClient())
    )
    lm = ts.LM("gpt-test", client=client, extra_headers={"x-team": "a"}, stop=("END", "\u00e9"))
    asyncio.run(lm.acall("hello", reasoning_effort=Effort.LOW, seed=Seed.ONE))
    asyncio.run(lm.acall("hello", extra_headers=None, stop=["\ud800", "x"]))
    first, second = (json.loads(call.request.content) for call in route.calls)
    assert first["stop"] == ["END", "\u00e9"]  # a tuple default, sent as a JSON list
    assert (first["reasoning_effort"], first["seed"]) == ("low", 1)  # enum members as values
    assert route.calls[0].request.headers["x-team"] == "a"
    assert "x-team" not in route.calls[1].request.headers  # the call's None unsets the default
    assert second["stop"][0] == "\ufffd"  # a lone surrogate repaired, not a failed send


@pytest.mark.parametrize("value", ["top_k=40", ["top_k"], 40])
def test_extra_body_must_be_a_mapping(value: Any) -> None:
    with pytest.raises(ConfigurationError, match="extra_body must be a mapping"):
        ts.Predict(Ask, extra_body=value)


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    return loop


NOT_JSON: dict[str, tuple[Callable[[], Any], str]] = {
    "object": (object, "extra_body.x.y cannot be sent: object is no JSON value"),
    "set": (lambda: {1, 2}, "extra_body.x.y cannot be sent: set is no JSON value"),
    "bytes": (lambda: b"raw", "extra_body.x.y cannot be sent: bytes is no JSON value"),
    "model": (lambda: Ask.output_model(answer="4"), "extra_body.x.y cannot be sent: AskOutput"),
    "key": (lambda: {(1, 2): 3}, r"extra_body.x.y cannot be sent: the key \(1, 2\) is not"),
    "cycle": (_cycle, "extra_body cannot be sent: nested deeper than 256 levels"),
}


@pytest.mark.parametrize("case", list(NOT_JSON))
def test_a_value_json_cannot_carry_is_refused_where_it_is_given_naming_its_path(
    router: respx.MockRouter, case: str
) -> None:
    # The SDK raised a bare TypeError or ValueError at send time, or sent a model as {}.
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=chat_completion("hi"))
    )
    make, message = NOT_JSON[case]
    params: dict[str, Any] = {"extra_body": {"x": {"y": make()}}}
    with pytest.raises(ConfigurationError, match=f"^LM defaults: {message}"):
        ts.LM("m", **params)
    with pytest.raises(ConfigurationError, match=f"^Predict\\(Ask\\): {message}"):
        ts.Predict(Ask, **params)
    with pytest.raises(ConfigurationError, match=f"^LM.acall: {message}"):
        make_lm()("hello", **params)
    assert not route.called


def test_an_ordinary_parameter_json_cannot_carry_is_named_too() -> None:
    with pytest.raises(ConfigurationError, match=r"seed cannot be sent: set is no JSON value"):
        ts.Predict(Ask, seed={1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"metadata.a cannot be sent: bytes is no JSON"):
        ts.LM("m", metadata={"a": b"x"})  # type: ignore[dict-item]
    ts.LM("m", logit_bias={50256: -100})  # type: ignore[dict-item]  # token ids as integers


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens"])
@pytest.mark.parametrize("cap", [10**30, 2**31, 0, -1, 1.5, True, "100"])
def test_a_token_cap_no_server_takes_is_refused_as_the_profile_refuses_it(
    name: str, cap: object
) -> None:
    why = f"{name}={cap!r}: a positive int up to 2_147_483_647"
    with pytest.raises(ConfigurationError, match=f"^LM defaults: {re.escape(why)}"):
        ts.LM("m", **{name: cap})
    with pytest.raises(ConfigurationError, match=f"^Predict\\(Ask\\): {re.escape(why)}"):
        ts.Predict(Ask, **{name: cap})
    ts.Predict(Ask, **{name: 2**31 - 1})


def test_configure_names_the_close_setting_and_where_request_parameters_go() -> None:
    with pytest.raises(ConfigurationError) as caught:
        ts.configure(temperature=0)  # type: ignore[call-arg]
    assert "request parameter" in str(caught.value)
    assert "ts.LM(" in str(caught.value)
    with pytest.raises(ConfigurationError, match="did you mean 'max_retries'"):
        ts.configure(max_retrys=3)  # type: ignore[call-arg]
