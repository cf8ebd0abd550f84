"""`LM`: a `BaseLM` over the official ``openai.AsyncOpenAI`` client, imported on first use.

Transport failures (429, 5xx, timeouts, dropped connections) are retried by the SDK's own
``max_retries``, which honours Retry-After; typedspy adds no second transport retry. What is
left after those retries is mapped onto the `LMError` tree, with the SDK exception as
``__cause__`` and API keys removed from every message.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from typing_extensions import Unpack

from typedspy._json import MAX_JSON_DEPTH
from typedspy._runtime import run_sync
from typedspy._types import Usage
from typedspy.errors import ConfigurationError, check_instance, check_int, check_number
from typedspy.lm._base import DEFAULT_MAX_RESPONSE_BYTES, BaseLM
from typedspy.lm._identify import (
    DETECT_TIMEOUT,
    PROBE_TIMEOUT,
    Identified,
    identified,
    known,
    probe,
    remember,
)
from typedspy.lm._messages import EmbeddingResponse, LMRequest, LMResponse
from typedspy.lm._params import LMDefaults, call_options, check_params, create_kwargs, wire_body
from typedspy.lm._scrub import CREDENTIAL_HEADERS, endpoint_redactor, shown_endpoint
from typedspy.lm._stream import LMChunk
from typedspy.lm._wordings import redact_patterns
from typedspy.profiles import ProbeReport, Profile, builtin, detect_profile, model_for_endpoint
from typedspy.streaming import closing

if TYPE_CHECKING:  # the SDK is imported on first use (ADR-034): `import typedspy` stays light
    from openai import AsyncOpenAI

    from typedspy.lm._openai_send import Sender

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "LM"]


class LM(BaseLM):
    """A language model behind any OpenAI-compatible chat-completions endpoint.

    Wraps ``openai.AsyncOpenAI``: pass one in (``client=``), or let `LM` build it on first use
    from ``base_url`` / ``api_key`` (the SDK falls back to ``OPENAI_BASE_URL`` /
    ``OPENAI_API_KEY``). Keyword arguments beyond those are request defaults, sent with every
    request and overridden per request by `LMRequest.params`. Their names are checked against
    the Chat Completions API (``temprature=0`` is refused, naming ``temperature``); an
    endpoint's own parameters go through ``extra_body`` (``extra_body={"top_k": 40}`` for
    vLLM), sent as is.

    A pickled `LM` keeps its model, ``base_url``, defaults, ``max_retries``, ``timeout`` and
    profile (with its run-time memory), never the API key nor the client: once unpickled it
    builds a client on first use, the SDK reading ``OPENAI_API_KEY`` again (or build a new
    `LM` with ``api_key=``).
    An injected client is replaced by one built from its ``base_url``, ``max_retries`` and
    (numeric) ``timeout``; its headers and HTTP client are not kept. ``copy.copy`` and
    ``copy.deepcopy`` return the LM itself: copied modules share it.

    Example:
        ```python
        lm = LM("gpt-4o-mini", temperature=0)
        lm("Say hi")                                   # -> "Hi!"
        local = LM("llama3.1", base_url="http://localhost:11434/v1", api_key="unused",
                   profile="ollama")
        ```

    Args:
        model: The model name sent with every request.
        client: An ``AsyncOpenAI`` to use as is (its own retries, timeout and key apply).
        base_url: The endpoint, e.g. ``"http://localhost:8000/v1"`` (not with ``client``).
        api_key: The API key (not with ``client``).
        max_retries: Transport retries by the SDK; 2 when `LM` builds the client (not with
            ``client``, whose own setting applies).
        timeout: Seconds for each phase of each HTTP attempt when `LM` builds the client
            (not with ``client``): to connect, to get a pooled connection, to send, and for
            *each read of the socket*. It does not bound a request as a whole: a server that
            sends a byte now and then is never cut by it. A timed-out attempt is retried by
            the SDK (``max_retries``), then raises `LMTimeoutError`. ``None`` keeps the SDK's
            default (600 s per read, 5 s to connect). Bound a whole call with the ``deadline``
            setting; a streamed request is bounded by ``stream_deadline`` (600 s by default).
        max_response_bytes: Decoded bytes one response body may have (64 MiB by default),
            checked while it is read and inflated; past it the read stops with
            `LMResponseLimitError` (not with ``client``: an injected client reads unbounded).
        max_json_depth: Nesting of objects and arrays a response body or stream chunk may
            have (256 by default); deeper ones raise `LMResponseLimitError`. The model's
            output (parsed by `Predict`, streamed or not, and ReAct's tool arguments) is read
            within the same limit: deeper output is a decode failure naming it.
        profile: The endpoint's `Profile` (a copy is kept) or a built-in name: ``"openai"``,
            ``"azure"``, ``"vllm"``, ``"llama.cpp"``, ``"llama-cpp-python"``, ``"ollama"``,
            ``"lmstudio"``, ``"generic"``. Defaults to the provider the base URL names
            (OpenAI, Azure); any other base URL's server is asked which it is on the first
            call (`aidentify`, ADR-084), ``"generic"`` when unsure. With an injected
            ``client=`` nothing is sent unasked: ``"openai"`` unless its URL names Azure.
        **defaults: Request parameters sent with every request (``temperature``,
            ``max_tokens``, ``seed``, ..., and ``extra_body`` for any other).

    Raises:
        ConfigurationError: A ``client`` that is not an ``AsyncOpenAI``, or given together
            with client options; a numeric option of another type or range (``max_retries``
            an int >= 0, ``max_response_bytes`` and ``max_json_depth`` ints >= 1, ``timeout``
            seconds > 0); an unknown profile, an unknown request parameter (the message
            names the closest known one), or a default that `LM` sets itself (``model``,
            ``messages``, ``stream``, ``response_format``, ``tools``...).

    Attributes:
        defaults: The request defaults.
    """

    def __init__(
        self,
        model: str,
        *,
        client: AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int | None = None,
        timeout: float | None = None,
        max_response_bytes: int | None = None,
        max_json_depth: int | None = None,
        profile: str | Profile | None = None,
        **defaults: Unpack[LMDefaults],
    ) -> None:
        _check_client(model, client)
        options = {"base_url": base_url, "api_key": api_key, "max_retries": max_retries}
        client_options = {**options, "timeout": timeout, "max_response_bytes": max_response_bytes}
        given = [name for name, value in client_options.items() if value is not None]
        if client is not None and given:
            raise ConfigurationError(
                f"LM({model!r}): {', '.join(given)} cannot be combined with client=; "
                "configure the AsyncOpenAI client instead"
            )
        check_instance("LM", "model", model, str, "a model name (a str)", optional=False)
        check_int("LM", "max_retries", max_retries, minimum=0)
        check_int("LM", "max_response_bytes", max_response_bytes)
        check_int("LM", "max_json_depth", max_json_depth)
        # An httpx.Timeout (per phase) is taken as the SDK takes it.
        httpx = sys.modules.get("httpx")
        if httpx is None or not isinstance(timeout, httpx.Timeout):
            check_number("LM", "timeout", timeout, unit="seconds")
        url = (base_url if client is None else str(client.base_url)) or os.environ.get(
            "OPENAI_BASE_URL"
        )
        if url and client is None:
            _check_url(model, url, given=bool(base_url))
        asking = None
        if profile is None:  # ADR-084: the URL's provider, else what its server says
            profile = detect_profile(url)
            if profile is None and client is not None:
                profile = "openai"  # an injected client is its owner's: nothing sent unasked
            elif profile is None and url is not None:
                asking = url.rstrip("/")
                found = known(asking)
                profile = found.profile.derive() if found is not None else "generic"
                asking = None if found is not None else asking
        model = model_for_endpoint(model, url)
        super().__init__(model, profile=profile)
        self._asking = asking
        self._url = url
        check_params(defaults, where="LM defaults")
        self.defaults: Mapping[str, Any] = dict(defaults)
        self._client = client  # injected: used as is, from whichever loop calls
        self._sending: Sender | None = None  # built on first use: it imports the SDK
        self._base_url = base_url
        self._api_key = api_key
        self._max_retries = 2 if max_retries is None else max_retries
        self._timeout = timeout
        self._max_bytes = (
            DEFAULT_MAX_RESPONSE_BYTES if max_response_bytes is None else max_response_bytes
        )
        self._max_depth = MAX_JSON_DEPTH if max_json_depth is None else max_json_depth
        self._lock = threading.Lock()
        self._usage = Usage()
        self._calls = 0

    async def aidentify(self) -> Profile:
        """The profile after asking the server which it is, where that is still to do.

        Without ``profile=``, on a base URL that names no provider, the first call asks the
        server once (``GET {base_url}/models``, no retry, a few seconds at most) and takes the
        profile its answer names, ``generic`` when unsure; the answer is kept for the base URL
        by the whole process, and calls made meanwhile wait for it (ADR-084). It never raises
        for the server's sake. `Module.render` asks too: it shows what the call would send.
        """
        url = self._asking
        if url is None:
            return self.profile
        answer = await identified(url, self._ask_server, self.redact(url))
        with self._lock:
            if self._asking == url:  # neither set by the user nor by another call meanwhile
                self._profile, self._asking = answer.profile.derive(), None
        return self.profile

    async def _ask_server(self) -> Identified:
        timeout = self._timeout if isinstance(self._timeout, (int, float)) else DETECT_TIMEOUT
        found = await self._sender.models(min(timeout, DETECT_TIMEOUT), self._max_depth)
        return Identified(builtin(found.profile), found.reason)

    async def aprobe(
        self, *, timeout: float = PROBE_TIMEOUT, save: str | Path | None = None
    ) -> ProbeReport:
        """Prove what the endpoint enforces: a few canary requests, one per capability.

        Seven requests at most (no transport retry), each with a small ``max_tokens`` and
        ``timeout`` seconds (ADR-085). The report's verdicts refine this LM's profile, and the
        profile of every LM on the same base URL built later in this process without
        ``profile=``. A server that answers 200 and ignores the schema is reported as
        ``ignored``.

        Args:
            timeout: Seconds each request may take.
            save: A JSON file to write the report to (`ProbeReport.load` reads it back).

        Returns:
            The verdicts, per capability (``print(report)`` shows a table).

        Raises:
            ConfigurationError: ``timeout`` is not a positive number; no client could be built.
        """
        check_number("LM.aprobe", "timeout", timeout, unit="seconds")
        profile = await self.aidentify()
        report = await probe(self, profile, self._shown_base_url(), timeout)
        refined = report.refine(profile)
        with self._lock:
            self._profile, self._asking = refined, None
        if self._url is not None:
            found = Identified(refined, f"probed: {report.requests} requests")
            remember(self._url.rstrip("/"), found)
        if save is not None:
            report.save(save)
        return report

    def probe(
        self, *, timeout: float = PROBE_TIMEOUT, save: str | Path | None = None
    ) -> ProbeReport:
        """Synchronous `aprobe`."""
        return run_sync(lambda: self.aprobe(timeout=timeout, save=save), async_name="LM.aprobe")

    @property
    def usage(self) -> Usage:
        """Tokens used by every completion this LM received, summed."""
        return self._usage

    @property
    def calls(self) -> int:
        """How many completions this LM received."""
        return self._calls

    @property
    def client(self) -> AsyncOpenAI:
        """The ``AsyncOpenAI`` client: the injected one, else the current event loop's.

        `LM` builds one client per event loop it is used from (connections belong to the loop
        that opened them); outside any loop this is a client built for inspection. A sync call's
        own request, when no deadline bounds it and it is no stream, is sent with a blocking
        ``openai.OpenAI`` client `LM` builds besides (ADR-049, ADR-064).

        Raises:
            ConfigurationError: The SDK could not build a client (typically: no API key).
        """
        return self._sender.client()

    @property
    def _sender(self) -> Sender:
        sending = self._sending
        if sending is None:
            from typedspy.lm._openai_send import Sender

            sending = self._sending = Sender(
                self.model,
                self._client,
                self._max_bytes,
                base_url=self._base_url,
                api_key=self._api_key,
                max_retries=self._max_retries,
                timeout=self._timeout,
            )
        return sending

    async def acomplete(self, request: LMRequest) -> LMResponse:
        """Send one chat-completion request and return the response.

        Args:
            request: What to send; ``params`` are merged over this LM's defaults.

        Returns:
            The response, read leniently from the raw JSON body.

        Raises:
            ConfigurationError: No client could be built, or ``params`` hold a reserved or
                unknown key.
            LMTimeoutError: The request timed out (after the SDK's retries).
            LMConnectionError: The endpoint could not be reached (after the SDK's retries).
            LMRateLimitError: The endpoint kept answering 429.
            LMUnsupportedFeatureError: The endpoint rejected a feature (``feature`` says which).
            LMStatusError: Any other HTTP error status.
            LMResponseError: The body is not a usable chat completion.
        """
        return await LM.asend(self, request, self.request_body(request))  # not a subclass's

    async def asend(self, request: LMRequest, body: dict[str, Any]) -> LMResponse:
        """Send ``body``, the `request_body` of ``request``, as it is (see `acomplete`)."""
        kwargs = create_kwargs(body, call_options(self.defaults, request))
        response = await self._sender.complete(kwargs, self._max_depth)
        with self._lock:
            self._usage += response.usage
            self._calls += 1
        return response

    @property
    def endpoint(self) -> str | None:
        """The base URL requests go to, as the client resolved it (credentials removed).

        Raises:
            ConfigurationError: No client could be built.
        """
        return self.redact(str(self.client.base_url)).rstrip("/")

    def request_body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body `acomplete` sends for ``request`` (``extra_body`` merged in).

        Raises:
            ConfigurationError: ``params`` hold a reserved or unknown key.
        """
        return wire_body(self.model, self.defaults, request)

    def request_options(self, request: LMRequest | None = None) -> dict[str, Any]:
        """What is sent beside the body that can change the reply: query string and headers.

        ``query``: an injected client's default query (Azure's ``api-version``) updated with
        ``extra_query``; ``headers``: ``extra_headers``, names lower-cased, credential headers
        (``Authorization``, ``api-key``, ``Cookie``...) left out. Only the parts present;
        ``request=None`` gives an embeddings request's (the client's query). An injected
        client's default headers are not included.

        Raises:
            ConfigurationError: ``params`` hold a reserved or unknown key.
        """
        client = self._client
        query: dict[str, Any] = dict(client.default_query) if client is not None else {}
        headers: dict[str, Any] = {}
        if request is not None:
            check_params(request.params, where="LMRequest.params")
            sent = call_options(self.defaults, request)
            query.update(sent.get("extra_query") or {})
            for name, value in (sent.get("extra_headers") or {}).items():
                if str(name).lower() not in CREDENTIAL_HEADERS:
                    headers[str(name).lower()] = value
        options: dict[str, Any] = {}
        if query:
            options["query"] = query
        if headers:
            options["headers"] = headers
        return options

    async def aembed_response(
        self, texts: Sequence[str], *, model: str | None = None
    ) -> EmbeddingResponse:
        """Embed ``texts`` through the endpoint's ``/v1/embeddings``, in one request.

        Args:
            texts: The texts, sent in one request.
            model: The embedding model (default: this LM's model name).

        Returns:
            One vector per text, the usage reported and the rate-limit headers.

        Raises:
            LMError: As for `acomplete`, or a reply without one vector per text.
        """
        return await self._sender.embed(model or self.model, list(texts))

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        """Stream one completion (``stream=True`` with ``include_usage``), chunk by chunk.

        The last chunk carries the usage (``stream_options.include_usage``). Closing the
        iterator early (``aclose``, or cancelling its consumer) closes the HTTP response, so the
        connection is released and the server sees the client go.

        Raises:
            The same errors as `acomplete`, when the request is sent or while it streams;
            `LMResponseError` for a chunk that is not JSON.
        """
        body = self.request_body(request)
        async with closing(LM.asend_stream(self, request, body)) as chunks:  # not a subclass's
            async for piece in chunks:
                yield piece

    async def asend_stream(
        self, request: LMRequest, body: dict[str, Any]
    ) -> AsyncIterator[LMChunk]:
        """Stream ``body``, the `request_body` of ``request``, as it is (see `astream`)."""
        kwargs = create_kwargs(body, call_options(self.defaults, request), stream=True)
        usage: Usage | None = None
        async with closing(self._sender.stream(kwargs, self._max_depth)) as chunks:
            async for data in chunks:
                piece = LMChunk.from_dict(data)
                usage = piece.usage or usage
                yield piece
        with self._lock:
            self._usage += usage or Usage()
            self._calls += 1

    async def aclose(self) -> None:
        """Close the client `LM` built for this event loop (an injected one is its owner's).

        Clients built for other loops close when those loops shut down; a later call builds a
        fresh client.
        """
        if self._client is None and self._sending is not None:
            await self._sending.aclose()

    def close(self) -> None:
        """Synchronous `aclose`."""
        run_sync(self.aclose, async_name="LM.aclose")

    def __repr__(self) -> str:
        return (
            f"LM(model={self.model!r}, base_url={self._shown_base_url()!r}, "
            f"profile={self.profile.name!r})"
        )

    # A pickle holds the configuration, never the API key nor the client (docs/modules.md).
    def __getstate__(self) -> dict[str, Any]:
        injected = self._client
        timeout = injected.timeout if injected is not None else self._timeout
        return {
            "model": self.model,
            "base_url": str(injected.base_url) if injected is not None else self._base_url,
            "max_retries": injected.max_retries if injected is not None else self._max_retries,
            "timeout": timeout if isinstance(timeout, (int, float)) else None,
            "max_response_bytes": None if injected is not None else self._max_bytes,
            "max_json_depth": self._max_depth,
            "defaults": dict(self.defaults),
            "profile": self.profile,
            "asking": self._asking,  # still to ask which server it is: asked after unpickling
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        LM.__init__(
            self,
            state["model"],
            base_url=state["base_url"],
            max_retries=state["max_retries"],
            timeout=state["timeout"],
            max_response_bytes=state.get("max_response_bytes"),
            max_json_depth=state.get("max_json_depth"),
            **state["defaults"],
        )
        self._profile, self._asking = state["profile"], state.get("asking")

    def __copy__(self) -> LM:
        return self  # a handle on an endpoint: copies of modules share it (key and client too)

    def __deepcopy__(self, memo: dict[int, Any]) -> LM:
        return self

    def _shown_base_url(self) -> str | None:
        return shown_endpoint(self._api_key, self._base_url, self._client)

    def redact(self, text: str) -> str:
        """``text`` with this LM's key and base-URL password (and credential shapes) replaced."""
        return endpoint_redactor(self._api_key, self._base_url, self._client)(text)


def _check_client(model: str, client: object) -> None:
    """Refuse a ``client`` that is not an ``AsyncOpenAI`` (checked without importing the SDK)."""
    if client is None:
        return
    openai = sys.modules.get("openai")  # whoever built an AsyncOpenAI imported it
    if openai is None or not isinstance(client, openai.AsyncOpenAI):
        hint = (
            " (a blocking OpenAI client: pass an AsyncOpenAI, typedspy runs sync calls itself)"
            if openai is not None and isinstance(client, openai.OpenAI)
            else ""
        )
        raise ConfigurationError(
            f"LM({model!r}): client= takes an openai.AsyncOpenAI (or a subclass such as "
            f"AsyncAzureOpenAI), got {type(client).__qualname__}{hint}"
        )


def _check_url(model: str, url: str, given: bool) -> None:
    """Refuse a base URL the SDK could not send to, here rather than at the first request."""
    where = "base_url" if given else "OPENAI_BASE_URL"
    shown = redact_patterns(url)  # never echo a user:password@ part
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (reading it checks it)
    except ValueError as exc:
        raise ConfigurationError(f"LM({model!r}): {where} {shown!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"LM({model!r}): {where} {shown!r} is not an http:// or https:// URL with a host "
            "(for example http://localhost:8080/v1)"
        )
