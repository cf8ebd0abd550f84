"""Sending `LM`'s requests: the SDK clients, which one sends, and its errors translated.

An ``AsyncOpenAI`` client is built per event loop (ADR-024). A synchronous call's root task
(`typedspy._runtime.is_root`, ADR-049) sends with one blocking ``openai.OpenAI`` client instead,
shared by every thread: nothing else runs on that loop meanwhile, and the blocking client costs
less per request than the async one. Both sit on the same capped transport (ADR-028) and pass
through the same retry accounting (`within`, `count`) and error translation. The blocking
client waits no longer than the call's deadline: its timeouts are cut to the time left.

An injected client is used as is; from a sync call (which runs on its thread's own loop) its
requests are sent on typedspy's background loop, the one loop every sync call shares, so its
pooled connections keep to one loop as they did (ADR-024).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import openai

from typedspy import _deadline
from typedspy._json import JSONLimitError, loads
from typedspy._runtime import (
    await_on_thread,
    background_started,
    is_root,
    own_loop_running,
    relay_from_thread,
)
from typedspy.errors import ConfigurationError, LMResponseError
from typedspy.lm._bound import active as active_requests
from typedspy.lm._clients import LoopClients
from typedspy.lm._messages import LMResponse
from typedspy.lm._openai_bounds import count, limit_error, within
from typedspy.lm._openai_errors import rate_headers, sent_error, translate
from typedspy.lm._openai_transport import DeadlineReached, http_client, sync_http_client
from typedspy.lm._scrub import endpoint_redactor, scrub_chain

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = ["Sender"]

_NO_KEY = "no-key"


class Sender:
    """The clients of one `LM` and the sending of its requests through them."""

    def __init__(
        self,
        model: str,
        client: AsyncOpenAI | None,
        *,
        base_url: str | None,
        api_key: str | None,
        max_retries: int,
        timeout: float | None,
        max_bytes: int,
    ) -> None:
        self.model = model
        self.injected = client  # used as is, from whichever loop calls
        # ADR-024: a client of our own per event loop, closed when that loop shuts down.
        self.clients: LoopClients[AsyncOpenAI] = LoopClients(self._build)
        self._base_url = base_url
        self._api_key = api_key
        self._max_retries = max_retries
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._blocking: OpenAI | None = None
        self._lock = threading.Lock()

    # --- clients ---------------------------------------------------------------------------------

    def client(self) -> AsyncOpenAI:
        """The injected client, else the running loop's, else one built for inspection."""
        if self.injected is not None:
            return self.injected
        return self.clients.current() or self.clients.detached()

    async def aclient(self) -> AsyncOpenAI:
        if self.injected is not None:
            return self.injected
        return await self.clients.get()

    def blocking(self) -> OpenAI | None:
        """The blocking client when the running task is a sync call's root (else ``None``)."""
        if self.injected is not None or not is_root():
            return None
        client = self._blocking
        if client is None or client.is_closed():
            with self._lock:
                client = self._blocking
                if client is None or client.is_closed():
                    client = self._blocking = self._build_blocking()
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
        if own_loop_running() and background_started():
            await await_on_thread(self.clients.aclose_current)
        with self._lock:
            blocking, self._blocking = self._blocking, None
        if blocking is not None:
            blocking.close()

    def _options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"max_retries": self._max_retries}
        if self._base_url is not None:
            options["base_url"] = self._base_url
        if self._api_key is not None:
            options["api_key"] = self._api_key
        elif not os.environ.get("OPENAI_API_KEY") and (
            self._base_url or os.environ.get("OPENAI_BASE_URL")
        ):
            # A local server (llama.cpp, vLLM, Ollama) set by base_url alone needs no key, but
            # the SDK refuses to build a client without one: send a placeholder.
            options["api_key"] = _NO_KEY
        if self._timeout is not None:
            options["timeout"] = self._timeout
        return options

    def _build(self) -> AsyncOpenAI:
        options = self._options()
        options["http_client"] = http_client(self._max_bytes)  # bodies capped while read
        client: AsyncOpenAI = self._built(lambda: openai.AsyncOpenAI(**options))
        return client

    def _build_blocking(self) -> OpenAI:
        options = self._options()
        options["http_client"] = sync_http_client(self._max_bytes, _deadline.expiry)
        client: OpenAI = self._built(lambda: _Blocking(**options))
        _close_at_exit(client)
        return client

    def _built(self, build: Callable[[], Any]) -> Any:
        try:
            return build()
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
        if self.relayed():
            return await await_on_thread(lambda: self._create(kwargs))
        return await self._create(kwargs)

    async def complete(self, kwargs: dict[str, Any], max_depth: int) -> LMResponse:
        """Send one completion and read its body (decoded within ``max_depth``; rate headers)."""
        raw = await self.create(kwargs)
        text = raw.text  # read within the size cap by the transport
        try:
            completion = loads(text, max_depth=max_depth)
        except JSONLimitError as exc:
            raise limit_error(self.model, exc, "returned a body") from None
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

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        bound = active_requests()
        blocking = self.blocking()  # a sync call's root task sends in place (see the module)
        chosen: Any = blocking if blocking is not None else await self.aclient()
        client, retries = within(bound, chosen)
        try:
            sent = client.chat.completions.with_raw_response.create(**kwargs)
            raw = sent if blocking is not None else await sent
        except openai.OpenAIError as exc:
            count(bound, exc, retries)
            raise self.failure(exc) from exc
        except RuntimeError as exc:
            count(bound, exc, retries)
            if (explained := self.other_loop(exc)) is None:
                raise
            raise explained from exc
        count(bound, raw, retries)
        return raw

    def relay(self, stream: Callable[[], AsyncIterator[Any]]) -> AsyncIterator[Any] | None:
        """``stream()`` consumed on the background loop when the injected client is relayed."""
        return relay_from_thread(stream) if self.relayed() else None

    async def embed(self, name: str, texts: list[str]) -> tuple[Any, Any]:
        """Send one embeddings request: the raw response and its parsed body; errors mapped."""
        if self.relayed():
            return await await_on_thread(lambda: self._embed(name, texts))
        return await self._embed(name, texts)

    async def _embed(self, name: str, texts: list[str]) -> tuple[Any, Any]:
        blocking = self.blocking()
        client: Any = blocking if blocking is not None else await self.aclient()
        try:
            sent = client.embeddings.with_raw_response.create(
                model=name, input=texts, encoding_format="float"
            )
            raw = sent if blocking is not None else await sent
            return raw, raw.parse()
        except openai.OpenAIError as exc:
            raise self.failure(exc) from exc
        except RuntimeError as exc:
            if (explained := self.other_loop(exc)) is None:
                raise
            raise explained from exc

    # --- errors ----------------------------------------------------------------------------------

    def failure(self, exc: openai.OpenAIError) -> Exception:
        """The error for a failed send: a second loop explained, else the SDK's translated."""
        sent = sent_error(exc)  # openai < 2.31 wraps a wrong-loop RuntimeError too
        if isinstance(sent, RuntimeError) and (explained := self.other_loop(sent)) is not None:
            return explained
        return self.translate(exc)

    def translate(self, exc: openai.OpenAIError) -> Exception:
        """The SDK's error as typedspy's (the deadline's own error when a blocking wait hit it)."""
        reached = isinstance(sent_error(exc), DeadlineReached)  # openai < 2.31 wraps it
        if reached and (bound := _deadline.tightest()) is not None:
            return bound.error()
        scrub_chain(exc, self.redact)  # kept as __cause__, without the secrets (ADR-028)
        where = f"{self.model} at {self.shown_base_url() or 'the default OpenAI endpoint'}"
        return translate(exc, where=where, redact=self.redact)

    def other_loop(self, exc: RuntimeError) -> ConfigurationError | None:
        """An injected client used from a second event loop: say what to do (ADR-024).

        ``None`` when ``exc`` is some other `RuntimeError` (scrubbed, to be raised as it is).
        """
        scrub_chain(exc, self.redact)
        text = str(exc)
        if self.injected is None or not (
            "different event loop" in text or "Event loop is closed" in text
        ):
            return None
        return ConfigurationError(
            f"LM({self.model!r}) was given client=..., whose pooled connections belong to the "
            "event loop that first used it, and it is now used from another loop "
            f"({self.redact(text)[:120]}). Give LM base_url=/api_key= instead of client= so "
            "typedspy builds one client per event loop, or use this LM from one loop only "
            "(only sync calls, or only your own loop)."
        )

    def shown_base_url(self) -> str | None:
        built = self.injected or self.clients.current()
        if built is not None:
            url: str | None = str(built.base_url)
        else:
            url = self._base_url or os.environ.get("OPENAI_BASE_URL")
        return None if url is None else self.redact(url)

    def redact(self, text: str) -> str:
        built = self.injected or self.clients.current()
        return endpoint_redactor(self._api_key, self._base_url, built)(text)


class _Blocking(openai.OpenAI):
    """The blocking client, whose waits between retries end at the deadline.

    The SDK sleeps between retries (its backoff, or a ``Retry-After`` up to a minute) where no
    timer can cut the sleep: the wait is cut to the time left, and the next attempt is then
    refused at once by the transport (`DeadlineReached`).
    """

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        wait: float = super()._calculate_retry_timeout(*args, **kwargs)
        expiry = _deadline.expiry()
        return wait if expiry is None else max(0.0, min(wait, expiry - time.monotonic()))


_open: weakref.WeakSet[Any] = weakref.WeakSet()
_exit_lock = threading.Lock()
_exit_registered = False


def _close_at_exit(client: OpenAI) -> None:
    """Close ``client`` at interpreter exit if still open (its sockets would warn when freed)."""
    global _exit_registered
    with _exit_lock:
        _open.add(client)
        if not _exit_registered:
            _exit_registered = True
            atexit.register(_close_open)


def _close_open() -> None:
    for client in list(_open):
        client.close()
