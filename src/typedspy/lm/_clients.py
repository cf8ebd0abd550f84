"""One SDK client per event loop, closed when its loop shuts down (ADR-024).

An ``AsyncOpenAI`` client pools connections, and a pooled connection belongs to the event loop
that opened it: reusing the client from another loop fails with ``bound to a different event
loop`` or ``Event loop is closed``. `LoopClients` gives each running loop its own client, built
on first use there, so one `LM` serves typedspy's background loop (sync calls), every
``asyncio.run``, the user's own loops and threads, in any order. A client built for a loop is
closed when that loop shuts down its async generators (``asyncio.run`` does), so nothing leaks.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Generic, Protocol, TypeVar

__all__ = ["LoopClients"]


class _Closable(Protocol):
    async def close(self) -> None: ...

    def is_closed(self) -> bool: ...


C = TypeVar("C", bound=_Closable)


class LoopClients(Generic[C]):
    """Clients keyed by the event loop they run on (weakly: a loop's end drops its entry)."""

    def __init__(self, build: Callable[[], C]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Entry[C]] = (
            weakref.WeakKeyDictionary()
        )
        self._detached: C | None = None

    async def get(self) -> C:
        """The client of the running loop, built (and its closing arranged) on first use.

        A client closed by hand (``lm.client.close()``) is replaced, as after `aclose_current`.
        """
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.get(loop)
            if entry is None or entry.client.is_closed():
                entry = self._clients[loop] = _Entry(self._build())
        await entry.arm(lambda: self._forget(loop, entry))
        return entry.client

    def detached(self) -> C:
        """A client for use outside any loop (inspection, tests); built once."""
        with self._lock:
            if self._detached is None:
                self._detached = self._build()
            return self._detached

    def current(self) -> C | None:
        """The running loop's client if one was built, else the detached one (or None)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._detached
        entry = self._clients.get(loop)
        return entry.client if entry is not None else self._detached

    async def aclose_current(self) -> None:
        """Close the running loop's client (a later call there builds a fresh one)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.pop(loop, None)
            detached, self._detached = self._detached, None
        if entry is not None:
            await entry.client.close()  # closing it again at the loop's shutdown does nothing
        if detached is not None:
            await detached.close()

    def _forget(self, loop: asyncio.AbstractEventLoop, entry: _Entry[C]) -> None:
        with self._lock:
            if self._clients.get(loop) is entry:
                del self._clients[loop]


class _Entry(Generic[C]):
    """A loop's client and the async generator that closes it when the loop shuts down."""

    def __init__(self, client: C) -> None:
        self.client = client
        self._guard: AsyncIterator[None] | None = None

    async def arm(self, forget: Callable[[], None]) -> None:
        if self._guard is None:
            # The loop tracks started async generators and closes them at shutdown
            # (loop.shutdown_asyncgens, which asyncio.run calls): that closes the client.
            self._guard = self._close_at_shutdown(forget)
            await self._guard.__anext__()

    async def _close_at_shutdown(self, forget: Callable[[], None]) -> AsyncIterator[None]:
        try:
            yield
        finally:
            forget()
            await self.client.close()
