"""The request parameters typedspy accepts, and the JSON body built from them once per request.

A misspelt parameter (``temprature=0``) would otherwise reach the endpoint, which ignores or
rejects it far from the line that wrote it (issue 9). Names are checked where they are given
(`LM`, `Predict`, `ChainOfThought`, `ReAct`, ``lm(prompt, **params)``); anything an endpoint
accepts beyond the Chat Completions API goes through ``extra_body={...}``, the openai SDK's
own escape hatch, unchecked.

`wire_body` builds the body from an `LMRequest` and the LM's defaults; the pipeline builds it
once per request (`Exchange.body`): the cache key hashes it, `render` returns it, the history
keeps it and `create_kwargs` hands it to the SDK as it is (ADR-061).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from typedspy._json import first_not_json
from typedspy._text import encodable
from typedspy._types import format_path
from typedspy.errors import ConfigurationError
from typedspy.lm._messages import LMRequest
from typedspy.profiles import token_cap_problem

__all__ = [
    "CHAT_COMPLETIONS_PARAMS",
    "REQUEST_OPTIONS",
    "LMDefaults",
    "RequestParams",
    "call_options",
    "check_params",
    "create_kwargs",
    "plain",
    "wire_body",
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
            completion is read per request); a ``max_tokens`` or ``max_completion_tokens``
            that is not an int from 1 to ``2**31 - 1``; an ``extra_body`` that is not a mapping; or
            anything in them JSON cannot carry (a NaN or infinity, a set, bytes, an
            ``object()``, a model, a cycle), named by its path: the SDK raised a bare
            ``ValueError`` or ``TypeError`` when sending it, or sent a model as ``{}``.
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
    for name in ("max_tokens", "max_completion_tokens"):
        if why := token_cap_problem(params.get(name)):
            raise ConfigurationError(f"{where}: {name}={params[name]!r}: {why}")
    extra = params.get("extra_body")
    if extra is not None and not isinstance(extra, Mapping):
        raise ConfigurationError(
            f"{where}: extra_body must be a mapping of parameter names to values, "
            f"got {type(extra).__name__}"
        )
    found = first_not_json(params)
    if found is not None:
        path, value, why = found
        shown = f"{format_path(path)}={value!r}" if isinstance(value, float) else format_path(path)
        raise ConfigurationError(f"{where}: {shown} cannot be sent: {why}")


_OPTIONS = REQUEST_OPTIONS - {"extra_body"}
"""The SDK's per-request options sent beside the body (headers, query string, client timeout)."""

_ATOMS = frozenset({int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """Copy mappings and sequences into plain dicts and lists, as the SDK serialises them.

    Strings UTF-8 cannot encode (lone surrogates) are repaired. Numbers, booleans, ``None`` and
    ASCII strings are taken as they are without a call of their own: a request's schema is
    mostly such leaves.
    """
    kind = value.__class__
    if kind is str:
        return value if value.isascii() else encodable(value)
    if kind in _ATOMS:
        return value
    if isinstance(value, Mapping):
        pairs = value.items()  # pyright: ignore[reportUnknownVariableType]
        return {
            str(k): v if (t := v.__class__) in _ATOMS or (t is str and v.isascii()) else plain(v)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType, reportUnknownMemberType]
            for k, v in pairs  # pyright: ignore[reportUnknownVariableType]
        }
    if isinstance(value, (list, tuple)):
        return [
            v if (t := v.__class__) in _ATOMS or (t is str and v.isascii()) else plain(v)  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]
            for v in value  # pyright: ignore[reportUnknownVariableType]
        ]
    if isinstance(value, str):  # a subclass of str
        return encodable(value)
    return value


def wire_body(model: str, defaults: Mapping[str, Any], request: LMRequest) -> dict[str, Any]:
    """The JSON body for ``request`` to ``model``, exactly as it goes on the wire.

    The request's parameters override ``defaults`` name by name; the two ``extra_body``
    mappings merge likewise and are merged in last (their keys win, as in the SDK). A
    parameter whose value is ``None`` is left out, the LM's default of that name included.
    The SDK's per-request options are not in the body (`call_options`).

    Raises:
        ConfigurationError: ``request.params`` hold a reserved or unknown parameter.
    """
    check_params(request.params, where="LMRequest.params")
    body: dict[str, Any] = {"model": model, "messages": plain(request.messages)}
    if request.response_format is not None:
        body["response_format"] = plain(request.response_format)
    if request.tools:
        body["tools"] = plain(request.tools)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.tool_choice is not None:
        body["tool_choice"] = plain(request.tool_choice)
    extra_body: dict[str, Any] = {}
    for name, value in [*defaults.items(), *request.params.items()]:
        if name in _OPTIONS:
            continue
        if name == "extra_body" and isinstance(value, Mapping):
            extra_body.update(plain(value))
        elif value is None:  # unsets the name (a call's ``max_tokens=None`` drops the LM's)
            body.pop(name, None)
            extra_body.pop(name, None)
        else:
            body[name] = plain(value)
    body.update(extra_body)
    return body


def call_options(defaults: Mapping[str, Any], request: LMRequest) -> dict[str, Any]:
    """The SDK's per-request options (``extra_headers``, ``extra_query``, ``timeout``).

    The request's over ``defaults``, name by name; ``None`` unsets one.
    """
    options: dict[str, Any] = {}
    for name, value in [*defaults.items(), *request.params.items()]:
        if name not in _OPTIONS:
            continue
        if value is None:
            options.pop(name, None)
        else:
            options[name] = plain(value)
    return options


def create_kwargs(
    body: dict[str, Any], options: Mapping[str, Any], *, stream: bool = False
) -> dict[str, Any]:
    """The SDK's ``create`` arguments that send ``body`` as it is.

    Every field goes through ``extra_body``, merged into the body after the SDK's transform of
    its arguments, which the plain JSON here does not need (ADR-047); ``messages=[]`` fills the
    required argument. A parameter an older SDK's ``create`` lacks goes the same way (ADR-045).
    """
    kwargs: dict[str, Any] = {"model": body["model"], "messages": [], "extra_body": body}
    kwargs.update(options)
    if stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs
