"""The JSON body of one chat-completions request, built once, and the SDK call that sends it.

`wire_body` builds the body from an `LMRequest` and the LM's defaults; the pipeline builds it
once per request (`Exchange.body`): the cache key hashes it, `render` returns it, the history
keeps it and `create_kwargs` hands it to the SDK as it is (ADR-061).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from typedspy.lm._messages import LMRequest
from typedspy.lm._params import check_params

__all__ = ["call_options", "create_kwargs", "plain", "wire_body"]

_SURROGATES = re.compile("[\ud800-\udfff]")

_OPTIONS = ("extra_headers", "extra_query", "timeout")
"""The SDK's per-request options: sent beside the body (headers, query string, client timeout)."""

_ATOMS = frozenset({int, float, bool, type(None)})


def plain(value: Any) -> Any:
    """Copy mappings and sequences into plain dicts and lists, as the SDK serialises them.

    Strings UTF-8 cannot encode (lone surrogates) are repaired. Numbers, booleans, ``None`` and
    ASCII strings are taken as they are without a call of their own: a request's schema is
    mostly such leaves.
    """
    kind = value.__class__
    if kind is str:
        return value if value.isascii() else _encodable(value)
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
        return _encodable(value)
    return value


def _encodable(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot encode) replaced by U+FFFD.

    A model may send an escaped lone surrogate in its JSON; echoed back in a feedback turn it
    would make the SDK fail to encode the request (an untyped `UnicodeEncodeError`, issue 10).
    """
    try:
        text.encode()
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


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
