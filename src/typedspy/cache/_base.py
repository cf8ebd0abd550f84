"""The response-cache interface: what a read or a write does when the store fails.

A cache never fails a call it serves: a reply that was paid for is returned whatever happens
to its entry. A read that fails (the store cannot be read, or the entry is not one) is a miss,
a write that fails leaves the reply unstored; both are counted and logged (`FailureLog`). Only
a strict read (``cache_mode="replay"``, where a miss is itself an error) raises, `CacheError`,
since there no request may be sent in its place.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Literal, TypeVar

from typedspy._runtime import run_sync
from typedspy.cache._entry import (
    BadEntry,
    completion_text,
    embeddings_text,
    read_completion,
    read_embeddings,
)
from typedspy.errors import CacheError, check_int, check_number
from typedspy.lm import EmbeddingResponse, LMResponse

__all__ = ["Cache", "CacheMode", "FailureLog", "Flights", "StoreFailure"]

logger = logging.getLogger("typedspy")

_Found = TypeVar("_Found", LMResponse, EmbeddingResponse)

CacheMode = Literal["read_write", "read", "refresh", "replay", "off"]
"""How calls use the configured cache.

``"read_write"`` (default): answer from the cache, store what is fetched. ``"read"``: answer
from the cache, store nothing. ``"refresh"``: always fetch, overwrite the entry. ``"replay"``:
answer from the cache only; a miss is a `CacheMissError`, an unreadable cache a `CacheError`,
and nothing is sent (a cassette). ``"off"``: ignore the cache."""


_MAX_CAUSES = 64  # distinct causes remembered; past it, every failure is logged at DEBUG


class FailureLog:
    """How many reads and writes of one cache failed; each cause warned about once.

    A cache that cannot be read or written must not fail the call it serves, but it must not
    fail silently either: the first failure of each cause is a warning on the ``typedspy``
    logger, later ones of that cause are logged at DEBUG, so a locked file does not log once
    per call.

    Attributes:
        name: The cache, as the messages name it.
        count: Failures so far.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self._lock = threading.Lock()
        self._seen: set[str] = set()

    def report(
        self, action: str, cause: str, outcome: str, *, failures: int = 1, logged: bool = True
    ) -> None:
        """Count ``failures`` of ``action`` (e.g. ``"reading an entry"``) and log the cause.

        Args:
            action: What failed.
            cause: Why: the store's message or the entry's defect.
            outcome: What the cache did instead (``"treated as a miss"``).
            failures: How many operations failed with it.
            logged: False to count only (the failure is raised to the caller instead).
        """
        with self._lock:
            self.count += failures
            if not logged:
                return
            first = cause not in self._seen and len(self._seen) < _MAX_CAUSES
            if first:
                self._seen.add(cause)
        message = "%s: %s failed (%s); %s"
        if first:
            later = ". Later failures of this cause are logged at DEBUG."
            logger.warning(message + later, self.name, action, cause, outcome)
        else:
            logger.debug(message, self.name, action, cause, outcome)


class Flights:
    """The keys whose requests are in flight, per event loop: identical requests send one.

    A batch of 32 equal items with a cold cache would send 32 equal requests, where 32 calls one
    after another send one and answer the rest from the cache. A call holds its key's *flight*
    from its cache lookup until its reply is stored; an identical call arriving meanwhile waits
    for that flight to end (answered, failed or cancelled), then looks the key up itself. One
    that still finds nothing (the first failed, or stored nothing) sends its own request without
    waiting again, so a failing endpoint is never tried one caller at a time.

    Asyncio futures belong to one loop, so flights are kept per loop (a cache shared by threads,
    each running its own loop, has a set for each); a loop's set goes with the loop.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flying: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Future[None]]
        ] = weakref.WeakKeyDictionary()

    async def hold(self, key: str) -> Callable[[], None] | None:
        """Hold ``key``'s flight (returns the call that lands it), or wait for the one in flight.

        ``None`` when this task waited: it holds nothing, and runs beside any others'.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            flying = self._flying.setdefault(loop, {})
            flight = flying.get(key)
            leader = flight is None
            if flight is None:
                flying[key] = flight = loop.create_future()
        if not leader:
            await asyncio.wait((flight,))  # a cancelled follower leaves the leader's future be
            return None

        def land() -> None:
            with self._lock:
                if flying.get(key) is flight:
                    del flying[key]
            if not flight.done():
                flight.set_result(None)

        return land

    @contextlib.asynccontextmanager
    async def claim(self, key: str) -> AsyncGenerator[None, None]:
        """Hold ``key``'s flight for the block, or wait for the one in flight to end first."""
        land = await self.hold(key)
        try:
            yield
        finally:
            if land is not None:
                land()


class StoreFailure(Exception):
    """A cache's store could not be read or written (raised by `Cache._read` / `_write`)."""


class Cache(abc.ABC):
    """A store of chat completions by request key; entries are JSON text, never pickles.

    Reads and writes never raise for a failing store or a bad entry: a failed read is a miss,
    a failed write leaves the reply unstored, and both are counted in ``errors`` and logged
    (a warning the first time for each cause). ``strict=True`` reads raise `CacheError`.

    Attributes:
        ttl: Seconds an entry stays valid; ``None`` for ever.
        max_entries: Entries kept; the least recently used go first. ``None``: no limit.
        hits: Lookups answered. misses: Lookups not answered (failed ones included).
    """

    def __init__(
        self, *, ttl: float | None = None, max_entries: int | None = None, name: str = ""
    ) -> None:
        check_number(type(self).__name__, "ttl", ttl, unit="seconds")
        check_int(type(self).__name__, "max_entries", max_entries)
        self.ttl = ttl
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0
        self._failures = FailureLog(name or type(self).__name__)
        self._flights = Flights()

    @property
    def errors(self) -> int:
        """Reads and writes that failed (each was a miss, or left its reply unstored)."""
        return self._failures.count

    def get(self, key: str, *, strict: bool = False) -> LMResponse | None:
        """Synchronous `aget` (run through the sync bridge, like every sync entry point).

        Raises:
            CacheError: ``strict`` and the store or the entry could not be read.
            ConfigurationError: Called on typedspy's own event loop; use `aget` there.
        """
        return run_sync(lambda: self.aget(key, strict=strict), async_name="Cache.aget")

    async def aget(self, key: str, *, strict: bool = False) -> LMResponse | None:
        """The cached response for ``key``, or ``None`` (missing, expired or unreadable).

        The store is read off the event loop.

        Raises:
            CacheError: ``strict`` and the store or the entry could not be read.
        """
        return await self._lookup(key, read_completion, strict)

    def put(self, key: str, response: LMResponse) -> None:
        """Synchronous `aput`; never raises a store's failure.

        Raises:
            ConfigurationError: Called on typedspy's own event loop; use `aput` there.
        """
        run_sync(lambda: self.aput(key, response), async_name="Cache.aput")

    async def aput(self, key: str, response: LMResponse) -> None:
        """Store ``response`` under ``key`` (replacing an older entry) off the event loop.

        Never raises: a store that fails leaves the reply unstored (counted and logged).
        """
        await self._store(key, lambda now: completion_text(response, now))

    async def aget_embeddings(self, key: str, *, strict: bool = False) -> EmbeddingResponse | None:
        """The cached ``/v1/embeddings`` reply for ``key``, or ``None`` (read off the loop).

        Raises:
            CacheError: ``strict`` and the store or the entry could not be read.
        """
        return await self._lookup(key, read_embeddings, strict)

    async def aput_embeddings(self, key: str, response: EmbeddingResponse) -> None:
        """Store an embeddings reply under ``key`` (its vectors and usage); never raises."""
        await self._store(key, lambda now: embeddings_text(response, now))

    def claim(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold ``key`` while its request is looked up, sent and stored (async ``with``).

        An identical claim in the same event loop meanwhile waits until the holder is done,
        then runs its block without holding anything: it finds the stored reply, or (the
        holder failed) sends its own. Concurrent identical misses then send one request.

        Example:
            ```python
            async def fetch(cache: ts.cache.Cache, key: str) -> None:
                async with cache.claim(key):
                    if await cache.aget(key) is None:
                        ...  # send, then: await cache.aput(key, reply)
            ```
        """
        return self._flights.claim(key)

    async def hold(self, key: str) -> Callable[[], None] | None:
        """`claim` as two steps: hold ``key`` (the call that releases it), or wait (``None``).

        For code whose lookup, send and store are not one block (the request pipeline's
        cache stage enters before the request and leaves after it).
        """
        return await self._flights.hold(key)

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """How many entries are stored (expired ones included until evicted)."""

    @abc.abstractmethod
    async def _read(self, key: str, oldest: float) -> str | None:
        """The entry's JSON text when it was written at or after ``oldest`` (off the loop).

        Raises:
            StoreFailure: The store could not be read.
        """

    @abc.abstractmethod
    async def _write(self, key: str, text: str, now: float) -> None:
        """Store the JSON text, then evict beyond ``max_entries`` (off the loop).

        Raises:
            StoreFailure: The store could not be written.
        """

    async def _lookup(self, key: str, read: Callable[[str], _Found], strict: bool) -> _Found | None:
        try:
            text = await self._read(key, self._oldest_valid())
        except StoreFailure as exc:
            self._failed(key, str(exc), strict)
            return None
        if text is None:
            self.misses += 1
            return None
        try:
            found = read(text)
        except BadEntry as exc:
            self._failed(key, f"the entry is {exc}", strict)
            return None
        self.hits += 1
        return found

    async def _store(self, key: str, text: Callable[[float], str]) -> None:
        now = time.time()
        try:
            await self._write(key, text(now), now)
        except StoreFailure as exc:
            self._failures.report("writing an entry", str(exc), "the reply was not stored")

    def _failed(self, key: str, cause: str, strict: bool) -> None:
        self.misses += 1
        if strict:
            self._failures.report("reading an entry", cause, "raised CacheError", logged=False)
            raise CacheError(
                f"{self._failures.name} could not answer the request with key {key[:16]}...: "
                f"{cause}; in cache_mode='replay' nothing is sent in its place",
                key=key,
            )
        self._failures.report("reading an entry", cause, "treated as a miss")

    def _oldest_valid(self) -> float:
        return time.time() - self.ttl if self.ttl is not None else float("-inf")
