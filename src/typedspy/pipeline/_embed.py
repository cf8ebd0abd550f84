"""Embedding requests (`KNNFewShot`) under the same cache, budget and rate limit as chats."""

from __future__ import annotations

from collections.abc import Sequence

from typedspy._deadline import note_request
from typedspy.cache import embedding_key
from typedspy.errors import CacheMissError, LMRateLimitError
from typedspy.limits import record
from typedspy.lm import BaseLM, EmbeddingResponse, LMResponse
from typedspy.settings import Settings, get_settings

__all__ = ["embed"]

_READS = ("read_write", "read", "replay")
_WRITES = ("read_write", "refresh")


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
    cache, mode = settings.cache, settings.cache_mode
    key = None
    if cache is not None and mode != "off":
        key = embedding_key(lm, texts, name, salt=settings.cache_salt)
        hit = await cache.aget_embeddings(key, strict=mode == "replay") if mode in _READS else None
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
        await settings.cache.aput_embeddings(key, reply)  # type: ignore[union-attr]  # key: a cache
    return reply.vectors


async def _admit_estimate(
    settings: Settings, lm: BaseLM, model: str, estimate: int
) -> tuple[int, int]:
    if settings.budget is not None:
        endpoint = lm.endpoint if "cost" in settings.budget.limits else None
        settings.budget.reserve(estimate, model=model, endpoint=endpoint)
    if settings.rate_limit is not None:
        return await settings.rate_limit.acquire(estimate), estimate
    return 0, estimate


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
