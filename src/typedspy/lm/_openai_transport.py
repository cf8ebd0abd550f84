"""The HTTP transport under the client `LM` builds: every response body capped while it is read.

The SDK reads a whole body into memory, and its HTTP library inflates gzip without a bound, so a
1 MB gzip body inflating to 1 GB took about 3 GB (issue 10). `CappedTransport` wraps the SDK's
own transport: it decodes ``gzip``/``deflate`` itself, 64 KiB of output at a time, counts the
decoded bytes and stops the read past ``max_response_bytes`` with `ResponseBodyError` (an
``openai.OpenAIError``, so the SDK neither retries it nor wraps it; `LM` maps it onto
`LMResponseLimitError`). Peak memory is then the cap plus one 64 KiB step, whatever the
compression ratio. It applies to plain and streamed responses and to error bodies alike
(ADR-028). Every route is capped: straight to the endpoint and through the proxies the
environment names, which are mounted here (`_proxy_mounts`, read without the HTTP library's
private reader, ADR-064). The HTTP library is the SDK's own: ``httpx2`` for openai 3, ``httpx``
before.
"""

from __future__ import annotations

import importlib
import ipaddress
import urllib.request
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any

import openai

__all__ = [
    "CappedTransport",
    "ResponseBodyError",
    "http_client",
]

_STEP = 64 * 1024  # decoded bytes produced per decompression step
_DECODED = ("gzip", "deflate")


def _sdk_http() -> ModuleType:
    for cls in openai.DefaultAsyncHttpxClient.__mro__:
        root = cls.__module__.split(".")[0]
        if cls.__name__ == "AsyncClient" and root in ("httpx", "httpx2"):
            return importlib.import_module(root)
    return importlib.import_module("httpx")  # pragma: no cover  (every SDK release has one)


_http: Any = _sdk_http()


class ResponseBodyError(openai.OpenAIError):
    """A response body past the size cap, or one that cannot be decoded.

    Attributes:
        limit: ``"max_response_bytes"`` when the cap was reached, else ``None``.
        allowed: The cap, in bytes.
    """

    def __init__(self, message: str, *, limit: str | None, allowed: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.allowed = allowed


class _Meter:
    """Decodes and counts one body's bytes; raises past the cap (shared by both transports)."""

    def __init__(self, encoding: str, limit: int) -> None:
        self._decoder = _decoder(encoding)
        self._encoding = encoding
        self._limit = limit
        self._seen = 0
        # deflate: held until its first two bytes say zlib-wrapped or raw (both are sent)
        self._head: bytes | None = b"" if encoding == "deflate" else None

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._decoder is None:  # identity: count as it comes, no copy
            yield self._counted(data)
            return
        if self._head is not None:
            data = self._head + data
            if len(data) < 2:
                self._head = data
                return
            self._head = None
            if not _wrapped(data):  # raw deflate, as the HTTP library reads it too
                self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)
        for piece in _inflate(self._decoder, data, self._encoding):
            yield self._counted(piece)

    def tail(self) -> bytes:
        if self._decoder is None:
            return b""
        held = b"".join(_inflate(self._decoder, self._head or b"", self._encoding))
        return self._counted(held + self._decoder.flush())

    def _counted(self, piece: bytes) -> bytes:
        self._seen += len(piece)
        if self._seen > self._limit:
            raise ResponseBodyError(
                f"the response body is larger than max_response_bytes={self._limit} (decoded; "
                "the read was stopped there): set LM(max_response_bytes=...) to allow more",
                limit="max_response_bytes",
                allowed=self._limit,
            )
        return piece


class _CappedStream(_http.AsyncByteStream, _http.SyncByteStream):  # type: ignore[misc]
    """A response body, decoded and counted as it is read (async by a `_Reader`, or blocking)."""

    def __init__(self, raw: Any, encoding: str, limit: int) -> None:
        self._raw = raw
        self._encoding = encoding
        self._limit = limit
        self._reader: _Reader | None = None

    def __aiter__(self) -> _Reader:
        self._reader = _Reader(self._raw, _Meter(self._encoding, self._limit))
        return self._reader

    def __iter__(self) -> Iterator[bytes]:
        meter = _Meter(self._encoding, self._limit)
        for data in self._raw:
            yield from meter.feed(data)
        if tail := meter.tail():
            yield tail

    async def aclose(self) -> None:
        if self._reader is not None:
            await self._reader.aclose()
        await self._raw.aclose()

    def close(self) -> None:
        self._raw.close()


class _Reader:
    """One pass over a body: inflated 64 KiB at a time, stopped past the cap.

    A class, not an async generator: the HTTP library drops the iterator it reads a body from
    without closing it, and an abandoned generator is left to the event loop's finalizer hook
    (a task per generator, run whenever garbage collection finds it). This one holds no frame,
    and `aclose` closes the iterator it reads from.
    """

    def __init__(self, raw: Any, meter: _Meter) -> None:
        self._source: AsyncIterator[bytes] = raw.__aiter__()
        self._meter = meter
        self._pieces: Iterator[bytes] = iter(())
        self._ended = False

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> bytes:
        while True:
            piece = next(self._pieces, None)
            if piece is not None:
                return piece
            if self._ended:
                raise StopAsyncIteration
            try:
                data = await self._source.__anext__()
            except StopAsyncIteration:
                self._ended = True
                tail = self._meter.tail()
                if tail:
                    return tail
                raise
            self._pieces = self._meter.feed(data)

    async def aclose(self) -> None:
        self._ended, self._pieces = True, iter(())
        close = getattr(self._source, "aclose", None)
        if close is not None:
            await close()


def _decoder(encoding: str) -> Any:
    if encoding == "gzip":
        return zlib.decompressobj(zlib.MAX_WBITS | 16)
    if encoding == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # zlib- or gzip-wrapped
    return None


def _wrapped(head: bytes) -> bool:
    """Whether a deflate body starting with ``head`` has a zlib (or gzip) header (RFC 1950)."""
    return head[:2] == b"\x1f\x8b" or (head[0] & 0x0F == 8 and int.from_bytes(head[:2]) % 31 == 0)


def _inflate(decoder: Any, data: bytes, encoding: str) -> Iterator[bytes]:
    while data:
        try:
            piece = decoder.decompress(data, _STEP)
        except zlib.error as exc:
            raise ResponseBodyError(
                f"the response body is not valid {encoding}: {exc}", limit=None, allowed=0
            ) from None
        data = decoder.unconsumed_tail
        if piece:
            yield piece


def _accepted(request: Any) -> None:
    request.headers["accept-encoding"] = ", ".join(_DECODED)  # only what is decoded here


def _capped(response: Any, request: Any, limit: int) -> Any:
    """``response`` with its body decoded and capped; an encoding not asked for raises."""
    encoding: str = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in (*_DECODED, "identity", ""):
        raise ResponseBodyError(
            f"the endpoint sent a body in {encoding!r}, not one of the encodings asked for "
            f"({', '.join(_DECODED)})",
            limit=None,
            allowed=limit,
        )
    headers = response.headers
    if encoding in _DECODED:  # decoded here: the client must not decode it again
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ]
    return _http.Response(
        response.status_code,
        headers=headers,
        stream=_CappedStream(response.stream, encoding, limit),
        extensions=response.extensions,
        request=request,
    )


class CappedTransport(_http.AsyncBaseTransport, _http.BaseTransport):  # type: ignore[misc]
    """Wraps the SDK's transport, async or blocking: bodies decoded here, capped at ``limit``."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: Any) -> Any:
        _accepted(request)
        response = await self._inner.handle_async_request(request)
        try:
            return _capped(response, request, self._limit)
        except ResponseBodyError:
            await response.aclose()
            raise

    def handle_request(self, request: Any) -> Any:
        _accepted(request)
        response = self._inner.handle_request(request)
        try:
            return _capped(response, request, self._limit)
        except ResponseBodyError:
            response.close()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()


def http_client(
    max_response_bytes: int, *, blocking: bool = False, auth: tuple[str, str] | None = None
) -> Any:
    """The SDK's default HTTP client (``blocking`` or async), every route on a capped transport.

    Direct requests and those through the environment's proxies alike (`_proxy_mounts`);
    ``auth``, a user and password, is sent as basic auth on every request.
    """
    inner: Any = _http.HTTPTransport if blocking else _http.AsyncHTTPTransport
    client: Any = openai.DefaultHttpxClient if blocking else openai.DefaultAsyncHttpxClient

    def capped(**options: Any) -> Any:
        limits = openai.DEFAULT_CONNECTION_LIMITS  # the pool the SDK's own client would have
        return CappedTransport(inner(limits=limits, **options), max_response_bytes)

    basic = None if auth is None else _http.BasicAuth(*auth)
    return client(transport=capped(), mounts=_proxy_mounts(capped), auth=basic)


def _proxy_mounts(capped: Callable[..., Any]) -> dict[str, Any]:
    """The proxies the environment names, mounted as the SDK's own client would, each capped.

    An HTTP client given a transport ignores ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (its
    ``trust_env`` applies only to transports it builds), so they are mounted here: a URL pattern
    to ``capped(proxy=...)``, or to ``None`` (straight to the default transport) for what
    ``NO_PROXY`` exempts. The environment is read with ``urllib.request.getproxies()``, as the
    HTTP library reads it, and each ``NO_PROXY`` entry becomes the library's URL pattern by
    curl's rules, as httpx2 writes them (`_exempted`).
    """
    found = urllib.request.getproxies()
    routes: dict[str, str | None] = {}
    for scheme in ("http", "https", "all"):
        if url := found.get(scheme):
            routes[f"{scheme}://"] = url if "://" in url else f"http://{url}"
    for entry in (part.strip() for part in found.get("no", "").split(",")):
        if entry == "*":  # nothing goes through a proxy
            return {}
        if entry and (pattern := _exempted(entry)) is not None:
            routes[pattern] = None
    return {
        pattern: None if url is None else capped(proxy=_http.Proxy(url))
        for pattern, url in routes.items()
    }


def _exempted(entry: str) -> str | None:
    """The URL pattern of one ``NO_PROXY`` entry, or ``None`` for one that cannot be parsed.

    ``example.com`` exempts it and its subdomains, ``.example.com`` and ``*.example.com`` the
    subdomains only; an IP address or network (``10.0.0.0/8``, ``::1``), ``localhost`` and a
    URL (``http://host:8080``) exempt what they name.
    """
    address, slash, prefix = entry.partition("/")
    if "://" in entry:
        pattern = entry
    elif _ip(address) == 4 or entry.lower() == "localhost" or entry.startswith("["):
        pattern = f"all://{entry}"
    elif _ip(address) == 6:
        pattern = f"all://[{address}]{slash}{prefix}"
    elif entry.startswith("*.") and not slash:
        pattern = f"all://{entry}"
    elif not slash:
        pattern = f"all://*{entry}"
    else:
        return None
    try:
        url = _http.URL(pattern)
    except _http.InvalidURL:
        return None
    network = url.path.removeprefix("/")
    if network and _ip(url.host):  # a network: the library refuses a malformed one
        host = f"[{url.host}]" if ":" in url.host else url.host
        if "@" in pattern or "%" in pattern or not network.isdigit():
            return None
        if not pattern.endswith(f"{host}/{network}"):
            return None
        try:
            ipaddress.ip_network(f"{url.host}/{network}", strict=False)
        except ValueError:
            return None
    return pattern


def _ip(host: str) -> int | None:
    """4 or 6 for an IP address, else ``None``."""
    try:
        return ipaddress.ip_address(host).version
    except ValueError:
        return None
