"""Typedspy's background event loop: sync calls made while their thread runs a loop (ADR-024).

A synchronous call made while the calling thread runs its own event loop (a Jupyter cell, a
sync function called from async code) cannot run that loop again: its coroutine runs on one
persistent event loop in a daemon thread shared by the whole process, while the caller's loop
is blocked until it is done (its other tasks wait). A sync call made where no loop runs uses
its thread's own loop instead (`typedspy._runtime_local`, ADR-049).

At interpreter exit the loop is finished as ``asyncio.run`` finishes its own (tasks cancelled,
async generators closed), which closes the clients `LM` built for it (ADR-047).
"""

from __future__ import annotations

import _thread
import asyncio
import atexit
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

__all__ = [
    "LOOP",
    "WAIT_SLICE",
    "BackgroundSeat",
    "as_coroutine",
    "await_on_thread",
    "close_unawaited",
    "finish",
    "run_on_thread",
]

T = TypeVar("T")

WAIT_SLICE = 0.2  # seconds; how soon a pending KeyboardInterrupt is noticed while waiting
EXIT_WAIT = 5.0  # seconds; how long interpreter exit waits for a loop to close its clients


class _LoopThread:
    """One event loop running forever in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._exit_registered = False

    def get(self) -> asyncio.AbstractEventLoop:
        loop = self._loop
        if loop is not None:
            return loop
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()
                thread = threading.Thread(
                    target=self._run, args=(loop, started), name="typedspy-loop", daemon=True
                )
                thread.start()
                started.wait()
                self._thread = thread
                self._loop = loop
                if not self._exit_registered:
                    self._exit_registered = True
                    # Registered once the loop exists, so atexit (last in, first out) runs it
                    # after the exit handlers registered since, which may still make calls.
                    atexit.register(self.shutdown)
            return self._loop

    def current(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    def is_current_thread(self) -> bool:
        return self._thread is threading.current_thread()

    def forget(self) -> None:
        # After fork() the child has the loop object but not the thread that ran it.
        self._lock = threading.Lock()
        self._loop = None
        self._thread = None

    def shutdown(self) -> None:
        """Finish the loop as ``asyncio.run`` does: cancel its tasks, close its async generators.

        Run at interpreter exit: the clients `LM` built for this loop are closed by its async
        generators (ADR-024), so no socket is left for the garbage collector to warn about.
        Every wait is bounded (``EXIT_WAIT``); a loop that does not finish in time is left to
        die with its daemon thread. A later call starts a fresh loop.
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = None
            self._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return
        finishing = asyncio.run_coroutine_threadsafe(finish(loop), loop)
        try:
            finishing.result(timeout=EXIT_WAIT)
        except Exception:  # timed out, or failed: exiting, there is no one left to tell
            finishing.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=EXIT_WAIT)
        if not thread.is_alive():
            loop.close()

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        while True:
            try:
                loop.run_forever()
            except (KeyboardInterrupt, SystemExit):
                # Raised by code a task ran (a tool calling sys.exit): asyncio lets these two
                # out of the loop once the task holds it, and its caller raises it; the loop
                # goes on serving the process's other sync calls.
                continue
            return  # stopped


async def finish(loop: asyncio.AbstractEventLoop) -> None:
    """What ``asyncio.run`` does before closing a loop: cancel its tasks, close its generators."""
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks(loop) if task is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=EXIT_WAIT)
    await loop.shutdown_asyncgens()  # closes each LM client built for this loop
    await asyncio.sleep(0)  # one more turn: closed transports drop their sockets


LOOP = _LoopThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=LOOP.forget)


def run_on_thread(awaitable: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine on the background loop, in a copy of the caller's context, and wait."""
    loop = LOOP.get()
    ctx = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        if not result.set_running_or_notify_cancel():
            close_unawaited(awaitable)
            return
        try:
            coro = ctx.run(as_coroutine, awaitable)
            task = ctx.run(loop.create_task, coro)
        except BaseException as exc:  # a failing factory is the caller's error, not the loop's
            result.set_exception(exc)
            return
        tasks.append(task)
        task.add_done_callback(lambda done: _transfer(done, result))

    def cancel() -> None:
        for task in tasks:
            task.cancel()

    cancelled = _cancel_requested()
    try:
        loop.call_soon_threadsafe(start)
        return _wait_for(result, cancelled)
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or the caller's task cancelled
        if result.cancel():  # not started yet, and now it never will be
            close_unawaited(awaitable)
        else:  # running: cancel the task on its loop
            loop.call_soon_threadsafe(cancel)
        raise


async def await_on_thread(factory: Callable[[], Awaitable[T]]) -> T:
    """Await, from another event loop, a coroutine run on the background loop.

    For loop-bound objects that live on the background loop (an injected client): the caller's
    loop goes on meanwhile, and cancelling the caller cancels the coroutine there.
    """
    future = asyncio.run_coroutine_threadsafe(as_coroutine(factory), LOOP.get())
    return await asyncio.wrap_future(future)


def _wait_for(
    future: concurrent.futures.Future[T], cancelled: Callable[[], bool] = lambda: False
) -> T:
    # Wait in slices: a wait without timeout cannot be interrupted by Ctrl-C on every platform.
    # Wait on a private lock that the thread completing the future releases, never on the
    # future's own lock: Ctrl-C can interrupt this thread between Python-level acquire and
    # release (concurrent.futures.wait takes the future's lock twice per slice), and a lock left
    # held would block the loop thread forever when it sets the result.
    wake = _thread.allocate_lock()
    wake.acquire()
    future.add_done_callback(lambda _: wake.release())
    while not cancelled():
        if wake.acquire(timeout=WAIT_SLICE):
            return future.result()
    raise asyncio.CancelledError


def _cancel_requested() -> Callable[[], bool]:
    """Whether the calling thread's task, if any, is asked to cancel after this moment.

    A sync call made inside a running loop blocks that loop while it waits, so the cancellation
    of the task that made it (what Ctrl-C does under ``asyncio.run``) can only be seen by
    looking: the wait does, in its slices, and raises `asyncio.CancelledError`.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no loop runs on this thread
        task = None
    if task is None:
        return lambda: False
    before = task.cancelling()
    return lambda: task.cancelling() > before


class BackgroundSeat:
    """Where a driver's task runs on the background loop (a `typedspy._runtime.Seat`).

    Its calls hop to the loop's thread; the caller waits, in slices, for the
    `concurrent.futures.Future` that thread completes.
    """

    future = concurrent.futures.Future

    def __init__(self) -> None:
        self.loop = LOOP.get()
        self.call = self.loop.call_soon_threadsafe
        self._cancelled = _cancel_requested()

    def wait(self, future: concurrent.futures.Future[T]) -> T:
        if not self.can_wait():  # on the loop itself: it would wait for itself forever
            raise RuntimeError("This event loop is already running")  # as asyncio refuses
        try:
            return _wait_for(future, self._cancelled)
        except asyncio.CancelledError:
            self._cancelled = lambda: False  # raised once: closing the driver then waits
            raise

    def spawn(
        self, coro: Coroutine[Any, None, None], ctx: contextvars.Context
    ) -> asyncio.Task[None]:
        return ctx.run(self.loop.create_task, coro)

    def can_wait(self) -> bool:
        return not LOOP.is_current_thread()  # garbage collection can run on the loop


def _transfer(task: asyncio.Task[T], result: concurrent.futures.Future[T]) -> None:
    if task.cancelled():
        result.set_exception(asyncio.CancelledError())
    elif (exc := task.exception()) is not None:
        result.set_exception(exc)
    else:
        result.set_result(task.result())


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def as_coroutine(
    awaitable: Awaitable[T] | Callable[[], Awaitable[T]],
) -> Coroutine[object, None, T]:
    """The coroutine to run: ``awaitable`` itself, the one its factory made, or one awaiting it."""
    made = awaitable() if callable(awaitable) else awaitable
    if asyncio.iscoroutine(made):
        return cast(Coroutine[object, None, T], made)
    return _await(made)


def close_unawaited(awaitable: object) -> None:
    """Close a coroutine that will never run (no "was never awaited" warning)."""
    if asyncio.iscoroutine(awaitable):
        awaitable.close()  # never awaited on purpose: no "was never awaited" warning
