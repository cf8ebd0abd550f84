"""The stages of the pipeline, in their one order (`ORDER`; see `typedspy.pipeline._exchange`).

Embedding requests (`KNNFewShot`, `embed`) pass the same cache, budget and rate limit as chats.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from typedspy._deadline import note_request
from typedspy.cache import Cache, cache_key, embedding_key
from typedspy.errors import CacheMissError, ConfigurationError, LMRateLimitError
from typedspy.limits import (
    Budget,
    RateLimit,
    Reservation,
    completion_cap,
    estimate_tokens,
    record,
    record_sent,
    usage_counted,
)
from typedspy.lm import BaseLM, EmbeddingResponse, LMResponse
from typedspy.pipeline._exchange import Exchange, Stage
from typedspy.pipeline._history import HISTORY, Entry
from typedspy.settings import Settings, get_settings

__all__ = ["ORDER", "Admit", "Bound", "CacheStage", "Observe", "Record", "embed", "notify"]

logger = logging.getLogger("typedspy")

_READS = ("read_write", "read", "replay")
_WRITES = ("read_write", "refresh")

_Reply = TypeVar("_Reply", LMResponse, EmbeddingResponse)


class Observe(Stage):
    """Callbacks' ``on_lm_start`` and ``on_lm_end``: they watch beside the path, never send."""

    def __init__(self, callbacks: tuple[object, ...]) -> None:
        self.callbacks = callbacks
        self.call_id = uuid.uuid4().hex

    @classmethod
    def configured(cls, settings: Settings) -> Observe | None:
        return cls(settings.callbacks) if settings.callbacks else None

    async def enter(self, exchange: Exchange) -> LMResponse | None:
        self._notify("on_lm_start", exchange.lm, exchange.request)
        return None

    async def leave(self, exchange: Exchange) -> None:
        self._notify("on_lm_end", exchange.response, None)

    def fail(self, exchange: Exchange, error: BaseException | None) -> None:
        self._notify("on_lm_end", None, error)

    def _notify(self, method: str, *args: object) -> None:
        notify(self.callbacks, method, self.call_id, *args)


def notify(callbacks: tuple[object, ...], method: str, *args: object) -> None:
    """Call ``method`` on every callback that has it; one that raises is logged and ignored.

    A hook that hands back a coroutine or a generator (made async after ``configure`` checked
    it) is closed unrun, and logged: it is never awaited on the request's path.
    """
    for callback in callbacks:
        handler = getattr(callback, method, None)
        if handler is None:
            continue
        try:
            returned: object = handler(*args)
        except Exception:
            logger.warning("callback %r raised in %s; ignored", callback, method, exc_info=True)
            continue
        if returned is not None and any(is_(returned) for is_ in _UNRUN):
            _unrun(callback, method, returned)


_UNRUN = (inspect.isawaitable, inspect.isgenerator, inspect.isasyncgen)
"""What a hook hands back when it was written to be awaited or iterated, not called."""


def _unrun(callback: object, method: str, returned: object) -> None:
    """Log what a hook handed back instead of running, closed unrun where it can be."""
    if inspect.iscoroutine(returned) or inspect.isgenerator(returned):
        returned.close()
    logger.warning(
        "callback %r returned a %s from %s: hooks are called, never awaited; ignored",
        callback,
        type(returned).__name__,
        method,
    )


class Record(Stage):
    """Keeps the exchange in the bounded history `inspect_history` prints (ADR-061)."""

    @classmethod
    def configured(cls, settings: Settings) -> Record | None:
        if settings.history_size <= 0:
            return None
        HISTORY.resize(settings.history_size)
        return _RECORD

    async def leave(self, exchange: Exchange) -> None:
        HISTORY.add(Entry.of(exchange, None))

    def fail(self, exchange: Exchange, error: BaseException | None) -> None:
        HISTORY.add(Entry.of(exchange, error))


_RECORD = Record()


class CacheStage(Stage):
    """The response cache: a hit answers the request; a reply sent is stored (``cache_mode``).

    Reads are awaited off the event loop and never fail a call (ADR-055): a failed read is a
    miss, except in ``"replay"`` mode, where it is a `CacheError`. In ``"read_write"`` mode the
    key's flight is held from the lookup until the reply is stored, so identical requests in
    flight at once send one request (`Cache.hold`).
    """

    def __init__(self, cache: Cache, settings: Settings) -> None:
        self.cache = cache
        self.mode = settings.cache_mode
        self.salt = settings.cache_salt
        self.key: str | None = None
        self.land: Callable[[], None] | None = None

    @classmethod
    def configured(cls, settings: Settings) -> CacheStage | None:
        if settings.cache is None or settings.cache_mode == "off":
            return None
        return cls(settings.cache, settings)

    async def enter(self, exchange: Exchange) -> LMResponse | None:
        lm = exchange.lm
        self.key = key = cache_key(lm, exchange.request, salt=self.salt, body=exchange.body)
        if self.mode == "read_write":
            self.land = await self.cache.hold(key)
        return await self.look_up(key, self.cache.aget, "response", lm.model)

    async def look_up(
        self, key: str, read: Callable[..., Awaitable[_Reply | None]], what: str, model: str
    ) -> _Reply | None:
        """The reply ``read`` finds under ``key`` in a reading mode; a miss in ``"replay"`` raises.

        ``what`` (``"response"``, ``"embeddings"``) and ``model`` name it in the miss's message.
        """
        if self.mode not in _READS:
            return None
        hit = await read(key, strict=self.mode == "replay")
        if hit is not None:
            record(hit.usage, cached=True)
            return hit
        if self.mode == "replay":
            raise CacheMissError(
                f"cache_mode='replay': no cached {what} for this {model} request "
                f"(key {key[:16]}...); record it first with cache_mode='read_write'",
                key=key,
            )
        return None

    async def leave(self, exchange: Exchange) -> None:
        try:
            if self.key is not None and not exchange.cached and self.mode in _WRITES:
                assert exchange.response is not None
                await self.cache.aput(self.key, exchange.response)
        finally:
            self._land()

    def fail(self, exchange: Exchange, error: BaseException | None) -> None:
        self._land()

    def _land(self) -> None:
        land, self.land = self.land, None
        if land is not None:
            land()


class Admit(Stage):
    """A `Budget` and a `RateLimit`: a request waits for its turn, or is refused unsent.

    While the request is in flight it holds a `Reservation` of the budget (ADR-056): settled by
    the reply's usage, released if the request fails (unsent, when the rate-limit wait failed).
    """

    def __init__(self, budget: Budget | None, rate_limit: RateLimit | None) -> None:
        self.budget = budget
        self.rate_limit = rate_limit
        self.hold: Reservation | None = None
        self.charged = 0
        self.estimate = 0

    @classmethod
    def configured(cls, settings: Settings) -> Admit | None:
        if settings.budget is None and settings.rate_limit is None:
            return None
        return cls(settings.budget, settings.rate_limit)

    async def enter(self, exchange: Exchange) -> LMResponse | None:
        lm, request = exchange.lm, exchange.request
        cap = completion_cap(request, lm.defaults)
        await self.admit(lm, lm.model, estimate_tokens(request), cap=cap)
        return None

    async def admit(self, lm: BaseLM, model: str, estimate: int, *, cap: int | None) -> None:
        """Reserve the budget, then wait for the rate limit (``cap``: the completion cap)."""
        self.estimate = estimate
        if self.budget is not None:
            endpoint = lm.endpoint if "cost" in self.budget.limits else None
            self.hold = await self.budget.reserve(
                estimate, model=model, endpoint=endpoint, max_output_tokens=cap
            )
        if self.rate_limit is not None:
            try:
                self.charged = await self.rate_limit.acquire(estimate)
            except BaseException:  # cancelled, or past the deadline: never sent
                if self.hold is not None:
                    self.hold.release(sent=False)
                raise

    async def leave(self, exchange: Exchange) -> None:
        assert exchange.response is not None
        await self.settle(exchange.response)

    async def settle(self, response: LMResponse | EmbeddingResponse) -> None:
        """Reconcile the rate limit and settle the reservation with what the reply cost.

        That is what it reported, or its estimate when it reported nothing (`usage_counted`),
        which then calibrates no later prompt estimate.
        """
        usage, reported = usage_counted(response, self.estimate)
        if self.rate_limit is not None:
            self.rate_limit.observe(response.headers)
            completion = isinstance(response, LMResponse)  # embeddings complete nothing
            await self.rate_limit.settle(
                self.charged,
                usage,
                estimated=self.estimate if reported else None,
                completion=completion,
            )
        if self.hold is not None:
            self.hold.settle(usage, calibrates=reported)

    def fail(self, exchange: Exchange, error: BaseException | None) -> None:
        if self.hold is not None and exchange.partial is not None:
            # A stream cut midway (deadline, consumer stopped, connection lost) still cost
            # its prompt and what was generated: it counts what arrived, at its estimate.
            usage, reported = usage_counted(exchange.partial, self.estimate)
            with contextlib.suppress(ConfigurationError):  # no price: the hold is released
                self.hold.settle(usage, calibrates=reported)
        self.failed(error)

    def failed(self, error: BaseException | None) -> None:
        """Give the reservation back (if not settled); a final 429 pauses the rate limit."""
        if self.hold is not None:
            self.hold.release()
        if (
            self.rate_limit is not None
            and isinstance(error, LMRateLimitError)
            and error.retry_after
        ):
            self.rate_limit.pause(error.retry_after)


class Bound(Stage):
    """The deadline is told a request goes out; the usage meters count it, then its reply."""

    @classmethod
    def configured(cls, settings: Settings) -> Bound:
        del settings
        return _BOUND

    async def enter(self, exchange: Exchange) -> LMResponse | None:
        note_request(
            "waiting for the stream to start" if exchange.streamed else "waiting for a response"
        )
        record_sent()
        return None

    async def leave(self, exchange: Exchange) -> None:
        assert exchange.response is not None
        record(exchange.response.usage)


_BOUND = Bound()

ORDER: tuple[type[Stage], ...] = (
    Observe,
    Record,
    CacheStage,
    Admit,
    Bound,
)
"""The stages every request passes, in this order; the transport (the LM) comes last."""


async def embed(lm: BaseLM, texts: Sequence[str], *, model: str | None = None) -> list[list[float]]:
    """Embed ``texts`` (one request) under the current settings' cache, budget and limit.

    Raises:
        CacheMissError: ``cache_mode="replay"`` and the request is not cached.
        CacheError: ``cache_mode="replay"`` and the cache could not be read.
        BudgetExceededError: The budget refuses the request (it is not sent).
        LMError: The endpoint could not be used.
    """
    settings = get_settings()
    note_request("waiting for embeddings")
    name = model or lm.model
    cache = CacheStage.configured(settings)
    key = None
    if cache is not None:
        key = embedding_key(lm, texts, name, salt=cache.salt)
        hit = await cache.look_up(key, cache.cache.aget_embeddings, "embeddings", name)
        if hit is not None:
            return hit.vectors
    estimate = max(1, sum(len(t) for t in texts) // 4)
    admit = Admit.configured(settings)
    if admit is not None:
        await admit.admit(lm, name, estimate, cap=0)  # an embedding completes nothing
    record_sent()
    try:
        reply = await lm.aembed_response(texts, model=model)
        if admit is not None:
            await admit.settle(reply)
    except BaseException as exc:
        if admit is not None:
            admit.failed(exc)
        raise
    record(reply.usage)
    if cache is not None and key is not None and cache.mode in _WRITES:
        await cache.cache.aput_embeddings(key, reply)
    return reply.vectors
