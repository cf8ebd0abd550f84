"""Sending `LM`'s requests: the SDK clients, which one sends, streams, and errors translated.

An ``AsyncOpenAI`` client is built per event loop (ADR-024). A synchronous call's root task
(`typedspy._runtime.is_root`, ADR-049) sends its completions and embeddings with one blocking
``openai.OpenAI`` client instead, shared by every thread, when no deadline bounds them: nothing
else runs on that loop meanwhile, and the blocking client costs less per request than the async
one. A deadline is kept by a timer on the loop, which a blocking wait (a read, the SDK's sleep
between retries) would hold off, so a request under one, and every stream (``stream_deadline``
bounds it), is sent with the async client (ADR-064). Both clients sit on the same capped
transport (ADR-028) and pass through the same request-bound accounting (`_within`, `_count`:
how many transport retries the SDK may take under the call's `RequestBound`, how many requests
a ``create`` sent) and the same error translation (`Sender.translate`: the SDK's exceptions
onto the `LMError` tree, credentials scrubbed).

A streamed completion comes out as decoded JSON chunks (the SDK decodes the server-sent events and
raises error events, ADR-008, read here as error replies are, ADR-096), checked by `_read_chunks`:
a chunk nested past ``max_json_depth`` or past what the decoder can read is `LMResponseLimitError`;
a stream answered with something else than SSE, or whose chunks never hold a choice, is the
endpoint's fault (`LMResponseError` after one request, never a feedback turn to the model). Closing
the iterator early closes the HTTP response, so the connection is released and the server sees the
client go.

An injected client is used as is; from a sync call (which runs on its thread's own loop) its
requests, streams included, are sent on typedspy's background loop, the one loop every sync
call shares, so its pooled connections keep to one loop as they did (ADR-024).
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import math
import os
import re
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import openai
from openai import AsyncOpenAI, OpenAI

from typedspy import _deadline
from typedspy._json import (
    JSONLimitError,
    depth_exceeded,
    loads,
    number_too_long,
    too_deep,
)
from typedspy._runtime import (
    await_on_thread,
    background_loop,
    is_root,
    own_loop_running,
    relay_from_thread,
)
from typedspy._scope import current
from typedspy.errors import (
    ConfigurationError,
    LMConnectionError,
    LMContextLengthError,
    LMError,
    LMRateLimitError,
    LMResponseError,
    LMResponseLimitError,
    LMStatusError,
    LMTimeoutError,
    LMUnsupportedFeatureError,
)
from typedspy.lm._bound import RequestBound
from typedspy.lm._clients import LoopClients
from typedspy.lm._messages import EmbeddingResponse, LMResponse, usage_of, vectors_of
from typedspy.lm._openai_transport import ResponseBodyError, http_client
from typedspy.lm._scrub import endpoint_redactor, scrub_chain, shown_endpoint, split_userinfo
from typedspy.lm._stream import holds_first_choice
from typedspy.lm._wordings import context_overflow, unsupported_feature
from typedspy.profiles import Identification, identify_server
from typedspy.streaming import closing

__all__ = ["Sender"]

C = TypeVar("C", AsyncOpenAI, OpenAI)
T = TypeVar("T")

_NO_KEY = "no-key"


class Sender:
    """The clients of one `LM` and the sending of its requests through them."""

    def __init__(
        self, model: str, client: AsyncOpenAI | None, max_bytes: int, **options: Any
    ) -> None:
        self.model = model
        self.injected = client  # used as is, from whichever loop calls
        # ADR-024: a client of our own per event loop, closed when that loop shuts down.
        self.clients = LoopClients(lambda: self._built(openai.AsyncOpenAI))
        # The SDK client's options LM was given (base_url, api_key, max_retries, timeout).
        self._options = {name: value for name, value in options.items() if value is not None}
        self._max_bytes = max_bytes
        self._blocking: OpenAI | None = None
        self._lock = threading.Lock()
        _senders.add(self)

    # --- clients ---------------------------------------------------------------------------------

    def client(self) -> AsyncOpenAI:
        """The injected client, else the running loop's, else one built for inspection."""
        if self.injected is not None:
            return self.injected
        return self.clients.current() or self.clients.detached()

    async def aclient(self) -> AsyncOpenAI:
        if self.injected is not None:
            if self.injected.is_closed():
                raise self.closed_client()
            return self.injected
        return await self.clients.get()

    def blocking(self) -> OpenAI | None:
        """The blocking client for a sync call's root task no deadline bounds, else ``None``."""
        if self.injected is not None or not is_root() or _deadline.tightest() is not None:
            return None
        client = self._blocking
        if client is None or client.is_closed():
            with self._lock:
                client = self._blocking
                if client is None or client.is_closed():
                    client = self._blocking = self._built(openai.OpenAI)
                    _open.add(client)
        return client

    def relayed(self) -> bool:
        """True when an injected client must be used from the background loop (see module)."""
        return self.injected is not None and own_loop_running()

    async def aclose(self) -> None:
        """Close the running loop's client, the inspection one and the blocking one.

        From a sync call (its thread's own loop) the background loop's client is closed too:
        sync calls made inside a running loop used it.
        """
        await self.clients.aclose_current()
        if own_loop_running() and background_loop() is not None:
            await await_on_thread(self.clients.aclose_current)
        with self._lock:
            blocking, self._blocking = self._blocking, None
        if blocking is not None:
            blocking.close()

    def _built(self, kind: type[C]) -> C:
        """A client of ``kind`` from `LM`'s options, its bodies capped while read."""
        options = {**self._options}
        auth = None
        if url := options.get("base_url") or os.environ.get("OPENAI_BASE_URL"):
            # Its password goes as basic auth, not in the URL the HTTP library logs (ADR-102).
            options["base_url"], auth = split_userinfo(url)
        blocking = kind is openai.OpenAI
        options["http_client"] = http_client(self._max_bytes, blocking=blocking, auth=auth)
        if (
            "api_key" not in options
            and not os.environ.get("OPENAI_API_KEY")
            and (options.get("base_url") or os.environ.get("OPENAI_BASE_URL"))
        ):
            # A local server (llama.cpp, vLLM, Ollama) set by base_url alone needs no key, but
            # the SDK refuses to build a client without one: send a placeholder.
            options["api_key"] = _NO_KEY
        try:
            return kind(**options)
        except openai.OpenAIError as exc:
            scrub_chain(exc, self.redact)
            raise ConfigurationError(
                f"LM({self.model!r}) could not create its OpenAI client: "
                f"{self.redact(str(exc))} Pass api_key=... (any placeholder for a local server "
                "that needs none), set OPENAI_API_KEY, or pass client=AsyncOpenAI(...)."
            ) from exc

    # --- sending ---------------------------------------------------------------------------------

    async def create(self, kwargs: dict[str, Any]) -> Any:
        """Send one ``create`` (raw response), within the call's request bound; errors mapped."""
        return await self._home(lambda: self._send(kwargs))

    async def complete(self, kwargs: dict[str, Any], max_depth: int) -> LMResponse:
        """Send one completion and read its body (decoded within ``max_depth``; rate headers)."""
        raw = await self.create(kwargs)
        text = raw.text  # read within the size cap by the transport
        try:
            completion = loads(text, max_depth=max_depth)
        except JSONLimitError as exc:
            raise _limit_error(self.model, exc, "returned a body") from None
        except ValueError as exc:
            raise LMResponseError(
                f"{self.model}: the endpoint returned a body that is not JSON: "
                f"{self.redact(text[:200])!r}"
            ) from exc
        try:
            response = LMResponse.from_completion(completion, model=self.model)
        except LMResponseError as exc:
            raise LMResponseError(f"{self.model}: {self.redact(str(exc))}") from exc
        limits = rate_headers(raw.headers)
        return dataclasses.replace(response, headers=limits) if limits else response

    async def embed(self, name: str, texts: list[str]) -> EmbeddingResponse:
        """Send one embeddings request and read its reply (with its rate headers).

        Raises:
            LMResponseError: The reply has not one vector per text.
        """
        kwargs = {"model": name, "input": texts, "encoding_format": "float"}
        raw = await self._home(lambda: self._send(kwargs, embeddings=True))
        reply = raw.parse()
        vectors = vectors_of(name, reply.data)
        if len(vectors) != len(texts):
            raise LMResponseError(f"{name}: {len(vectors)} embeddings for {len(texts)} texts")
        usage = getattr(reply, "usage", None)
        counts = {k: getattr(usage, k, None) for k in ("prompt_tokens", "total_tokens")}
        return EmbeddingResponse(vectors, usage_of(counts), name, rate_headers(raw.headers))

    def _home(self, send: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """``send()``, on the background loop when the injected client is relayed (see module)."""
        return await_on_thread(send) if self.relayed() else send()

    async def _send(self, kwargs: dict[str, Any], *, embeddings: bool = False) -> Any:
        """One ``create`` of chat completions (or ``embeddings``) with the client that sends.

        A sync call's root task sends in place, a stream excepted (see module). A completion is
        counted under the call's request bound (`_within`, `_count`); SDK errors are translated.
        """
        bound = None if embeddings else current().request_bound
        blocking = None if kwargs.get("stream") else self.blocking()
        chosen: Any = blocking if blocking is not None else await self.aclient()
        client, retries = _within(bound, chosen)
        resource = client.embeddings if embeddings else client.chat.completions
        try:
            sent = resource.with_raw_response.create(**kwargs)
            raw = sent if blocking is not None else await sent
        except (openai.OpenAIError, RuntimeError) as exc:
            _count(bound, exc, retries)
            if (error := self.failure(exc)) is None:
                raise
            raise error from exc
        _count(bound, raw, retries)
        return raw

    def stream(self, kwargs: dict[str, Any], max_depth: int) -> AsyncIterator[Mapping[str, Any]]:
        """The decoded chunks of one streamed request (``kwargs`` already ask for a stream).

        Consumed on the background loop when the injected client is relayed (see module).
        """
        if self.relayed():
            return relay_from_thread(lambda: _chunks(self, kwargs, max_depth))
        return _chunks(self, kwargs, max_depth)

    async def models(self, timeout: float, max_depth: int) -> Identification:
        """Who answers, from one ``GET /models``: no SDK retry, never an error (ADR-084)."""
        return await self._home(lambda: self._models(timeout, max_depth))

    async def _models(self, timeout: float, max_depth: int) -> Identification:
        try:
            client = (await self.aclient()).with_options(max_retries=0, timeout=timeout)
            raw = await client.models.with_raw_response.list()
            status, headers, text = raw.http_response.status_code, raw.headers, raw.text
        except openai.APIStatusError as exc:
            return identify_server(exc.status_code, exc.response.headers, None)
        except Exception as exc:  # a timeout, a refused connection, a transport bug: unsure
            return identify_server(None, {}, None, failure=self.redact(f"{exc!r}")[:160])
        try:
            body = loads(text, max_depth=max_depth)
        except ValueError:
            body = None  # not JSON: the headers may still say who answered
        return identify_server(status, headers, body)

    # --- errors ----------------------------------------------------------------------------------

    def failure(self, exc: Exception) -> Exception | None:
        """The error for a failed send; ``None``: a `RuntimeError` to raise as it is (scrubbed).

        An injected client closed while it sent, or used from a second event loop, is explained
        with what to do (ADR-024); the SDK's errors are translated.
        """
        sent: BaseException = exc
        if isinstance(exc, openai.OpenAIError):
            sent = _sent_error(exc)  # openai < 2.31 wraps a wrong-loop RuntimeError too
        if isinstance(sent, RuntimeError):
            scrub_chain(sent, self.redact)
        injected, text = self.injected, str(sent)
        if injected is not None and injected.is_closed():  # closed while it sent
            return self.closed_client()
        if (
            isinstance(sent, RuntimeError)
            and injected is not None
            and ("different event loop" in text or "Event loop is closed" in text)
        ):
            return ConfigurationError(
                f"LM({self.model!r}) was given client=..., whose pooled connections belong to "
                "the event loop that first used it, and it is now used from another loop "
                f"({self.redact(text)[:120]}). Give LM base_url=/api_key= instead of client= so "
                "typedspy builds one client per event loop, or use this LM from one loop only "
                "(only sync calls, or only your own loop)."
            )
        return self.translate(exc) if isinstance(exc, openai.OpenAIError) else None

    def translate(self, exc: openai.OpenAIError) -> Exception:
        """The SDK's error as typedspy's, its chain scrubbed of credentials."""
        scrub_chain(exc, self.redact)  # kept as __cause__, without the secrets (ADR-028)
        where = f"{self.model} at {self.shown_base_url() or 'the default OpenAI endpoint'}"
        return _lm_error(exc, where=where, redact=self.redact)

    def closed_client(self) -> ConfigurationError:
        """The error for a call through an injected client its owner has closed."""
        return ConfigurationError(
            f"LM({self.model!r}) was given client=..., and that AsyncOpenAI client is closed "
            "(its close() was called): LM does not reopen a client it does not own. Pass an "
            "open client, or give LM base_url=/api_key= instead so typedspy builds its own "
            "(rebuilt after LM.close())."
        )

    def shown_base_url(self) -> str | None:
        options = self._options
        return shown_endpoint(options.get("api_key"), options.get("base_url"), self.injected)

    def redact(self, text: str) -> str:
        options = self._options
        return endpoint_redactor(options.get("api_key"), options.get("base_url"), self.injected)(
            text
        )


# --- streams -------------------------------------------------------------------------------------


async def _chunks(
    sender: Sender, kwargs: dict[str, Any], max_depth: int
) -> AsyncIterator[Mapping[str, Any]]:
    stream: Any = None
    try:
        raw = await sender.create(kwargs)
        try:
            stream = raw.parse(to=openai.AsyncStream[object])
        except openai.OpenAIError as exc:
            raise sender.translate(exc) from exc
        _check_streamed(sender, raw.headers.get("content-type", ""))
        chunks = _read_chunks(stream, sender, max_depth)
        async with closing(chunks):  # closed here, never left to the loop's finalizer hook
            async for data in chunks:
                yield data
    finally:
        if stream is not None:
            await stream.close()


# --- the request bound ---------------------------------------------------------------------------


def _within(bound: RequestBound | None, client: C) -> tuple[C, int]:
    """The client for the next request, its SDK retries cut to what ``bound`` has left."""
    if bound is None:
        return client, client.max_retries
    retries = bound.retries(client.max_retries)  # raises when no request is left
    if retries < client.max_retries:
        client = client.with_options(max_retries=retries)
    return client, retries


def _count(bound: RequestBound | None, outcome: object, retries: int) -> None:
    """Count the requests one ``create`` sent: exact on success, an upper bound on failure."""
    if bound is None:
        return
    if not isinstance(outcome, BaseException):
        bound.add(1 + int(getattr(outcome, "retries_taken", 0) or 0))
    elif isinstance(outcome, openai.APIConnectionError) or (
        # The statuses the SDK retries (408, 409, 429, 5xx); others end at the first request.
        isinstance(outcome, openai.APIStatusError)
        and (outcome.status_code in (408, 409, 429) or outcome.status_code >= 500)
    ):
        bound.add(1 + retries)
    else:
        bound.add(1)  # refused before or after sending (never retried), or a status not retried


# --- reading limits ------------------------------------------------------------------------------


def _chunk_too_deep(max_depth: int) -> JSONLimitError:
    limit = sys.getrecursionlimit()
    if max_depth < limit:  # the decoder gave up past the limit: the limit is what was passed
        return too_deep(max_depth)
    return JSONLimitError(
        f"a chunk nested deeper than the JSON decoder can read (about {limit} levels, "
        f"below max_json_depth {max_depth})",
        limit="max_json_depth",
        allowed=limit,
        offset=0,
        path=(),
    )


def _check_streamed(sender: Sender, content_type: str) -> None:
    """Refuse a streamed request answered with something else than SSE (``stream`` ignored)."""
    if "text/event-stream" not in content_type.lower():
        raise LMResponseError(
            f"{sender.model}: asked to stream, the endpoint answered with "
            f"{sender.redact(content_type[:80]) or 'no content type'!r} instead of "
            "'text/event-stream' (does it ignore stream=true?)"
        )


def _limit_error(model: str, exc: JSONLimitError, what: str) -> LMResponseLimitError:
    """The `LMResponseLimitError` for a body or chunk past a decoding limit."""
    return LMResponseLimitError(
        f"{model}: the endpoint {what} past a limit: {exc}", limit=exc.limit, allowed=exc.allowed
    )


async def _read_chunks(
    stream: AsyncIterator[object], sender: Sender, max_depth: int
) -> AsyncIterator[Mapping[str, Any]]:
    """The decoded chunks of ``stream``; raises when none of them held a choice.

    The SDK decodes each chunk; one nested past ``max_depth`` is refused here (a walk over its
    few containers, ADR-048), one past what the decoder can read when it raises.
    """
    model, chose, chunks = sender.model, False, 0
    while True:
        try:
            data = await stream.__anext__()
        except StopAsyncIteration:
            break
        except openai.OpenAIError as exc:
            raise sender.translate(exc) from exc
        except RecursionError:  # a chunk nested past what the SDK's json.loads can read
            raise _limit_error(model, _chunk_too_deep(max_depth), "streamed a chunk") from None
        except ValueError as exc:  # a data line that is not JSON
            if "digits" in str(exc) and not isinstance(exc, json.JSONDecodeError):
                raise _limit_error(model, number_too_long("", 0), "streamed a chunk") from None
            said = sender.redact(str(exc))[:200]
            raise LMResponseError(
                f"{model}: the endpoint streamed a chunk that is not JSON: {said}"
            ) from exc
        if isinstance(data, (dict, list)) and depth_exceeded(data, max_depth):
            raise _limit_error(model, too_deep(max_depth), "streamed a chunk")
        chunks += 1
        if isinstance(data, Mapping):
            chose = chose or holds_first_choice(data)
            yield data
    if not chunks:  # llama-cpp-python's answer to a prompt past its context window, streamed
        raise LMResponseError(
            f"{model}: the endpoint answered 200 and then sent no chunk at all: it failed after "
            "accepting the request (on llama-cpp-python, a prompt past the context window)"
        )
    if not chose:  # the endpoint's fault, not the model's: no feedback turn (issue 10)
        raise LMResponseError(
            f"{model}: the endpoint streamed no choice 0 (no chunk had a 'choices' entry with "
            "index 0): not a chat-completion stream for this request"
        )


# --- errors --------------------------------------------------------------------------------------


def _sent_error(exc: openai.OpenAIError) -> BaseException:
    """What the transport raised, where the SDK wrapped it in ``APIConnectionError``.

    openai < 2.31 wraps (and retries) every exception its HTTP client raises; later releases let
    an ``OpenAIError`` through and wrap only the HTTP library's own (ADR-044).
    """
    cause = exc.__cause__
    wrapped = type(exc) is openai.APIConnectionError
    return cause if wrapped and isinstance(cause, ResponseBodyError | RuntimeError) else exc


def _lm_error(exc: openai.OpenAIError, *, where: str, redact: Callable[[str], str]) -> LMError:
    """The `LMError` for an SDK exception; ``where`` names model and endpoint, ``redact`` scrubs."""
    sent = _sent_error(exc)
    exc = sent if isinstance(sent, ResponseBodyError) else exc
    if isinstance(exc, ResponseBodyError):
        if exc.limit is None:
            return LMResponseError(f"{where}: {redact(str(exc))}")
        return LMResponseLimitError(f"{where}: {exc}", limit=exc.limit, allowed=exc.allowed)
    if isinstance(exc, openai.APITimeoutError):
        return LMTimeoutError(f"{where}: the request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LMConnectionError(f"{where}: could not connect ({redact(exc.message)})")
    if not isinstance(exc, openai.APIError) or isinstance(exc, openai.APIResponseValidationError):
        return LMError(f"{where}: {redact(str(exc))}")
    # Text, as the error's fields are typed: llama-server sends its status as a number in
    # `code`, which the current SDK turns into "400" and openai 1.40 hands on as the int 400.
    code = None if exc.code is None else str(exc.code)
    headers: Mapping[str, str] = {}
    detail = exc.message
    if isinstance(exc, openai.APIStatusError):
        status, headers, what = exc.status_code, exc.response.headers, f"HTTP {exc.status_code}"
    else:  # an error event in a stream, after its 200 (ADR-096): llama-server's carries the
        # status its error would have had as a reply; any other counts as a server fault
        status = int(code) if code and re.fullmatch(r"[45]\d\d", code) else 500
        what = "an error event in the stream"
        detail = exc.body if isinstance(exc.body, str) else detail  # {"error": "its text"}
    if isinstance(exc.body, dict) and isinstance(exc.body.get("message"), str):
        detail = exc.body["message"]
    detail = redact(detail)[:500]
    fields: dict[str, Any] = {
        "status_code": status,
        "code": code,
        "param": None if exc.param is None else str(exc.param),
    }
    label = f" ({code})" if code else ""
    said = f"{what}{label}: {detail}"
    if status == 429:
        retry_after = _retry_after(headers)
        return LMRateLimitError(f"{where}: rate limited ({said})", retry_after=retry_after)
    overflow, window = context_overflow(status, detail, code=code, kind=exc.type)
    if overflow:
        return LMContextLengthError(
            f"{where}: the request does not fit the model's context window: {said}",
            context_window=window,
            **fields,
        )
    feature = unsupported_feature(status, detail, code=code, param=fields["param"])
    if feature is not None:
        return LMUnsupportedFeatureError(
            f"{where} does not support {feature}: {said}", feature=feature, **fields
        )
    return LMStatusError(f"{where}: {said}", **fields)


def rate_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers a rate limiter adapts to (reference/scale.md: the SDK honours Retry-After)."""
    return {
        k.lower(): v
        for k, v in headers.items()
        if k.lower().startswith("x-ratelimit-") or k.lower() in ("retry-after", "retry-after-ms")
    }


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Finite seconds from ``retry-after-ms`` or a numeric ``retry-after``; ``None`` otherwise."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: the SDK already waited for it between its retries
        if math.isfinite(seconds) and seconds >= 0:  # "1e400" is no number of seconds
            return seconds
    return None


_senders: weakref.WeakSet[Sender] = weakref.WeakSet()
_inherited: list[Any] = []  # the parent's blocking clients, kept (never used) in a forked child


def _forget_after_fork() -> None:
    """In a forked child, drop every `Sender`'s blocking client; the child builds its own.

    Its pooled connections are the parent's sockets, and two processes writing to one
    connection cross their requests and replies (a fork pool after a call in the parent). The
    parent's clients are kept, never closed from here (not even at exit).
    """
    for sender in list(_senders):
        if sender._blocking is not None:
            _inherited.append(sender._blocking)
            _open.discard(sender._blocking)
        sender._blocking = None
        sender._lock = threading.Lock()  # another thread of the parent may have held it


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


_open: weakref.WeakSet[Any] = weakref.WeakSet()  # blocking clients, closed at exit if still open


@atexit.register
def _close_open() -> None:
    for client in list(_open):  # an open client's sockets would warn when freed
        client.close()
