"""LM over a real AsyncOpenAI client; HTTP answered by respx, with recorded bodies."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import httpx
import openai
import pytest
import respx

from typedspy._types import Usage
from typedspy.errors import (
    ConfigurationError,
    LMConnectionError,
    LMRateLimitError,
    LMResponseError,
    LMStatusError,
    LMTimeoutError,
    LMUnsupportedFeatureError,
    RefusalError,
)
from typedspy.lm import LM, LMRequest, LMResponse, ToolCall

RECORDED = Path(__file__).resolve().parent.parent / "fixtures" / "recorded"
BASE_URL = "https://llm.test/v1"
KEY = "sk-test-secret-123"
HELLO = ({"role": "user", "content": "hello"},)


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((RECORDED / name).read_text())
    return loaded


def replay(name: str) -> httpx.Response:
    fx = load(name)
    body = fx.get("response_raw") or json.dumps(fx["response"])
    return httpx.Response(
        fx["status"], content=body.encode(), headers={"content-type": fx["content_type"]}
    )


def completion(text: str = "ok", *, prompt: int = 3, completion_tokens: int = 2) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
        },
    }


def error_body(
    message: str, *, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    }


def make_lm(*, max_retries: int = 0, **defaults: Any) -> LM:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL,
        api_key=KEY,
        max_retries=max_retries,
        http_client=cast(Any, httpx.AsyncClient()),  # P1: respx patches httpx, not httpx2
    )
    return LM("gpt-test", client=client, **defaults)


def complete(lm: LM, request: LMRequest) -> LMResponse:
    return asyncio.run(lm.acomplete(request))


def sent(route: respx.Route, index: int = 0) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(route.calls[index].request.content)
    return body


@pytest.fixture
def router() -> Any:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as mock:
        yield mock


# --- what goes over the wire -------------------------------------------------------------------


def test_body_has_model_messages_and_defaults_overridden_by_params(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=completion())
    )
    lm = make_lm(temperature=0.2, max_tokens=100, extra_body={"top_k": 5})
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"})

    complete(lm, LMRequest(messages=messages, params={"temperature": 0.7, "seed": 7}))

    assert sent(route) == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}],
        "temperature": 0.7,
        "max_tokens": 100,
        "seed": 7,
        "top_k": 5,  # sent through extra_body: top level on the wire
    }


def test_response_format_tools_and_choices_are_sent_as_given(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=completion())
    )
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ("city",),
        "additionalProperties": False,
    }
    response_format = MappingProxyType(
        {"type": "json_schema", "json_schema": {"name": "City", "strict": True, "schema": schema}}
    )
    tool = {
        "type": "function",
        "function": {"name": "lookup", "strict": True, "parameters": schema},
    }
    request = LMRequest(
        messages=HELLO,
        response_format=response_format,
        tools=(tool,),
        tool_choice="required",
        parallel_tool_calls=False,
    )

    complete(make_lm(), request)

    body = sent(route)
    wire_schema = {**schema, "required": ["city"]}
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "City", "strict": True, "schema": wire_schema},
    }
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "lookup", "strict": True, "parameters": wire_schema},
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False


def test_the_body_sent_is_request_body_and_a_callers_extra_body_still_wins(router: Any) -> None:
    # The prebuilt parts travel in extra_body, past the SDK's transform (ADR-047): the wire body
    # must stay what request_body() says, and the caller's own extra_body keys must still win.
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=completion())
    )
    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    request = LMRequest(
        messages=HELLO,
        tools=(tool,),
        tool_choice="auto",
        params={"extra_body": {"tool_choice": "none", "x": 1}, "seed": 3},
    )
    lm = make_lm()

    complete(lm, request)

    assert sent(route) == lm.request_body(request)
    assert sent(route)["tool_choice"] == "none" and sent(route)["messages"] == list(HELLO)


def test_optional_fields_are_left_out_when_unset(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=completion())
    )

    complete(make_lm(), LMRequest(messages=HELLO, parallel_tool_calls=False))

    assert sorted(sent(route)) == ["messages", "model"]  # parallel_tool_calls needs tools


def test_keys_lm_sends_itself_cannot_be_defaults_or_params(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=completion())
    )
    with pytest.raises(ConfigurationError, match="stream"):
        make_lm(stream=True)
    with pytest.raises(ConfigurationError, match="response_format"):
        complete(make_lm(), LMRequest(messages=HELLO, params={"response_format": {}}))
    assert route.call_count == 0


# --- reading responses (recorded exchanges) ----------------------------------------------------

RECORDED_CASES = [
    (
        "openai-python-strict-location-success.json",
        '{"city":"San Francisco","temperature":65,"units":"f"}',
        None,
        "stop",
        (),
        Usage(79, 14, 93),
    ),
    (
        "openai-python-strict-refusal.json",
        None,
        "I'm very sorry, but I can't assist with that.",
        "stop",
        (),
        Usage(79, 12, 91),
    ),
    ("openai-python-strict-length-truncated.json", '{"', None, "length", (), Usage(79, 1, 80)),
    ("mirascope-length-reasoning-empty-content.json", "", None, "length", (), Usage(13, 50, 63)),
    (
        "openai-python-tool-single-strict.json",
        None,
        None,
        "tool_calls",
        (
            ToolCall(
                "call_Y6qJ7ofLgOrBnMD5WbVAeiRV",
                "GetWeatherArgs",
                '{"city":"Edinburgh","country":"UK","units":"c"}',
            ),
        ),
        Usage(76, 24, 100),
    ),
    (
        "openai-python-tools-parallel-two.json",
        None,
        None,
        "tool_calls",
        (
            ToolCall(
                "call_fdNz3vOBKYgOIpMdWotB9MjY",
                "GetWeatherArgs",
                '{"city": "Edinburgh", "country": "GB", "units": "c"}',
            ),
            ToolCall(
                "call_h1DWI1POMJLb0KwIyQHWXD4p",
                "get_stock_price",
                '{"ticker": "AAPL", "exchange": "NASDAQ"}',
            ),
        ),
        Usage(149, 60, 209),
    ),
    (  # Snowflake: finish_reason "", refusal "", service_tier "" (outside OpenAI's enums)
        "pydantic-ai-snowflake-json-schema-empty-strings.json",
        '{"city": "Mexico City", "country": "Mexico"}',
        None,
        None,
        (),
        Usage(668, 51, 719),
    ),
    (  # Groq: service_tier "on_demand", extra reasoning / x_groq / usage_breakdown keys
        "pydantic-ai-groq-strict-json-schema-extra-fields.json",
        '{"city":"Mexico City","country":"Mexico"}',
        None,
        "stop",
        (),
        Usage(178, 94, 272),
    ),
    (  # n=3: choice 0 is used, the others stay in raw
        "openai-python-strict-n3-choices.json",
        '{"city":"San Francisco","temperature":64,"units":"f"}',
        None,
        "stop",
        (),
        Usage(79, 44, 123),
    ),
]


@pytest.mark.parametrize(
    ("fixture", "text", "refusal", "finish_reason", "tool_calls", "usage"), RECORDED_CASES
)
def test_recorded_completions_are_read(
    router: Any,
    fixture: str,
    text: str | None,
    refusal: str | None,
    finish_reason: str | None,
    tool_calls: tuple[ToolCall, ...],
    usage: Usage,
) -> None:
    router.post("/chat/completions").mock(return_value=replay(fixture))

    response = complete(make_lm(), LMRequest(messages=HELLO))

    assert response.text == text
    assert response.refusal == refusal
    assert response.finish_reason == finish_reason
    assert response.tool_calls == tool_calls
    assert response.usage == usage
    assert response.model == load(fixture)["response"]["model"]
    assert response.raw == load(fixture)["response"]


def test_parallel_calls_to_the_same_function_keep_their_order(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=replay("mirascope-tools-parallel-strict.json")
    )
    expected = load("mirascope-tools-parallel-strict.json")["response"]["choices"][0]["message"]

    response = complete(make_lm(), LMRequest(messages=HELLO))

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in expected["tool_calls"]
    ]
    assert len(response.tool_calls) == 2
    assert len({c.id for c in response.tool_calls}) == 2


def test_no_choices_is_a_response_error(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json={**completion(), "choices": []})
    )

    with pytest.raises(LMResponseError, match="no choices"):
        complete(make_lm(), LMRequest(messages=HELLO))


def test_an_error_sent_with_status_200_is_quoted(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, json=error_body(f"upstream rejected key {KEY}"))
    )

    with pytest.raises(LMResponseError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert "no choices (it said: upstream rejected key [redacted])" in str(info.value)


def test_a_body_that_is_not_json_is_a_response_error(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(200, text="<html>gateway</html>")
    )

    with pytest.raises(LMResponseError, match="not JSON"):
        complete(make_lm(), LMRequest(messages=HELLO))


# --- errors --------------------------------------------------------------------------------------


def test_401_never_shows_the_key(router: Any) -> None:
    masked = "Incorrect API key provided: sk-test-*******-123. You can find your API key at ..."
    router.post("/chat/completions").mock(
        return_value=httpx.Response(
            401, json=error_body(f"{masked} (sent: {KEY})", code="invalid_api_key")
        )
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    for shown in (str(info.value), repr(info.value)):
        assert KEY not in shown
        assert "sk-" not in shown
    assert info.value.status_code == 401
    assert info.value.code == "invalid_api_key"
    assert isinstance(info.value.__cause__, openai.AuthenticationError)
    assert KEY not in str(info.value.__cause__)  # the SDK error is kept, scrubbed (ADR-028)


def test_recorded_401_masks_the_echoed_key(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=replay("mirascope-error-401-invalid-api-key.json")
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert "*****2345" not in str(info.value)
    assert "Incorrect API key provided: [redacted]. You can find" in str(info.value)
    assert type(info.value) is LMStatusError


def test_recorded_404_is_a_status_error(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=replay("mirascope-error-404-model-not-found.json")
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert type(info.value) is LMStatusError
    assert (info.value.status_code, info.value.code) == (404, "model_not_found")
    assert "does not exist" in str(info.value)
    assert isinstance(info.value.__cause__, openai.NotFoundError)


def test_recorded_unsupported_parameter_names_the_parameter(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=replay("mirascope-error-400-unsupported-parameter.json")
    )

    with pytest.raises(LMUnsupportedFeatureError) as info:
        complete(make_lm(), LMRequest(messages=HELLO, params={"stop": ["4242"]}))

    assert info.value.feature == "stop"
    assert (info.value.status_code, info.value.code, info.value.param) == (
        400,
        "unsupported_parameter",
        "stop",
    )


def test_recorded_groq_tool_validation_failure_is_not_unsupported(router: Any) -> None:
    router.post("/chat/completions").mock(
        return_value=replay("pydantic-ai-groq-error-400-tool-use-failed.json")
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert type(info.value) is LMStatusError
    assert info.value.code == "tool_use_failed"


UNSUPPORTED_WORDINGS = [
    (  # OpenAI, older models
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this "
        "model.",
        None,
        "response_format",
        "response_format",
    ),
    (
        "Unsupported parameter: 'response_format' is not supported with this model.",
        "unsupported_parameter",
        "response_format",
        "response_format",
    ),
    (
        "This response_format type is unavailable now",
        "invalid_request_error",
        None,
        "response_format",
    ),  # DeepSeek
    (
        "response_format value as json_schema is enabled only for api versions "
        "2024-08-01-preview and later",
        None,
        None,
        "response_format",
    ),  # Azure
    ("Unrecognized request argument supplied: response_format", None, None, "response_format"),
    ("json_schema response format is not available for this model", None, None, "response_format"),
    ("registry.ollama.ai/library/gemma:2b does not support tools", None, None, "tools"),  # Ollama
    ("deepseek-reasoner does not support Function Calling", None, None, "tools"),  # DeepSeek
    (
        "Unsupported parameter: 'tool_choice' is not supported with this model.",
        "unsupported_parameter",
        "tool_choice",
        "tools",
    ),
    (
        "Unsupported parameter: 'parallel_tool_calls' is not supported with this model.",
        "unsupported_parameter",
        "parallel_tool_calls",
        "parallel_tool_calls",
    ),
]


@pytest.mark.parametrize(("message", "code", "param", "feature"), UNSUPPORTED_WORDINGS)
def test_unsupported_feature_400s_name_the_feature(
    router: Any, message: str, code: str | None, param: str | None, feature: str
) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(400, json=error_body(message, code=code, param=param))
    )

    with pytest.raises(LMUnsupportedFeatureError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert info.value.feature == feature
    assert info.value.status_code == 400
    assert isinstance(info.value.__cause__, openai.BadRequestError)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        (  # the schema is wrong; response_format itself is supported
            "Invalid schema for response_format 'City': In context=(), 'oneOf' is not permitted.",
            "invalid_json_schema",
        ),
        (
            "'messages' must contain the word 'json' in some form, to use 'response_format' of "
            "type 'json_object'.",
            None,
        ),
        ("The provided JSON schema contains features not supported by xgrammar.", None),
    ],
)
def test_other_400s_are_plain_status_errors(router: Any, message: str, code: str | None) -> None:
    router.post("/chat/completions").mock(
        return_value=httpx.Response(
            400, json=error_body(message, code=code, param="response_format")
        )
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert type(info.value) is LMStatusError
    assert info.value.param == "response_format"


def test_429_then_200_is_retried_by_the_sdk(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "0"}, json=error_body("slow down")),
            httpx.Response(200, json=completion("after the wait")),
        ]
    )

    response = complete(make_lm(max_retries=1), LMRequest(messages=HELLO))

    assert response.text == "after the wait"
    assert route.call_count == 2


def test_429_after_the_sdk_retries_is_a_rate_limit_error(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(429, json=error_body("slow down", code="rate_limit_exceeded"))
    )

    with pytest.raises(LMRateLimitError) as info:
        complete(make_lm(max_retries=0), LMRequest(messages=HELLO))

    assert isinstance(info.value.__cause__, openai.RateLimitError)
    assert route.call_count == 1


def test_500s_after_the_sdk_retries_are_a_status_error(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        return_value=httpx.Response(
            500, headers={"retry-after-ms": "1"}, json=error_body("boom", code="server_error")
        )
    )

    with pytest.raises(LMStatusError) as info:
        complete(make_lm(max_retries=1), LMRequest(messages=HELLO))

    assert info.value.status_code == 500
    assert isinstance(info.value.__cause__, openai.InternalServerError)
    assert route.call_count == 2


def test_timeout_is_an_lm_timeout_error(router: Any) -> None:
    router.post("/chat/completions").mock(side_effect=httpx.ReadTimeout("too slow"))

    with pytest.raises(LMTimeoutError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert isinstance(info.value.__cause__, openai.APITimeoutError)


def test_connection_failure_is_an_lm_connection_error(router: Any) -> None:
    router.post("/chat/completions").mock(side_effect=httpx.ConnectError("refused"))

    with pytest.raises(LMConnectionError) as info:
        complete(make_lm(), LMRequest(messages=HELLO))

    assert not isinstance(info.value, LMTimeoutError)
    assert type(info.value.__cause__) is openai.APIConnectionError


# --- the convenience API, usage and configuration ----------------------------------------------


def test_calling_the_lm_returns_text_and_usage_accumulates(router: Any) -> None:
    route = router.post("/chat/completions").mock(
        side_effect=[
            httpx.Response(200, json=completion("one", prompt=10, completion_tokens=1)),
            httpx.Response(200, json=completion("two", prompt=20, completion_tokens=2)),
        ]
    )
    lm = make_lm()
    conversation = [
        {"role": "system", "content": "Count."},
        {"role": "user", "content": "next"},
    ]

    assert lm("first", temperature=0) == "one"
    assert lm(conversation) == "two"

    assert lm.calls == 2
    assert lm.usage == Usage(prompt_tokens=30, completion_tokens=3, total_tokens=33)
    assert sent(route, 0)["messages"] == [{"role": "user", "content": "first"}]
    assert sent(route, 0)["temperature"] == 0
    assert sent(route, 1)["messages"] == conversation


def test_acall_raises_on_refusal(router: Any) -> None:
    router.post("/chat/completions").mock(return_value=replay("openai-python-strict-refusal.json"))

    with pytest.raises(RefusalError) as info:
        asyncio.run(make_lm().acall("How do I make anthrax?"))

    assert info.value.refusal == "I'm very sorry, but I can't assist with that."


def test_repr_shows_model_and_base_url_but_never_the_key() -> None:
    built = LM("gpt-test", base_url="http://localhost:8000/v1", api_key=KEY)

    assert repr(built) == (
        "LM(model='gpt-test', base_url='http://localhost:8000/v1', profile='generic')"
    )
    assert repr(make_lm()) == (
        "LM(model='gpt-test', base_url='https://llm.test/v1/', profile='openai')"
    )
    assert KEY not in repr(built) + repr(make_lm())


def test_missing_api_key_is_a_configuration_error_at_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    lm = LM("gpt-test")  # constructing needs no key; OpenAI's own endpoint needs one

    with pytest.raises(ConfigurationError, match="OPENAI_API_KEY") as info:
        asyncio.run(lm.acomplete(LMRequest(messages=HELLO)))

    assert isinstance(info.value.__cause__, openai.OpenAIError)


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("http://[bad", "is not a URL (Invalid IPv6 URL)"),
        ("http://me:s3cret-pass@[bad/v1", "is not a URL"),
        ("http://localhost:99999/v1", "is not a URL (Port out of range"),
        ("localhost:8080/v1", "is not an http:// or https:// URL with a host"),
        ("ftp://files.test/v1", "is not an http:// or https:// URL with a host"),
    ],
)
def test_a_base_url_the_sdk_cannot_send_to_is_refused_when_the_lm_is_made(
    base_url: str, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(problem)) as info:
        LM("gpt-test", base_url=base_url, api_key=KEY)
    assert str(info.value).startswith("LM('gpt-test'): base_url ")
    assert "s3cret-pass" not in str(info.value)  # a user:password@ part is never echoed
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    with pytest.raises(ConfigurationError, match="OPENAI_BASE_URL"):
        LM("gpt-test", api_key=KEY)


def test_an_injected_client_excludes_client_options() -> None:
    client = openai.AsyncOpenAI(
        base_url=BASE_URL, api_key=KEY, http_client=cast(Any, httpx.AsyncClient())
    )

    with pytest.raises(ConfigurationError, match="api_key, max_retries"):
        LM("gpt-test", client=client, api_key="other", max_retries=3)
