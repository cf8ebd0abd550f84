"""`BaseLM`: anything `Predict` can call, with the prompt-in, text-out calls it gets free.

The request and response types live in `typedspy.lm._messages`. Nothing here imports `openai`.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from typedspy._json import MAX_JSON_DEPTH
from typedspy._runtime import run_sync
from typedspy.errors import ConfigurationError, RefusalError
from typedspy.lm._messages import ChatMessage, EmbeddingResponse, LMRequest, LMResponse
from typedspy.lm._params import RequestParams, check_params
from typedspy.lm._wordings import redact_patterns
from typedspy.profiles import Profile, resolve_profile

if TYPE_CHECKING:
    from typedspy.lm._fallback import FallbackLM, Trigger
    from typedspy.lm._stream import LMChunk

__all__ = ["DEFAULT_MAX_RESPONSE_BYTES", "BaseLM", "route_calls"]

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""Decoded bytes one response body may have (64 MiB): far past any completion's text."""

_Send = Callable[["BaseLM", LMRequest], Awaitable[LMResponse]]
_road: _Send | None = None


def route_calls(send: _Send) -> None:
    """Send `BaseLM.acall`'s requests with ``send``: the request pipeline, which sits above.

    `typedspy.pipeline` sets it when imported, as importing ``typedspy`` does.
    """
    global _road
    _road = send


class BaseLM(abc.ABC):
    """Anything `Predict` can call: one async chat-completion method.

    Subclasses implement `acomplete`; `__call__` and `acall` (prompt in, text out) come free.

    Args:
        model: The model name.
        profile: The endpoint's `Profile`, or a built-in profile's name; ``"openai"`` when
            not given.

    Attributes:
        model: The model name.
        defaults: Request parameters this LM sends with every request, under each request's
            own ``params`` (`LM`'s keyword defaults; none here). A cap among them keeps the
            profile's ``max_tokens`` cap off structured calls.
    """

    model: str
    defaults: Mapping[str, Any] = MappingProxyType({})
    _profile: Profile | None = None
    _max_depth: int = MAX_JSON_DEPTH  # `LM(max_json_depth=...)`
    _max_bytes: int = DEFAULT_MAX_RESPONSE_BYTES  # `LM(max_response_bytes=...)`
    _asking: str | None = None  # the base URL whose server `aidentify` is still to ask (LM)

    def __init__(self, model: str, *, profile: str | Profile | None = None) -> None:
        self.model = model
        self._profile = resolve_profile(profile, None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # The pipeline sends the body it built through `asend` (ADR-061). A subclass that
        # overrides `acomplete` (or `astream`) below the class whose `asend` (`asend_stream`)
        # sends the body itself, such as `LM`'s, would be bypassed: its requests go through
        # its own method again (which may call the parent's, building the body once more).
        for method, sender in (("acomplete", "asend"), ("astream", "asend_stream")):
            if _defined_below(cls, method, sender):
                setattr(cls, sender, vars(BaseLM)[sender])

    @property
    def profile(self) -> Profile:
        """What this endpoint accepts and how it fails, with what it was seen to reject."""
        if self._profile is None:  # a subclass that did not call BaseLM.__init__
            self._profile = resolve_profile(None, None)
        return self._profile

    @profile.setter
    def profile(self, profile: str | Profile) -> None:
        self._profile = resolve_profile(profile, None)
        self._asking = None  # chosen: the server is not asked

    async def aidentify(self) -> Profile:
        """The profile after identifying the endpoint's server, where that is still to do.

        `LM` without ``profile=`` on a base URL that names no provider asks the server once per
        base URL and process (ADR-084); calls do this before they read the profile. Here, and
        once identified, it is `profile`.
        """
        return self.profile

    def identify(self) -> Profile:
        """Synchronous `aidentify`."""
        return run_sync(self.aidentify, async_name=f"{type(self).__name__}.aidentify")

    @property
    def max_json_depth(self) -> int:
        """Deepest nesting of objects and arrays read from this endpoint's output (256 by default).

        Model output is parsed within it (`Predict`, streaming, ReAct's tool arguments); `LM`
        reads its response bodies and stream chunks within it too.
        """
        return self._max_depth

    @property
    def max_response_bytes(self) -> int:
        """Most decoded bytes one reply from this endpoint may have (64 MiB by default).

        A line of a Batch API output file is held to it too (`read_batch_file`).
        """
        return self._max_bytes

    def redact(self, text: str) -> str:
        """``text`` with this endpoint's credentials, and anything shaped like one, replaced.

        Each is replaced by ``[redacted]`` (ADR-028): for text an endpoint sent back, which
        may quote the key it was given.
        """
        return redact_patterns(text)

    @staticmethod
    def fallback(
        *lms: BaseLM,
        on: Collection[Trigger] = frozenset({"transport", "rate_limit"}),
    ) -> FallbackLM:
        """A `FallbackLM`: ``lms`` tried in order, moving on after an outcome in ``on``.

        Triggers: ``"transport"``, ``"rate_limit"``, ``"refusal"``, ``"not_enforced"``,
        ``"validation"``, ``"budget"``, ``"context_length"`` (docs/fallbacks.md). The
        prediction records which endpoint answered in ``pred.extras["fallback"]``.

        Example:
            ```python
            lm = ts.LM.fallback(ts.LM("gpt-4o"), ts.LM("gpt-4o-mini"), on={"rate_limit"})
            ```

        Raises:
            ConfigurationError: Fewer than two LMs, a nested chain, or an unknown trigger.
        """
        from typedspy.lm._fallback import FallbackLM

        return FallbackLM(*lms, on=on)

    @property
    def endpoint(self) -> str | None:
        """The base URL requests go to (part of a response-cache key); ``None`` when local."""
        return None

    def request_options(self, request: LMRequest | None = None) -> dict[str, Any]:
        """What this LM sends beside the body that can change the reply (part of a cache key).

        `LM` returns the query string and the headers it sets (credential headers left out);
        here, nothing: the request's ``params`` are all in `request_body`. ``request=None``
        asks for an embeddings request's.
        """
        return {}

    def request_body(self, request: LMRequest) -> dict[str, Any]:
        """The JSON body this LM sends for ``request``, without credentials.

        The pipeline builds it once per request: the response cache hashes it, `render` returns
        it, the history keeps it and `asend` sends it; a Batch API file holds it. The default
        is the OpenAI chat-completions body; `LM` returns exactly what it puts on the wire.
        """
        body: dict[str, Any] = {"model": self.model, "messages": list(request.messages)}
        if request.response_format is not None:
            body["response_format"] = dict(request.response_format)
        if request.tools:
            body["tools"] = list(request.tools)
            if request.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = request.parallel_tool_calls
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        body.update(request.params)
        return body

    @abc.abstractmethod
    async def acomplete(self, request: LMRequest) -> LMResponse:
        """Send one chat-completion request and return the response.

        Args:
            request: What to send.

        Returns:
            The endpoint's response, read leniently.

        Raises:
            LMError: The endpoint could not be used (a subclass names the reason).
        """

    async def asend(self, request: LMRequest, body: dict[str, Any]) -> LMResponse:
        """Send ``request``, whose `request_body` the pipeline built as ``body`` (ADR-061).

        The default is `acomplete`; `LM` sends ``body`` as it is instead of building it again.
        """
        del body
        return await self.acomplete(request)

    def asend_stream(self, request: LMRequest, body: dict[str, Any]) -> AsyncIterator[LMChunk]:
        """Stream ``request``, whose `request_body` is ``body``: `asend`'s streaming twin."""
        del body
        return self.astream(request)

    async def astream(self, request: LMRequest) -> AsyncIterator[LMChunk]:
        """Stream one completion as chunks.

        The default sends a normal request and yields the whole reply as one chunk, so every
        `BaseLM` can serve streaming callers; `LM` streams for real.
        """
        from typedspy.lm._stream import chunk_of

        yield chunk_of(await self.acomplete(request))

    async def aembed(self, texts: Sequence[str], *, model: str | None = None) -> list[list[float]]:
        """Embed ``texts``, one vector per text (`LM` calls ``/v1/embeddings``).

        Raises:
            ConfigurationError: This LM cannot embed.
        """
        return (await self.aembed_response(texts, model=model)).vectors

    async def aembed_response(
        self, texts: Sequence[str], *, model: str | None = None
    ) -> EmbeddingResponse:
        """Embed ``texts`` in one request; the vectors with the usage and rate-limit headers.

        Raises:
            ConfigurationError: This LM cannot embed.
        """
        raise ConfigurationError(f"{type(self).__name__} cannot embed texts; use typedspy.LM")

    async def acall(
        self, prompt: str | Sequence[ChatMessage], **params: Unpack[RequestParams]
    ) -> str:
        """Send a prompt (or a list of messages) and return the reply text.

        The request takes the road a module's requests take (ADR-092): the response cache,
        the budget and rate limit, the call's deadline and usage meters, callbacks and
        `ts.inspect_history` see it. `acomplete` sends as it is.

        Args:
            prompt: A user message, or the whole conversation as chat messages.
            **params: Request parameters for this call (``temperature``, ``max_tokens``, ...).

        Returns:
            The message content; ``""`` when the model sent only tool calls.

        Raises:
            ConfigurationError: An unknown or reserved request parameter.
            RefusalError: The model refused.
            BudgetExceededError: The budget refuses the request (it is not sent).
            LMError: The endpoint could not be used.
        """
        check_params(params, where=f"{type(self).__name__}.acall")
        messages = (
            ({"role": "user", "content": prompt},) if isinstance(prompt, str) else tuple(prompt)
        )
        request = LMRequest(messages=messages, params=params)
        response = await (_road(self, request) if _road is not None else self.acomplete(request))
        if response.text is None and response.refusal is not None:
            raise RefusalError(
                f"{self.model} refused: {response.refusal}", refusal=response.refusal
            )
        return response.text or ""

    def __call__(self, prompt: str | Sequence[ChatMessage], **params: Unpack[RequestParams]) -> str:
        """Synchronous `acall`: ``lm("Say hi")`` returns the reply text.

        Raises:
            ConfigurationError: Called from code typedspy runs on its own event loop (a
                module's ``aforward``, an async tool), which would wait for itself; use
                ``await lm.acall(...)`` there.
        """
        return run_sync(
            lambda: self.acall(prompt, **params), async_name=f"{type(self).__name__}.acall"
        )


def _defined_below(cls: type, method: str, sender: str) -> bool:
    """Whether ``cls`` gets ``method`` from a strict subclass of where it gets ``sender``."""
    owner = next(c for c in cls.__mro__ if method in vars(c))
    sends = next(c for c in cls.__mro__ if sender in vars(c))
    return owner is not sends and issubclass(owner, sends)
