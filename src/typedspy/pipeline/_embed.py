"""Embedding requests (`KNNFewShot`) under the same cache, budget and rate limit as chats."""

from __future__ import annotations

from collections.abc import Sequence

from typedspy._deadline import note_request
from typedspy.cache import embedding_key
from typedspy.errors import CacheMissError
from typedspy.limits import record
from typedspy.lm import BaseLM
from typedspy.pipeline._stages import Admit
from typedspy.settings import get_settings

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
    admit = Admit.configured(settings)
    if admit is not None:
        await admit.admit(lm, name, estimate, cap=0)  # an embedding completes nothing
    try:
        reply = await lm.aembed_response(texts, model=model)
        if admit is not None:
            await admit.settle(reply)
    except BaseException as exc:
        if admit is not None:
            admit.failed(exc)
        raise
    record(reply.usage)
    if key is not None and mode in _WRITES:
        await settings.cache.aput_embeddings(key, reply)  # type: ignore[union-attr]  # key: a cache
    return reply.vectors
