"""The gate every request passes: response cache, budget, rate limit, usage meters.

`callbacks.complete` and `callbacks.stream` send through here, so retries, ReAct steps,
tools backed by models, sub-modules and batch items are all cached, counted and limited the
same way, by the settings of the context they run in; `embed` does the same for the
``/v1/embeddings`` requests of `KNNFewShot`. Order for one request: cache lookup
(a hit costs nothing and is not limited), budget check, rate-limit wait, send, then reconcile
the rate limit, spend the budget, count the usage and store the reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from typedspy._deadline import note_request, note_streamed, stream_bounded
from typedspy.cache import cache_key, embedding_key
from typedspy.errors import CacheMissError, LMRateLimitError
from typedspy.limits import estimate_tokens, record
from typedspy.lm import (
    BaseLM,
    EmbeddingResponse,
    LMChunk,
    LMRequest,
    LMResponse,
    StreamAccumulator,
    chunk_of,
)
from typedspy.settings import Settings, get_settings
from typedspy.streaming import closing

__all__ = ["complete", "embed", "stream"]

_READS = ("read_write", "read", "replay")
_WRITES = ("read_write", "refresh")


async def complete(lm: BaseLM, request: LMRequest) -> LMResponse:
    """Send ``request`` through ``lm`` under the current settings' cache, budget and limit.

    Raises:
        CacheMissError: ``cache_mode="replay"`` and the request is not cached.
        BudgetExceededError: The budget refuses the request (it is not sent).
        LMError: The endpoint could not be used.
    """
    settings = get_settings()
    note_request()
    if settings.cache is None and settings.budget is None and settings.rate_limit is None:
        response = await lm.acomplete(request)  # the common case costs one lookup
        record(response.usage)
        return response
    key, hit = _lookup(settings, lm, request)
    if hit is not None:
        return hit
    charged = await _admit(settings, lm, request)
    try:
        response = await lm.acomplete(request)
    except LMRateLimitError as exc:
        if settings.rate_limit is not None and exc.retry_after:
            settings.rate_limit.pause(exc.retry_after)
        raise
    await _settle(settings, lm, response, charged)
    if key is not None and settings.cache_mode in _WRITES:
        settings.cache.put(key, response)  # type: ignore[union-attr]  # key implies a cache
    return response


async def stream(lm: BaseLM, request: LMRequest) -> AsyncIterator[LMChunk]:
    """Stream ``request`` through ``lm`` under the current settings (see `complete`).

    A cached reply is yielded as one chunk. A streamed reply is stored once it has ended.
    """
    settings = get_settings()
    key, hit = _lookup(settings, lm, request)
    if hit is not None:
        yield chunk_of(hit)
        return
    charged = await _admit(settings, lm, request)
    accumulator = StreamAccumulator(lm.model)
    note_request("waiting for the stream to start")
    # ADR-030: the whole stream is bounded by stream_deadline (a stream that never ends).
    sent = stream_bounded(lm.astream(request), settings.stream_deadline, f"{lm.model} stream")
    try:
        async with closing(sent) as chunks:  # closes the HTTP response at once
            async for chunk in chunks:
                accumulator.add(chunk)
                note_streamed(len(chunk.text) + sum(len(c.arguments) for c in chunk.tool_calls))
                yield chunk
    except LMRateLimitError as exc:
        if settings.rate_limit is not None and exc.retry_after:
            settings.rate_limit.pause(exc.retry_after)
        raise
    response = accumulator.response()
    await _settle(settings, lm, response, charged)
    if key is not None and settings.cache_mode in _WRITES:
        settings.cache.put(key, response)  # type: ignore[union-attr]


async def embed(lm: BaseLM, texts: Sequence[str], *, model: str | None = None) -> list[list[float]]:
    """Embed ``texts`` (one request) under the current settings' cache, budget and limit.

    Raises:
        CacheMissError: ``cache_mode="replay"`` and the request is not cached.
        BudgetExceededError: The budget refuses the request (it is not sent).
        LMError: The endpoint could not be used.
    """
    settings = get_settings()
    note_request("waiting for embeddings")
    name = model or lm.model
    cache, mode = settings.cache, settings.cache_mode
    key = None
    if cache is not None and mode != "off":
        key = embedding_key(lm, texts, name, salt=settings.cache_salt)
        hit = cache.get_embeddings(key) if mode in _READS else None
        if hit is not None:
            record(hit.usage, cached=True)
            return hit.vectors
        if mode == "replay":
            raise CacheMissError(
                f"cache_mode='replay': no cached embeddings for this {name} request "
                f"(key {key[:16]}...); record it first with cache_mode='read_write'",
                key=key,
            )
    estimate = max(1, sum(len(t) for t in texts) // 4)
    charged = await _admit_estimate(settings, lm, name, estimate)
    try:
        reply = await lm.aembed_response(texts, model=model)
    except LMRateLimitError as exc:
        if settings.rate_limit is not None and exc.retry_after:
            settings.rate_limit.pause(exc.retry_after)
        raise
    await _settle_usage(settings, lm, name, reply, charged)
    if key is not None and mode in _WRITES:
        settings.cache.put_embeddings(key, reply)  # type: ignore[union-attr]  # key: a cache
    return reply.vectors


def _lookup(
    settings: Settings, lm: BaseLM, request: LMRequest
) -> tuple[str | None, LMResponse | None]:
    cache, mode = settings.cache, settings.cache_mode
    if cache is None or mode == "off":
        return None, None
    key = cache_key(lm, request, salt=settings.cache_salt)
    if mode in _READS:
        hit = cache.get(key)
        if hit is not None:
            record(hit.usage, cached=True)
            return key, hit
        if mode == "replay":
            raise CacheMissError(
                f"cache_mode='replay': no cached response for this {lm.model} request "
                f"(key {key[:16]}...); record it first with cache_mode='read_write'",
                key=key,
            )
    return key, None


async def _admit(settings: Settings, lm: BaseLM, request: LMRequest) -> tuple[int, int]:
    """Check the budget and wait for the rate limit; returns (tokens charged, estimate)."""
    if settings.budget is None and settings.rate_limit is None:
        return 0, 0
    return await _admit_estimate(settings, lm, lm.model, estimate_tokens(request))


async def _admit_estimate(
    settings: Settings, lm: BaseLM, model: str, estimate: int
) -> tuple[int, int]:
    if settings.budget is not None:
        endpoint = lm.endpoint if "cost" in settings.budget.limits else None
        settings.budget.reserve(estimate, model=model, endpoint=endpoint)
    if settings.rate_limit is not None:
        return await settings.rate_limit.acquire(estimate), estimate
    return 0, estimate


async def _settle(
    settings: Settings, lm: BaseLM, response: LMResponse, charged: tuple[int, int]
) -> None:
    await _settle_usage(settings, lm, lm.model, response, charged)


async def _settle_usage(
    settings: Settings,
    lm: BaseLM,
    model: str,
    response: LMResponse | EmbeddingResponse,
    charged: tuple[int, int],
) -> None:
    if settings.rate_limit is not None:
        settings.rate_limit.observe(response.headers)
        completion = isinstance(response, LMResponse)  # embeddings complete nothing
        tokens, estimate = charged
        await settings.rate_limit.settle(
            tokens, response.usage, estimated=estimate, completion=completion
        )
    if settings.budget is not None:
        endpoint = lm.endpoint if "cost" in settings.budget.limits else None
        settings.budget.spend(response.usage, model=model, endpoint=endpoint)
    record(response.usage)
