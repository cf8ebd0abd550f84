"""The keyword arguments of one ``chat.completions.create`` call, built from an `LMRequest`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from typedspy.lm._messages import LMRequest
from typedspy.lm._params import check_params

__all__ = ["as_sent", "create_kwargs", "plain"]

_SURROGATES = re.compile("[\ud800-\udfff]")


def plain(value: Any) -> Any:
    """Copy mappings and sequences into plain dicts and lists, as the SDK serialises them.

    Strings UTF-8 cannot encode (lone surrogates) are repaired.
    """
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, str) and not value.isascii():
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


# Built by `plain`, so already the JSON the SDK would send. The SDK's transform of its arguments
# (aliases, date and file formats, none of which occur here) walks every member of every union
# of every message type: on the reference request it took longer than all of typedspy's own work
# (ADR-047). ``extra_body`` is merged into the body as it is, after that transform.
_PREBUILT = ("messages", "response_format", "tools", "tool_choice")


def as_sent(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` for ``create`` with the prebuilt parts in ``extra_body`` (the same body sent).

    The caller's own ``extra_body`` keys still take precedence, as they would in the SDK.
    """
    sent = {name: value for name, value in kwargs.items() if name not in _PREBUILT}
    prebuilt = {name: kwargs[name] for name in _PREBUILT if name in kwargs}
    sent["messages"] = []  # a required argument; the list sent is the one in extra_body
    sent["extra_body"] = {**prebuilt, **(kwargs.get("extra_body") or {})}
    return sent


def create_kwargs(
    model: str, defaults: Mapping[str, Any], request: LMRequest, known: frozenset[str]
) -> dict[str, Any]:
    """The SDK's arguments for ``request``.

    Parameters the installed SDK's ``create()`` does not take (``known``: an older SDK than
    the API, ADR-045) and everything in ``extra_body`` go into ``extra_body``. A parameter
    whose value is ``None`` is left out, the LM's default of that name included.

    Raises:
        ConfigurationError: ``request.params`` hold a reserved or unknown parameter.
    """
    check_params(request.params, where="LMRequest.params")
    kwargs: dict[str, Any] = {"model": model, "messages": plain(request.messages)}
    if request.response_format is not None:
        kwargs["response_format"] = plain(request.response_format)
    if request.tools:
        kwargs["tools"] = plain(request.tools)
        if request.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = request.parallel_tool_calls
    if request.tool_choice is not None:
        kwargs["tool_choice"] = plain(request.tool_choice)
    extra_body: dict[str, Any] = {}
    # Params override defaults name by name; the two ``extra_body`` mappings merge likewise.
    # ``None`` is not sent: it unsets the name (a call's ``max_tokens=None`` drops the LM's).
    for name, value in [*defaults.items(), *request.params.items()]:
        if name == "extra_body" and isinstance(value, Mapping):
            extra_body.update(plain(value))
        elif value is None:
            kwargs.pop(name, None)
            extra_body.pop(name, None)
        elif name in known:
            kwargs[name] = plain(value)
        else:  # an API parameter newer than the installed SDK: sent in the body all the same
            extra_body[name] = plain(value)
    if extra_body:
        kwargs["extra_body"] = extra_body
    return kwargs
