"""A request past the model's context window is `LMContextLengthError`, on every server's wording.

Each body is what that server sends (its source cited in ``typedspy/lm/_wordings.py``),
served by the stand-in over a real socket and read through the real openai client; the
errors that only look alike (a completion cap, a schema's ``context=``, a plain 400) stay
what they were.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import typedspy as ts
from typedspy.errors import LMContextLengthError, LMStatusError, LMUnsupportedFeatureError
from typedspy.testing import Reply, StandIn

OVERFLOWS: dict[str, tuple[dict[str, Any], int, str | None, int | None]] = {
    # name: (error body, status, code as raised, context_window)
    "llama-server": (  # the real engine's body (tests/conformance, b0 build of this machine)
        {
            "code": 400,
            "message": "request (27032 tokens) exceeds the available context size (4096 "
            "tokens), try increasing it",
            "type": "exceed_context_size_error",
        },
        400,
        "400",
        4096,
    ),
    "llama-server-older": (  # older builds: no counts, and a generic error type
        {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "invalid_request_error",
        },
        400,
        "400",
        None,
    ),
    "llama-server-type-only": (  # the error type alone is enough
        {"code": 400, "message": "too long", "type": "exceed_context_size_error"},
        400,
        "400",
        None,
    ),
    "llama-cpp-python": (  # the real engine's body
        {
            "message": "This model's maximum context length is 8192 tokens. However, you "
            "requested 27048 tokens (27032 in the messages, 16 in the completion). Please "
            "reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
        400,
        "context_length_exceeded",
        8192,
    ),
    "openai": (
        {
            "message": "This model's maximum context length is 128000 tokens. However, your "
            "messages resulted in 173172 tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
        400,
        "context_length_exceeded",
        128000,
    ),
    "openai-code-only": (  # the code alone is enough, whatever the wording
        {
            "message": "Too long.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        },
        400,
        "context_length_exceeded",
        None,
    ),
    "vllm": (
        {
            "message": "This model's maximum context length is 16384 tokens. However, you "
            "requested 122946 tokens (112946 in the messages, 10000 in the completion). "
            "Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "code": 400,
        },
        400,
        "400",
        16384,
    ),
    "vllm-max-tokens": (  # prompt plus max_tokens past the window: the request does not fit
        {
            "message": "'max_tokens' or 'max_completion_tokens' is too large: 8000. This "
            "model's maximum context length is 4096 tokens and your request has 2778 input "
            "tokens (8000 > 4096 - 2778). None",
            "type": "BadRequestError",
            "code": 400,
        },
        400,
        "400",
        4096,
    ),
    "vllm-v1-engine": (
        {
            "message": "The decoder prompt (length 8825) is longer than the maximum model "
            "length of 8192. Make sure that `max_model_len` is no smaller than the number of "
            "text tokens.",
            "type": "BadRequestError",
            "code": 400,
        },
        400,
        "400",
        8192,
    ),
    "groq": (
        {
            "message": "Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        },
        400,
        "context_length_exceeded",
        None,
    ),
    "cerebras": (
        {
            "message": "Please reduce the length of the messages or completion. Current "
            "length is 42328 while limit is 40000",
            "type": "invalid_request_error",
        },
        400,
        None,
        40000,
    ),
    "together-tgi": (
        {
            "message": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
            "4097. Given: 80125 `inputs` tokens and 4096 `max_new_tokens`",
            "type": "invalid_request_error",
            "param": "max_tokens",
        },
        400,
        None,
        4097,
    ),
    "tgi-422": (
        {
            "message": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
            "2048. Given: 1244 `inputs` tokens and 1000 `max_new_tokens`",
            "type": "validation",
        },
        422,
        None,
        2048,
    ),
    "lm-studio": (
        {
            "message": "Trying to keep the first 15857 tokens when context the overflows. "
            "However, the model is loaded with context length of only 4096 tokens, which is "
            "not enough. Try to load the model with a larger context length, or provide a "
            "shorter input",
            "type": "invalid_request_error",
        },
        400,
        None,
        4096,
    ),
}

NOT_OVERFLOWS: dict[str, tuple[dict[str, Any], int, type[LMStatusError]]] = {
    "openai-max-tokens": (  # a cap on the completion alone, whatever the prompt
        {
            "message": "max_tokens is too large: 50000. This model supports at most 32768 "
            "completion tokens, whereas you provided 50000.",
            "type": "invalid_request_error",
            "param": "max_tokens",
            "code": "invalid_value",
        },
        400,
        LMStatusError,
    ),
    "vllm-negative-max-tokens": (
        {"message": "max_tokens must be at least 1, got -186.", "type": "BadRequestError"},
        400,
        LMStatusError,
    ),
    "schema-context": (  # "context" in a schema error is a path, not the window
        {
            "message": "Invalid schema for response_format 'City': In context=(), 'oneOf' is "
            "not permitted.",
            "type": "invalid_request_error",
            "param": "response_format",
            "code": "invalid_json_schema",
        },
        400,
        LMStatusError,
    ),
    "plain-400": ({"message": "Bad request."}, 400, LMStatusError),
    "wording-on-a-500": (  # a server error stays one (and a fallback's transport trigger)
        {"message": "This model's maximum context length is 4096 tokens.", "type": "server"},
        500,
        LMStatusError,
    ),
    "unsupported-tools": (
        {"message": "registry.ollama.ai/library/gemma:2b does not support tools"},
        400,
        LMUnsupportedFeatureError,
    ),
    "unsupported-parameter": (
        {
            "message": "Unsupported parameter: 'response_format' is not supported with this model.",
            "param": "response_format",
            "code": "unsupported_parameter",
        },
        400,
        LMUnsupportedFeatureError,
    ),
}


@pytest.fixture
def server() -> Iterator[StandIn]:
    with StandIn() as standin:
        yield standin


@pytest.fixture
def lm(server: StandIn) -> Iterator[ts.LM]:
    lm = ts.LM("m", base_url=server.base_url, api_key="k", max_retries=2)
    yield lm
    lm.close()


def _raised(server: StandIn, lm: ts.LM, error: dict[str, Any], status: int) -> LMStatusError:
    reply = Reply(status=status, error=error, headers={"retry-after-ms": "1"})
    server.enqueue(reply, reply, reply)  # enough for the SDK's retries of a 5xx
    with pytest.raises(LMStatusError) as raised:
        lm("Summarize the book.")
    return raised.value


@pytest.mark.parametrize("name", OVERFLOWS)
def test_each_servers_context_overflow_is_a_context_length_error(
    server: StandIn, lm: ts.LM, name: str
) -> None:
    error, status, code, window = OVERFLOWS[name]
    raised = _raised(server, lm, error, status)
    assert type(raised) is LMContextLengthError
    assert (raised.status_code, raised.code, raised.context_window) == (status, code, window)
    assert "does not fit the model's context window" in str(raised)
    assert error["message"][:40] in str(raised)  # the server's own words, for the reader
    assert len(server.requests) == 1  # a 4xx is never resent by the SDK


@pytest.mark.parametrize("name", NOT_OVERFLOWS)
def test_errors_that_only_look_alike_stay_what_they_were(
    server: StandIn, lm: ts.LM, name: str
) -> None:
    error, status, kind = NOT_OVERFLOWS[name]
    raised = _raised(server, lm, error, status)
    assert type(raised) is kind
    assert raised.status_code == status


def test_a_predict_call_raises_it_at_once_without_feedback_retries(
    server: StandIn, lm: ts.LM
) -> None:
    class Summary(ts.Signature):
        """Summarize the text."""

        text: str = ts.InputField()
        summary: str = ts.OutputField()

    error, status, _, _ = OVERFLOWS["llama-server"]
    server.enqueue(Reply(status=status, error=error))
    with pytest.raises(LMContextLengthError) as raised:
        ts.Predict(Summary, lm=lm, max_retries=2)(text="long " * 100)
    assert raised.value.context_window == 4096
    assert len(server.requests) == 1  # a 400 is never resent, by the SDK or by Predict
