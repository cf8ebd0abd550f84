"""The request parameters typedspy accepts, and the check that refuses every other name.

A misspelt parameter (``temprature=0``) would otherwise reach the endpoint, which ignores or
rejects it far from the line that wrote it (issue 9). Names are checked where they are given
(`LM`, `Predict`, `ChainOfThought`, `ReAct`, ``lm(prompt, **params)``); anything an endpoint
accepts beyond the Chat Completions API goes through ``extra_body={...}``, the openai SDK's
own escape hatch, unchecked.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from typedspy.errors import ConfigurationError

__all__ = ["CHAT_COMPLETIONS_PARAMS", "REQUEST_OPTIONS", "check_params"]

# Source: openai-python 3.57.0, openai/types/chat/completion_create_params.py: the keys of
# `CompletionCreateParamsBase` plus ``stream`` (its two subclasses). The SDK is not imported here
# (ADR-034); tests/lm/test_request_params.py checks this list against the installed SDK's type.
CHAT_COMPLETIONS_PARAMS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "messages",
        "metadata",
        "modalities",
        "model",
        "moderation",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "prompt_cache_options",
        "prompt_cache_retention",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "stream",
        "stream_options",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
    }
)
"""The Chat Completions request parameters (openai-python 3.57.0's ``CompletionCreateParams``)."""

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
_ACCEPTED = (CHAT_COMPLETIONS_PARAMS | REQUEST_OPTIONS) - _RESERVED_PARAMS


def check_params(params: Mapping[str, Any], *, where: str) -> None:
    """Refuse request parameters that are unknown or that `LM` sets itself.

    Args:
        params: Parameter name to value, as a user gave them.
        where: Who took them, for the message (``"LM defaults"``, ``"Predict(...)"``).

    Raises:
        ConfigurationError: A name `LM` sends itself (``model``, ``messages``, ``stream``...);
            a name the Chat Completions API does not have, with the closest known name (pass
            endpoint-specific parameters through ``extra_body={...}``); or an ``extra_body``
            that is not a mapping.
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
    extra = params.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        raise ConfigurationError(
            f"{where}: extra_body must be a mapping of parameter names to values, "
            f"got {type(extra).__name__}"
        )
