"""`Flights`: identical requests at once in one event loop send one request, not one each.

A batch of 32 equal items with a cold cache would send 32 equal requests, where 32 calls one
after another send one and answer the rest from the cache. A call holds its key's *flight*
from its cache lookup until its reply is stored; an identical call arriving meanwhile waits
for that flight to end (answered, failed or cancelled), then looks the key up itself. One that
still finds nothing (the first failed, or stored nothing) sends its own request without
waiting again, so a failing endpoint is never tried one caller at a time.

Asyncio futures belong to one loop, so flights are kept per loop (a cache shared by threads,
each running its own loop, has a set for each); a loop's set goes with the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncIterator, Callable

__all__ = ["Flights"]


class Flights:
    """The keys whose requests are in flight, per event loop."""

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
            ahead = flying.get(key)
            if ahead is None:
                flying[key] = landing = loop.create_future()
        if ahead is not None:
            await asyncio.wait((ahead,))  # a cancelled follower leaves the leader's future be
            return None

        def land() -> None:
            with self._lock:
                if flying.get(key) is landing:
                    del flying[key]
            if not landing.done():
                landing.set_result(None)

        return land

    @contextlib.asynccontextmanager
    async def claim(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s flight for the block, or wait for the one in flight to end first."""
        land = await self.hold(key)
        try:
            yield
        finally:
            if land is not None:
                land()
