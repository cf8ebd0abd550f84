"""One exchange with a model, and the ordered stages every request passes (ADR-061).

Every request a module sends goes through `complete` or `stream`: the engine's attempts,
ReAct's steps, LLM-backed tools, sub-modules, batch items. The stages, in the one order written
in `ORDER`: observe (callbacks) → record (the history `inspect_history` prints) → cache →
admit (budget, rate limit) → bound (the call's deadline and usage meters) → the transport (the
LM, under the call's request bound and, streaming, the stream deadline).

A stage is a small object with three hooks: `Stage.enter` before the request (it may answer it,
as a cache hit does, or refuse it, as a budget does), `Stage.leave` after the reply, in reverse
order, and `Stage.fail` when the request failed or was abandoned. Only the stages the current
settings use are built, so the common case (no callbacks, cache or limits) costs two hooks. A
streamed reply is added up once, into the caller's `StreamAccumulator`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from typedspy._deadline import note_streamed, stream_bounded
from typedspy._scope import RENDERING, current
from typedspy.lm import (
    BaseLM,
    LMChunk,
    LMRequest,
    LMResponse,
    RequestBound,
    StreamAccumulator,
    chunk_of,
    counted,
    counted_stream,
)
from typedspy.settings import Settings, get_settings
from typedspy.streaming import closing

__all__ = ["Exchange", "Rendered", "Stage", "complete", "rendering", "stream"]


@dataclass(eq=False)
class Exchange:
    """One request on its way through the stages, and what came of it.

    Attributes:
        lm: The endpoint.
        request: What is sent.
        settings: The settings the request runs under.
        streamed: Whether the reply streams.
        attempt: The attempt of the call this request is (1 for the first; 0: not known).
        response: The reply, once there is one.
        partial: What arrived of a stream that failed or was abandoned midway (else ``None``).
        cached: Whether the reply came from the response cache.
        started: When the exchange began (``time.monotonic``).
        built: The JSON body, once `body` built it.
    """

    lm: BaseLM
    request: LMRequest
    settings: Settings
    streamed: bool = False
    attempt: int = 0
    response: LMResponse | None = None
    partial: LMResponse | None = None
    cached: bool = False
    started: float = field(default_factory=time.monotonic)
    built: dict[str, Any] | None = None

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body of the request (`BaseLM.request_body`), built once, when first needed.

        The one build of the request: the cache key hashes it, the history keeps it and the
        transport sends it (`BaseLM.asend`).

        Raises:
            ConfigurationError: The request's parameters are refused.
        """
        if self.built is None:
            self.built = self.lm.request_body(self.request)
        return self.built


class Stage:
    """One stage of the pipeline; every hook does nothing by default."""

    @classmethod
    def configured(cls, settings: Settings) -> Stage | None:
        """The stage for a request under ``settings``; None: unused (each stage defines it)."""

    async def enter(self, exchange: Exchange) -> LMResponse | None:
        """Before the request: return a reply to answer it here, raise to refuse it."""
        del exchange
        return None

    async def leave(self, exchange: Exchange) -> None:
        """After the reply (``exchange.response``), in reverse order of `enter`."""

    def fail(self, exchange: Exchange, error: BaseException | None) -> None:
        """The request failed with ``error`` (``None``: its consumer stopped reading)."""


class Rendered(BaseException):
    """Raised in place of sending, under `rendering`: the request a call was about to send.

    A `BaseException`, so no handler of a module's own (``except Exception``) takes it.

    Attributes:
        body: The JSON body, exactly as it would have been sent.
    """

    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__("rendered, not sent")
        self.body = body


@contextmanager
def rendering() -> Generator[None, None, None]:
    """In this block, the first request is not sent: `Rendered` is raised with its body."""
    saved = RENDERING.set(True)
    try:
        yield
    finally:
        RENDERING.restore(saved)


def _stages(settings: Settings) -> list[Stage]:
    from typedspy.pipeline._stages import ORDER

    stages: list[Stage] = []
    for kind in ORDER:
        stage = kind.configured(settings)
        if stage is not None:
            stages.append(stage)
    return stages


async def complete(
    lm: BaseLM, request: LMRequest, *, requests: RequestBound | None = None, attempt: int = 0
) -> LMResponse:
    """Send ``request`` through the stages; the reply (maybe from the cache).

    Raises:
        CacheMissError: ``cache_mode="replay"`` and the request is not cached.
        CacheError: ``cache_mode="replay"`` and the cache could not be read.
        BudgetExceededError: The budget refuses the request (it is not sent).
        RequestLimitError: ``requests`` has no room for it (it is not sent).
        LMError: The endpoint could not be used.
    """
    exchange = _exchange(lm, request, streamed=False, attempt=attempt)
    entered: list[Stage] = []
    try:
        hit = await _enter(exchange, entered)
        if hit is None:
            exchange.response = await counted(requests, lambda: lm.asend(request, exchange.body))
        else:
            exchange.response = hit
    except BaseException as exc:
        _fail(entered, exchange, exc)
        raise
    await _leave(entered, exchange)
    return exchange.response


async def stream(
    lm: BaseLM,
    request: LMRequest,
    accumulator: StreamAccumulator,
    *,
    requests: RequestBound | None = None,
    attempt: int = 0,
) -> AsyncIterator[LMChunk]:
    """Stream ``request`` through the stages into ``accumulator`` (see `complete`).

    A cached reply comes as one chunk. The whole stream is bounded by the ``stream_deadline``
    setting (ADR-030); closing the iterator early closes the HTTP response at once.
    """
    exchange = _exchange(lm, request, streamed=True, attempt=attempt)
    entered: list[Stage] = []
    arrived = False  # whether a chunk came from the endpoint (then a cut stream cost tokens)
    try:
        hit = await _enter(exchange, entered)
        if hit is not None:
            chunk = chunk_of(hit)
            accumulator.add(chunk)
            yield chunk
        else:
            sent = stream_bounded(
                _noted(lm.asend_stream(request, exchange.body)),
                exchange.settings.stream_deadline,
                f"{lm.model} stream",
            )
            async with closing(counted_stream(requests, sent)) as chunks:
                async for sent_chunk in chunks:
                    arrived = True
                    yield accumulator.add(sent_chunk)  # its tool calls numbered as the reply's
    except GeneratorExit:  # the consumer stopped early: not a failure of the request
        exchange.partial = accumulator.response() if arrived else None
        _fail(entered, exchange, None)
        raise
    except BaseException as exc:
        exchange.partial = accumulator.response() if arrived else None
        _fail(entered, exchange, exc)
        raise
    exchange.response = accumulator.response()
    await _leave(entered, exchange)


async def _noted(chunks: AsyncIterator[LMChunk]) -> AsyncIterator[LMChunk]:
    """``chunks``, each one's characters noted inside the bounds' step (so the stream's own)."""
    async with closing(chunks):
        async for chunk in chunks:
            note_streamed(len(chunk.text) + sum(len(c.arguments) for c in chunk.tool_calls))
            yield chunk


def _exchange(lm: BaseLM, request: LMRequest, *, streamed: bool, attempt: int) -> Exchange:
    """The exchange for ``request``; under `rendering`, `Rendered` instead (nothing is sent)."""
    if current().rendering:
        raise Rendered(lm.request_body(request))
    return Exchange(lm, request, get_settings(), streamed=streamed, attempt=attempt)


async def _enter(exchange: Exchange, entered: list[Stage]) -> LMResponse | None:
    """Enter the settings' stages in order (each kept in ``entered``) until one answers."""
    for stage in _stages(exchange.settings):
        entered.append(stage)
        hit = await stage.enter(exchange)
        if hit is not None:
            exchange.cached = True
            return hit
    return None


async def _leave(entered: list[Stage], exchange: Exchange) -> None:
    """Each entered stage's `Stage.leave`, last first; one that raises fails the others."""
    while entered:
        stage = entered.pop()
        try:
            await stage.leave(exchange)
        except BaseException as exc:
            _fail(entered, exchange, exc)
            raise


def _fail(entered: list[Stage], exchange: Exchange, error: BaseException | None) -> None:
    for stage in reversed(entered):
        stage.fail(exchange, error)
