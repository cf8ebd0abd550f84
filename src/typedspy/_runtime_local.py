"""Each thread's own event loop: sync calls made where no event loop runs (ADR-049).

A synchronous call made from a thread that runs no event loop runs its coroutine on that
thread's own loop, created on first use and reused by every later sync call of the thread
(pooled connections stay bound to the loop that opened them, so a loop per call would not do).
The loop runs only while a sync call of its thread is in progress, and nothing but that call's
tasks runs on it; no thread hand-off is made.

The call's first task is its *root task* (`is_root`): `LM` sends the root task's requests that
no deadline bounds with the SDK's blocking client, on the calling thread, since nothing else
could run on the loop meanwhile (ADR-064). Tasks the call starts (a batch's ``gather``,
parallel tool calls) send with the loop's async client, so they still overlap.

Ctrl-C raises `KeyboardInterrupt` where the thread is (in a blocking read too); the call's task
is then cancelled and run to its end, so its ``finally`` blocks and async generators close, and
the `KeyboardInterrupt` is raised to the caller.

A thread's loop is finished when the thread ends, and the main thread's at interpreter exit,
as ``asyncio.run`` finishes its own (tasks cancelled, async generators closed, which closes the
clients `LM` built for it), then closed: nothing is left for the garbage collector to warn about.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import Any, Generic, TypeVar

from typedspy._runtime_thread import Exhausted, as_coroutine, consume, drain, finish

__all__ = ["is_root", "iterate_here", "own_loop_running", "run_here"]

T = TypeVar("T")

_WAIT_SLICE = 0.2  # seconds; how soon a pending KeyboardInterrupt is noticed while waiting


class _Loop:
    """A thread's loop; finished and closed when the thread's locals are dropped (its end)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.roots: set[asyncio.Task[Any]] = set()

    def finish(self) -> None:
        loop = self.loop
        if loop.is_closed() or loop.is_running():
            return
        finishing = finish(loop)
        try:
            loop.run_until_complete(finishing)
        except BaseException:  # exiting: there is no one left to tell
            # Also when the garbage collector drops a dead thread's loop while this thread runs
            # another loop (a caller's asyncio.run): this one refused to run, so its finishing
            # coroutine never started; closed, it is not reported as never awaited.
            finishing.close()
        finally:
            loop.close()

    def __del__(self) -> None:
        self.finish()


class _Local(threading.local):
    current: _Loop | None = None


_local = _Local()
_main_exit_registered = False


def _get() -> _Loop:
    here = _local.current
    if here is None or here.loop.is_closed():
        here = _local.current = _Loop()
        if threading.current_thread() is threading.main_thread():
            _register_main_exit()
    return here


def _register_main_exit() -> None:
    global _main_exit_registered
    if not _main_exit_registered:
        _main_exit_registered = True
        # Registered at first use, so exit handlers registered since (which may still make
        # sync calls) run before it (atexit: last in, first out).
        atexit.register(_finish_main)


def _finish_main() -> None:
    here, _local.current = _local.current, None
    if here is not None:
        here.finish()


def _forget_after_fork() -> None:
    # The child has the forking thread's loop, whose selector it shares with the parent.
    here, _local.current = _local.current, None
    if here is not None and not here.loop.is_closed():
        here.loop.close()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def own_loop_running() -> bool:
    """True while this thread's own loop runs (code a sync call runs there)."""
    here = _local.current
    return here is not None and here.loop.is_running()


def is_root() -> bool:
    """True in the root task of a sync call running on this thread's own loop."""
    here = _local.current
    return here is not None and bool(here.roots) and asyncio.current_task() in here.roots


def run_here(awaitable: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on this thread's own loop (no loop may be running here) to its end."""
    here = _get()
    ctx = contextvars.copy_context()
    task = ctx.run(here.loop.create_task, ctx.run(as_coroutine, awaitable))
    here.roots.add(task)
    try:
        return _run(here.loop, task, task)
    finally:
        here.roots.discard(task)


def iterate_here(factory: Callable[[], AsyncIterator[T]]) -> Generator[T, None, None]:
    """Drive an async iterator on this thread's own loop, one item per ``next()``."""
    return drain(_LocalDriver(factory, _get(), contextvars.copy_context()))


def _run(loop: asyncio.AbstractEventLoop, awaited: asyncio.Future[T], task: asyncio.Task[Any]) -> T:
    """Run ``loop`` until ``awaited`` is done; on Ctrl-C cancel ``task`` and run it to its end."""
    ticking = _Ticker(loop)
    try:
        return loop.run_until_complete(awaited)
    except KeyboardInterrupt:
        if not task.done():
            task.cancel()
            try:
                loop.run_until_complete(task)
            except (Exception, asyncio.CancelledError):
                pass  # the KeyboardInterrupt is the news
        raise
    finally:
        ticking.stop()


class _Ticker:
    """Wakes an idle loop every slice, so a pending Ctrl-C is noticed while it waits.

    A wait without timeout is not interrupted by Ctrl-C on every platform (nor by
    ``_thread.interrupt_main``), as in `typedspy._runtime_thread`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._handle = loop.call_later(_WAIT_SLICE, self._tick)

    def _tick(self) -> None:
        self._handle = self._loop.call_later(_WAIT_SLICE, self._tick)

    def stop(self) -> None:
        self._handle.cancel()


class _LocalDriver(Generic[T]):
    """Owns the task that consumes an async iterator on this thread's loop (a root task)."""

    def __init__(
        self, factory: Callable[[], AsyncIterator[T]], here: _Loop, ctx: contextvars.Context
    ) -> None:
        self._factory = factory
        self._here = here
        self._ctx = ctx
        self._thread = threading.get_ident()
        self._task: asyncio.Task[None] | None = None
        self._requests: asyncio.Queue[asyncio.Future[T | Exhausted]] = asyncio.Queue()

    def next(self) -> tuple[T] | None:
        """Fetch the next item, wrapped in a 1-tuple; ``None`` when the iterator is exhausted."""
        loop = self._here.loop
        task = self._task
        if task is None:
            made = self._ctx.run(consume, self._factory, self._requests)
            task = self._task = self._ctx.run(loop.create_task, made)
            self._here.roots.add(task)
            task.add_done_callback(self._here.roots.discard)
        if task.done():
            return None
        reply: asyncio.Future[T | Exhausted] = loop.create_future()
        self._requests.put_nowait(reply)
        item = _run(loop, reply, task)
        return None if isinstance(item, Exhausted) else (item,)

    def close(self) -> None:
        """Cancel the consuming task (which closes the async iterator) and run it to its end."""
        task = self._task
        if task is None or task.done():
            return
        loop = self._here.loop
        if threading.get_ident() != self._thread:  # dropped on another thread: let it end there
            loop.call_soon_threadsafe(task.cancel)
            return
        task.cancel()
        if loop.is_running():  # garbage collected during another call: it ends in that one
            return
        try:
            loop.run_until_complete(task)
        except (Exception, asyncio.CancelledError):
            pass  # closing: the iterator's own exception was raised by `next` already
