"""`Worker`: one thread that runs a store's I/O in order, off every event loop.

A SQLite call may wait for another process's lock (up to the busy timeout): run on an event
loop, that wait stalls every task of the loop (issue 21 measured 2.85 s). A `Worker` is the one
thread that touches its store's connection (SQLite connections belong to the thread that made
them), so the connection needs no lock and jobs run in the order they were submitted. Callers
wait for a job's `concurrent.futures.Future`: async code through `asyncio.wrap_future`, from any
loop (a sync call runs on its own thread's loop, ADR-049), sync code by blocking on it.

The thread is a daemon (it never holds the interpreter open) and has its own queue rather than
a `ThreadPoolExecutor`'s, whose workers are stopped before ``atexit`` handlers run: a cache
closed at exit still needs its thread then.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["Worker"]

_T = TypeVar("_T")

_Job = tuple[Callable[[], Any], "Future[Any]"]


class Worker:
    """A daemon thread running submitted functions one at a time, in order.

    Args:
        name: The thread's name.
    """

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=_run, args=(self._jobs,), name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[[], _T]) -> Future[_T]:
        """Queue ``fn``; its result or exception arrives in the returned future."""
        future: Future[_T] = Future()
        self._jobs.put((fn, future))
        return future

    def call(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` on the thread and wait for it (blocks the calling thread)."""
        return self.submit(fn).result()

    async def acall(self, fn: Callable[[], _T]) -> _T:
        """Run ``fn`` on the thread; the awaiting task's loop keeps running meanwhile.

        Cancelling the awaiting task drops ``fn`` if it has not started yet.
        """
        return await asyncio.wrap_future(self.submit(fn))

    def stop(self, timeout: float) -> bool:
        """End the thread once the queued jobs have run; wait up to ``timeout`` seconds.

        Returns:
            Whether the thread has ended.
        """
        self._jobs.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()


def _run(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        _settle(*job)
        del job  # hold nothing of a finished job while waiting for the next


def _settle(fn: Callable[[], Any], future: Future[Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return  # cancelled while queued
    try:
        result = fn()
    except BaseException as exc:  # handed to the waiting caller
        future.set_exception(exc)
    else:
        future.set_result(result)
