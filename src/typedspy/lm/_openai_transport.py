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
    def __init__(self, raw: Any, encoding: str, limit: int) -> None:
        self._raw = raw
        self._encoding = encoding
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = _decoder(self._encoding)
        seen = 0
        async for data in self._raw:
            if decoder is None:  # identity: count as it comes, no copy
                seen += len(data)
                if seen > self._limit:
                    raise self._too_large()
                yield data
                continue
            for piece in _inflate(decoder, data, self._encoding):
                seen += len(piece)
                if seen > self._limit:
                    raise self._too_large()
                yield piece
        if decoder is not None:
            tail = decoder.flush()
            if seen + len(tail) > self._limit:
                raise self._too_large()
            if tail:
                yield tail

    def _too_large(self) -> ResponseBodyError:
        return ResponseBodyError(
            f"the response body is larger than max_response_bytes={self._limit} (decoded; the "
            "read was stopped there): set LM(max_response_bytes=...) to allow more",
            limit="max_response_bytes",
            allowed=self._limit,
        )

    async def aclose(self) -> None:
        await self._raw.aclose()


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
