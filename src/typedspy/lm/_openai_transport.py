"""The HTTP transport under the client `LM` builds: every response body capped while it is read.

The SDK reads a whole body into memory, and its HTTP library inflates gzip without a bound, so a
1 MB gzip body inflating to 1 GB took about 3 GB (issue 10). `CappedTransport` wraps the SDK's
own transport: it decodes ``gzip``/``deflate`` itself, 64 KiB of output at a time, counts the
decoded bytes and stops the read past ``max_response_bytes`` with `ResponseBodyError` (an
``openai.OpenAIError``, so the SDK neither retries it nor wraps it; `LM` maps it onto
`LMResponseLimitError`). Peak memory is then the cap plus one 64 KiB step, whatever the
compression ratio. It applies to plain and streamed responses and to error bodies alike
(ADR-028). The HTTP library is the SDK's own: ``httpx2`` for openai 3, ``httpx`` before.
"""

from __future__ import annotations

import importlib
import zlib
from collections.abc import AsyncIterator, Iterator
from types import ModuleType
from typing import Any

import openai

__all__ = ["CappedTransport", "ResponseBodyError", "http_client"]

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


class _CappedStream(_http.AsyncByteStream):  # type: ignore[misc]
    """A response body, decoded and counted by a `_Reader`; closing it closes the reader too."""

    def __init__(self, raw: Any, encoding: str, limit: int) -> None:
        self._raw = raw
        self._encoding = encoding
        self._limit = limit
        self._reader: _Reader | None = None

    def __aiter__(self) -> _Reader:
        self._reader = _Reader(self._raw, self._encoding, self._limit)
        return self._reader

    async def aclose(self) -> None:
        if self._reader is not None:
            await self._reader.aclose()
        await self._raw.aclose()


class _Reader:
    """One pass over a body: inflated 64 KiB at a time, stopped past the cap.

    A class, not an async generator: the HTTP library drops the iterator it reads a body from
    without closing it, and an abandoned generator is left to the event loop's finalizer hook
    (a task per generator, run whenever garbage collection finds it). This one holds no frame,
    and `aclose` closes the iterator it reads from.
    """

    def __init__(self, raw: Any, encoding: str, limit: int) -> None:
        self._source: AsyncIterator[bytes] = raw.__aiter__()
        self._encoding = encoding
        self._limit = limit
        self._decoder = _decoder(encoding)
        self._pieces: Iterator[bytes] = iter(())
        self._seen = 0
        self._ended = False

    def __aiter__(self) -> _Reader:
        return self

    async def __anext__(self) -> bytes:
        while True:
            piece = next(self._pieces, None)
            if piece is not None:
                return self._counted(piece)
            if self._ended:
                raise StopAsyncIteration
            try:
                data = await self._source.__anext__()
            except StopAsyncIteration:
                self._ended = True
                tail = self._decoder.flush() if self._decoder is not None else b""
                if tail:
                    return self._counted(tail)
                raise
            if self._decoder is None:  # identity: count as it comes, no copy
                return self._counted(data)
            self._pieces = _inflate(self._decoder, data, self._encoding)

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


class CappedTransport(_http.AsyncBaseTransport):  # type: ignore[misc]
    """Wraps the SDK's transport; response bodies are decoded here, capped at ``limit`` bytes."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def handle_async_request(self, request: Any) -> Any:
        request.headers["accept-encoding"] = ", ".join(_DECODED)  # only what is decoded here
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in (*_DECODED, "identity", ""):
            await response.aclose()
            raise ResponseBodyError(
                f"the endpoint sent a body in {encoding!r}, not one of the encodings asked for "
                f"({', '.join(_DECODED)})",
                limit=None,
                allowed=self._limit,
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
            stream=_CappedStream(response.stream, encoding, self._limit),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(max_response_bytes: int) -> Any:
    """The SDK's default async HTTP client, on a `CappedTransport` (the SDK's pool limits)."""
    limits = _http.Limits(max_connections=1000, max_keepalive_connections=100)
    inner = _http.AsyncHTTPTransport(limits=limits)
    return openai.DefaultAsyncHttpxClient(transport=CappedTransport(inner, max_response_bytes))
