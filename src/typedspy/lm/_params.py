"""The request parameters typedspy accepts, and the check that refuses every other name.

A misspelt parameter (``temprature=0``) would otherwise reach the endpoint, which ignores or
rejects it far from the line that wrote it (issue 9). Names are checked where they are given
(`LM`, `Predict`, `ChainOfThought`, `ReAct`, ``lm(prompt, **params)``); anything an endpoint
accepts beyond the Chat Completions API goes through ``extra_body={...}``, the openai SDK's
own escape hatch, unchecked.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from typedspy.errors import ConfigurationError

__all__ = [
    "CHAT_COMPLETIONS_PARAMS",
    "REQUEST_OPTIONS",
    "LMDefaults",
    "RequestParams",
    "check_params",
]


# Source: openai-python 3.57.0, openai/types/chat/completion_create_params.py: the keys of
# `CompletionCreateParamsBase` (plus ``stream`` of its two subclasses), the types loosened to
# what JSON carries; the SDK is not imported here (ADR-034). The keys LM sets itself are in
# `_RESERVED_PARAMS` below. tests/lm/test_request_params.py checks both against the SDK's type.
class LMDefaults(TypedDict, total=False):
    """The request parameters `LM` takes as defaults: `RequestParams` but ``timeout``.

    ``LM(timeout=...)`` is the client's timeout, set when `LM` builds the client.
    """

    audio: Mapping[str, Any] | None
    frequency_penalty: float | None
    function_call: str | Mapping[str, Any]
    functions: Sequence[Mapping[str, Any]]
    logit_bias: Mapping[str, int] | None
    logprobs: bool | None
    max_completion_tokens: int | None
    max_tokens: int | None
    metadata: Mapping[str, str] | None
    modalities: Sequence[str] | None
    moderation: Any
    n: int | None
    prediction: Mapping[str, Any] | None
    presence_penalty: float | None
    prompt_cache_key: str
    prompt_cache_options: Any
    prompt_cache_retention: str | None
    reasoning_effort: str | None
    safety_identifier: str
    seed: int | None
    service_tier: str | None
    stop: str | Sequence[str] | None
    store: bool | None
    temperature: float | None
    top_logprobs: int | None
    top_p: float | None
    user: str
    verbosity: str | None
    web_search_options: Mapping[str, Any]
    extra_body: Mapping[str, Any]
    extra_headers: Mapping[str, str]
    extra_query: Mapping[str, Any]


class RequestParams(LMDefaults, total=False):
    """The request parameters `Predict`, `ChainOfThought`, `ReAct` and ``lm(...)`` take.

    The Chat Completions API's parameters (except those `LM` sets itself: ``model``,
    ``messages``, ``response_format``, ``tools``, ``stream``...) and the openai SDK's
    per-request options. An endpoint's own parameters go inside ``extra_body``, sent as is.
    Type checkers flag a misspelt keyword; `check_params` refuses it at run time.
    """

    timeout: float | None


REQUEST_OPTIONS = frozenset({"extra_body", "extra_headers", "extra_query", "timeout"})
"""The SDK's per-request options ``create()`` takes beside the API's parameters."""

# Request keys LM fills from LMRequest itself; they cannot come from defaults or params.
_RESERVED_PARAMS = frozenset(
    {
        "messages",
        "model",
        "parallel_tool_calls",
        "response_format",
        "stream",
        "stream_options",
        "tool_choice",
        "tools",
    }
)
_ACCEPTED: frozenset[str] = RequestParams.__optional_keys__
CHAT_COMPLETIONS_PARAMS = (_ACCEPTED - REQUEST_OPTIONS) | _RESERVED_PARAMS
"""The Chat Completions request parameters (openai-python 3.57.0's ``CompletionCreateParams``)."""


def check_params(params: Mapping[str, Any], *, where: str) -> None:
    """Refuse request parameters that are unknown or that `LM` sets itself.

    Args:
        params: Parameter name to value, as a user gave them.
        where: Who took them, for the message (``"LM defaults"``, ``"Predict(...)"``).

    Raises:
        ConfigurationError: A name `LM` sends itself (``model``, ``messages``, ``stream``...);
            a name the Chat Completions API does not have, with the closest known name (pass
            endpoint-specific parameters through ``extra_body={...}``); ``n`` other than 1 (one
            completion is read per request); or an ``extra_body`` that is not a mapping.
    """
    reserved = sorted(set(params) & _RESERVED_PARAMS)
    if reserved:
        raise ConfigurationError(
            f"{where} cannot set {', '.join(reserved)}: LM sends these from the LMRequest itself"
        )
    unknown = sorted(name for name in params if name not in _ACCEPTED)
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, sorted(_ACCEPTED), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigurationError(
            f"{where}: unknown request parameter {name!r}; {hint}A parameter the Chat "
            f"Completions API does not have goes through extra_body={{{name!r}: ...}}, "
            "sent as is"
        )
    n = params.get("n")
    if n is not None and n != 1:
        raise ConfigurationError(
            f"{where}: n={n!r} asks for several completions of one request, and a typedspy call "
            "reads one (the others would be paid for and dropped); for n predictions call the "
            "module n times with temperature > 0 (under a response cache, each with its own "
            "cache_salt)"
        )
    extra = params.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        raise ConfigurationError(
            f"{where}: extra_body must be a mapping of parameter names to values, "
            f"got {type(extra).__name__}"
        )
