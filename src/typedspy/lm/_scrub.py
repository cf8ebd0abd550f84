"""Credentials out of exceptions: typedspy's own and every exception chained under them.

An endpoint or gateway may echo the API key (a 401 quoting it, a proxy reflecting headers), and
a base URL may carry ``user:password@``. `LM` keeps the SDK exception as ``__cause__`` (it says
what happened), so the secrets are removed from it and from everything it chains before it is
raised: messages, ``args``, notes, the SDK's ``body`` and ``message``, and the HTTP request and
response it holds (the ``Authorization`` header, an echoing body). Tracebacks, ``repr``, ``str``
and pickles of the chain then show ``[redacted]`` (ADR-028).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from typedspy.lm._wordings import redact_patterns

__all__ = [
    "CREDENTIAL_HEADERS",
    "Redactor",
    "endpoint_redactor",
    "redactor",
    "scrub_chain",
    "shown_endpoint",
    "split_userinfo",
    "url_secrets",
]

_MIN_SECRET = 6  # shorter strings would redact ordinary words
_MAX_CHAIN = 32  # exceptions walked per chain (a cycle or a hostile chain stops there)
_MAX_ITEMS = 100_000  # values one walk redacts; past it, strings and containers are replaced
_REDACTED = "[redacted]"
_HTTP_KINDS = ("Request", "Response")
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "proxy-authorization", "cookie"}
)
"""Headers that carry credentials (lower case): redacted in errors, left out of cache keys."""

Redactor = Callable[[str], str]


def redactor(secrets: list[str | None]) -> Redactor:
    """A function replacing each secret (and anything credential-shaped) with ``[redacted]``."""
    known = sorted(
        {s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET}, key=len, reverse=True
    )

    def redact(text: str) -> str:
        for secret in known:
            if secret in text:
                text = text.replace(secret, "[redacted]")
        return redact_patterns(text)

    return redact


def endpoint_redactor(api_key: str | None, base_url: str | None, client: Any) -> Redactor:
    """A `redactor` for an endpoint's credentials, given or taken from ``client`` or the env.

    The key given, ``client``'s and ``OPENAI_API_KEY``; the password of the base URL given
    (else ``OPENAI_BASE_URL``) and of ``client``'s.
    """
    url = base_url or os.environ.get("OPENAI_BASE_URL")
    secrets = [api_key, getattr(client, "api_key", None), os.environ.get("OPENAI_API_KEY")]
    secrets += url_secrets(url)
    if client is not None:
        secrets += url_secrets(str(client.base_url))
    return redactor(secrets)


def shown_endpoint(api_key: str | None, base_url: str | None, client: Any) -> str | None:
    """The base URL requests go to, redacted: ``client``'s, else the one given, else the env's."""
    url = str(client.base_url) if client is not None else None
    url = url or base_url or os.environ.get("OPENAI_BASE_URL")
    return None if url is None else endpoint_redactor(api_key, base_url, client)(url)


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that part percent-decoded (or ``None``).

    The HTTP library logs every request's URL at INFO: a base URL keeping its userinfo would
    put the password in the log, so it is sent as basic auth instead (as the library would:
    only when there is a user or a password, so an empty ``:@`` leaves the API key in place).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return url, None
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = (unquote(part) for part in userinfo.partition(":"))
    return urlunsplit(parts._replace(netloc=host)), (user, password) if user or password else None


def url_secrets(url: str | None) -> list[str | None]:
    """The password of ``url``'s ``user:password@`` part, raw and percent-decoded."""
    if not url or "@" not in url:
        return []
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [password, unquote(password)] if password else []


def scrub_chain(exc: BaseException, redact: Redactor) -> None:
    """Redact ``exc`` and every exception it chains (``__cause__``, ``__context__``) in place."""
    pending: list[BaseException] = [exc]
    seen: set[int] = set()
    while pending and len(seen) < _MAX_CHAIN:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _scrub_one(current, redact)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def _scrub_one(exc: BaseException, redact: Redactor) -> None:
    with contextlib.suppress(Exception):  # an exception refusing new args keeps its own
        exc.args = tuple(_scrub_value(a, redact) for a in exc.args)
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list):
        exc.__notes__ = [redact(n) if isinstance(n, str) else n for n in notes]
    state: dict[str, Any] = getattr(exc, "__dict__", {})
    for name, value in list(state.items()):
        kind = _http_kind(value)
        if kind == "Request":
            state[name] = _scrub_request(value, redact)
        elif kind == "Response":
            state[name] = _scrub_response(value, redact)
        elif name != "__notes__":
            state[name] = _scrub_value(value, redact)


def _scrub_value(value: Any, redact: Redactor) -> Any:
    """``value`` with every string in it redacted, however deep (ADR-058).

    Dicts (keys too), lists and tuples are copied, walked with a stack rather than recursion.
    The walk is bounded: past ``_MAX_ITEMS`` values, each further string or container is
    replaced by ``[redacted]`` unread, never kept as it was. Other objects are kept as they are.
    """
    budget = _MAX_ITEMS
    # One frame per container being copied: the container, its items left, the copies made.
    frames: list[tuple[Any, Iterator[Any], list[Any]]] = [((), iter((value,)), [])]
    while True:
        source, items, copies = frames[-1]
        item = next(items, _END)
        if item is _END:
            frames.pop()
            if not frames:
                return copies[0]
            frames[-1][2].append(_rebuilt(source, copies))
            continue
        budget -= 1
        if budget < 0 and isinstance(item, (str, dict, list, tuple)):
            copies.append(_REDACTED)
        elif isinstance(item, str):
            copies.append(redact(item))
        elif isinstance(item, dict):
            pairs = itertools.chain.from_iterable(item.items())  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
            frames.append((item, pairs, []))  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(item, (list, tuple)):
            frames.append((item, iter(item), []))  # pyright: ignore[reportUnknownArgumentType]
        else:
            copies.append(item)


_END = object()


def _rebuilt(source: Any, copies: list[Any]) -> Any:
    if isinstance(source, dict):
        return dict(zip(copies[::2], copies[1::2], strict=True))
    if isinstance(source, list):
        return copies
    if hasattr(source, "_make"):  # a named tuple
        with contextlib.suppress(Exception):
            return source._make(copies)
    return tuple(copies)


def _http_kind(value: object) -> str | None:
    # The SDK's HTTP library: httpx, or httpx2 for openai 3 (duck-typed, never imported here).
    cls = type(value)
    if cls.__module__.split(".")[0] in ("httpx", "httpx2") and cls.__name__ in _HTTP_KINDS:
        return cls.__name__
    return None


def _scrub_headers(headers: Any, redact: Redactor) -> Any:
    return type(headers)(
        [
            (k, "[redacted]" if k.lower() in CREDENTIAL_HEADERS else redact(v))
            for k, v in headers.multi_items()
        ]
    )


def _scrub_request(request: Any, redact: Redactor) -> Any:
    url = redact(str(request.url))
    return type(request)(request.method, url, headers=_scrub_headers(request.headers, redact))


def _scrub_response(response: Any, redact: Redactor) -> Any:
    try:
        content = redact(response.text).encode()
    except Exception:  # a body not read (a stream), or not text: not kept
        content = b""
    headers = _scrub_headers(response.headers, redact)
    headers.pop("content-encoding", None)  # the kept body is decoded text
    headers.pop("content-length", None)
    try:
        request = _scrub_request(response.request, redact)
    except RuntimeError:  # a response built without a request
        request = None
    return type(response)(response.status_code, headers=headers, content=content, request=request)
