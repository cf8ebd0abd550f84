"""The sync bridge: run typedspy's async code from synchronous callers.

All of typedspy is implemented once, in async code. Synchronous entry points (``Predict.__call__``,
``LM.__call__``, ...) hand their coroutine to `run_sync`, which runs it on one persistent event
loop in a daemon thread shared by the whole process. A fresh loop per call (``asyncio.run``) would
break any client reused across calls, because pooled connections stay bound to the loop that
opened them and that loop would be closed by the second call.

The caller's `contextvars` are copied into the coroutine, so ``with ts.context(...)`` in the
calling thread applies to the work done on the loop thread.

A synchronous call made while the calling thread runs its own event loop (a Jupyter cell, a
sync function called from async code) works too (ADR-024): the work runs on the background loop
while the caller's loop is blocked until it is done, so that loop's other tasks wait. Only a
synchronous call from the background loop itself is refused: it would wait for itself.

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
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Generic, TypeAlias, TypeVar, cast

from typedspy.errors import ConfigurationError

__all__ = ["iterate_sync", "run_sync"]

T = TypeVar("T")

_WAIT_SLICE = 0.2  # seconds; how soon a pending KeyboardInterrupt is noticed while waiting
_EXIT_WAIT = 5.0  # seconds; how long interpreter exit waits for the loop to close its clients


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
        Every wait is bounded (``_EXIT_WAIT``); a loop that does not finish in time is left to
        die with its daemon thread. A later call starts a fresh loop.
        """
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = None
            self._thread = None
        if loop is None or thread is None or not thread.is_alive():
            return
        finishing = asyncio.run_coroutine_threadsafe(_finish(loop), loop)
        try:
            finishing.result(timeout=_EXIT_WAIT)
        except Exception:  # timed out, or failed: exiting, there is no one left to tell
            finishing.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=_EXIT_WAIT)
        if not thread.is_alive():
            loop.close()

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(started.set)
        loop.run_forever()


async def _finish(loop: asyncio.AbstractEventLoop) -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks(loop) if task is not current]
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.wait(tasks, timeout=_EXIT_WAIT)
    await loop.shutdown_asyncgens()  # closes each LM client built for this loop
    await asyncio.sleep(0)  # one more turn: closed transports drop their sockets


_LOOP = _LoopThread()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_LOOP.forget)


def run_sync(awaitable: Awaitable[T] | Callable[[], Awaitable[T]], *, async_name: str) -> T:
    """Run a coroutine on typedspy's background event loop and wait for its result.

    The coroutine runs in a copy of the calling thread's `contextvars` context. Its exception, if
    any, is raised here with its original type and traceback. A `KeyboardInterrupt` while
    waiting cancels the coroutine.

    Args:
        awaitable: The coroutine to run, or a zero-argument callable that creates it (preferred:
            nothing is created when the call is refused).
        async_name: The async method to suggest when called from typedspy's own loop, as
            ``"Owner.amethod"`` (for example ``"Predict.acall"``).

    Returns:
        What the coroutine returned.

    Raises:
        ConfigurationError: Called from typedspy's background loop itself (in code that
            typedspy runs there), where waiting would deadlock; the coroutine is closed
            without running.
    """
    _refuse_on_own_loop(awaitable, async_name)
    if not _loop_running():
        return _run_here(awaitable)
    loop = _LOOP.get()
    ctx = contextvars.copy_context()
    result: concurrent.futures.Future[T] = concurrent.futures.Future()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        if not result.set_running_or_notify_cancel():
            _close(awaitable)
            return
        try:
            coro = ctx.run(_as_coroutine, awaitable)
            task = ctx.run(loop.create_task, coro)
        except BaseException as exc:  # a failing factory is the caller's error, not the loop's
            result.set_exception(exc)
            return
        tasks.append(task)
        task.add_done_callback(lambda done: _transfer(done, result))

    def cancel() -> None:
        for task in tasks:
            task.cancel()

    try:
        loop.call_soon_threadsafe(start)
        return _wait_for(result)
    except KeyboardInterrupt:
        if result.cancel():  # not started yet, and now it never will be
            _close(awaitable)
        else:  # running: cancel the task on its loop
            loop.call_soon_threadsafe(cancel)
        raise


class _Private(threading.local):
    loop: asyncio.AbstractEventLoop | None = None
    roots: set[asyncio.Task[object]]

    def __init__(self) -> None:
        self.roots = set()


_private = _Private()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def sync_root() -> bool:
    """True in the root task of a synchronous call on its thread's private loop."""
    roots = _private.roots
    return bool(roots) and asyncio.current_task() in roots


def _run_here(awaitable: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    local = _private
    loop = local.loop
    if loop is None or loop.is_closed():
        loop = local.loop = asyncio.new_event_loop()
    ctx = contextvars.copy_context()
    coro = ctx.run(_as_coroutine, awaitable)
    task = ctx.run(loop.create_task, coro)
    local.roots.add(task)  # type: ignore[arg-type]
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        if not task.done():
            task.cancel()
            try:
                loop.run_until_complete(task)
            except BaseException:
                pass
        raise
    finally:
        local.roots.discard(task)  # type: ignore[arg-type]


def iterate_sync(
    factory: Callable[[], AsyncIterator[T]], *, async_name: str
) -> Generator[T, None, None]:
    """Drive an async iterator on typedspy's background loop, one item per ``next()``.

    The async iterator is created by ``factory`` inside one task on the background loop (in a
    copy of the caller's `contextvars` context) and consumed by that same task, so resources it
    holds are opened and closed in one task. Closing the returned iterator early (``break``,
    ``close()``, garbage collection) closes the async iterator (``aclose``).

    Args:
        factory: A zero-argument callable returning the async iterator (e.g. an async
            generator function bound to its arguments).
        async_name: The async method to suggest when called from typedspy's own loop, as
            ``"Owner.amethod"`` (for example ``"Predict.astream"``).

    Returns:
        A synchronous generator over the same items; ``close()`` it to stop early.

    Raises:
        ConfigurationError: Called from typedspy's background loop itself.
    """
    _refuse_on_own_loop(None, async_name, iterating=True)
    return _drain(_AsyncIteratorDriver(factory, _LOOP.get(), contextvars.copy_context()))


def _drain(driver: _AsyncIteratorDriver[T]) -> Generator[T, None, None]:
    try:
        while True:
            fetched = driver.next()
            if fetched is None:
                return
            yield fetched[0]
    finally:
        driver.close()


class _Exhausted:
    """Marks the end of the async iterator in a reply."""


_Reply: TypeAlias = "concurrent.futures.Future[T | _Exhausted]"


class _AsyncIteratorDriver(Generic[T]):
    """Owns one task that consumes an async iterator on request from a synchronous caller."""

    def __init__(
        self,
        factory: Callable[[], AsyncIterator[T]],
        loop: asyncio.AbstractEventLoop,
        ctx: contextvars.Context,
    ) -> None:
        self._factory = factory
        self._loop = loop
        self._ctx = ctx
        self._started = False  # only touched by the synchronous caller
        self._task: asyncio.Task[None] | None = None  # only touched on the loop thread
        self._requests: asyncio.Queue[_Reply[T]] | None = None
        self._finished: concurrent.futures.Future[None] = concurrent.futures.Future()

    def next(self) -> tuple[T] | None:
        """Fetch the next item, wrapped in a 1-tuple; ``None`` when the iterator is exhausted."""
        if self._finished.done():
            return None
        if not self._started:
            self._started = True
            self._loop.call_soon_threadsafe(self._start)
        reply: _Reply[T] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(self._request, reply)
        item = _wait_for(reply)
        return None if isinstance(item, _Exhausted) else (item,)

    def close(self) -> None:
        """Cancel the consuming task (which closes the async iterator) and wait for it."""
        if not self._started:
            return  # nothing was ever created
        self._loop.call_soon_threadsafe(self._cancel)
        if not _LOOP.is_current_thread():  # garbage collection can run on the loop thread
            self._finished.result()

    def _start(self) -> None:
        self._requests = asyncio.Queue()
        self._task = self._ctx.run(self._loop.create_task, self._consume(self._requests))
        self._task.add_done_callback(lambda _: self._finished.set_result(None))

    def _request(self, reply: _Reply[T]) -> None:
        if self._requests is None or self._task is None or self._task.done():
            reply.set_result(_Exhausted())
        else:
            self._requests.put_nowait(reply)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _consume(self, requests: asyncio.Queue[_Reply[T]]) -> None:
        iterator: AsyncIterator[T] | None = None
        try:
            while True:
                reply = await requests.get()
                try:
                    if iterator is None:  # created here, in this task and its context
                        iterator = self._factory()
                    item = await iterator.__anext__()
                except StopAsyncIteration:
                    reply.set_result(_Exhausted())
                    return
                except asyncio.CancelledError:
                    reply.cancel()
                    raise
                except Exception as exc:  # the caller re-raises it; the task ends quietly
                    reply.set_exception(exc)
                    return
                reply.set_result(item)
        finally:
            aclose = getattr(iterator, "aclose", None)  # plain async iterators may lack it
            if aclose is not None:
                await aclose()
            while not requests.empty():  # requests that raced with the end
                requests.get_nowait().set_result(_Exhausted())


def _wait_for(future: concurrent.futures.Future[T]) -> T:
    # Wait in slices: a wait without timeout cannot be interrupted by Ctrl-C on every platform.
    # Wait on a private lock that the thread completing the future releases, never on the
    # future's own lock: Ctrl-C can interrupt this thread between Python-level acquire and
    # release (concurrent.futures.wait takes the future's lock twice per slice), and a lock left
    # held would block the loop thread forever when it sets the result.
    wake = _thread.allocate_lock()
    wake.acquire()
    future.add_done_callback(lambda _: wake.release())
    while not wake.acquire(timeout=_WAIT_SLICE):
        pass
    return future.result()


def _transfer(task: asyncio.Task[T], result: concurrent.futures.Future[T]) -> None:
    if task.cancelled():
        result.set_exception(asyncio.CancelledError())
    elif (exc := task.exception()) is not None:
        result.set_exception(exc)
    else:
        result.set_result(task.result())


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _as_coroutine(
    awaitable: Awaitable[T] | Callable[[], Awaitable[T]],
) -> Coroutine[object, None, T]:
    made = awaitable() if callable(awaitable) else awaitable
    if asyncio.iscoroutine(made):
        return cast(Coroutine[object, None, T], made)
    return _await(made)


def _close(awaitable: object) -> None:
    if asyncio.iscoroutine(awaitable):
        awaitable.close()  # never awaited on purpose: no "was never awaited" warning


def _refuse_on_own_loop(awaitable: object, async_name: str, *, iterating: bool = False) -> None:
    if not _LOOP.is_current_thread():
        return  # another thread's running loop is blocked while we wait: allowed (ADR-024)
    _close(awaitable)
    raise ConfigurationError(_running_loop_message(async_name, iterating=iterating))


def _running_loop_message(async_name: str, *, iterating: bool) -> str:
    owner, _, method = async_name.rpartition(".")
    sync_method = "__call__" if method == "acall" else method.removeprefix("a")
    instance = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", owner).lower()
    sync_name = f"{owner}.{sync_method}" if owner else sync_method
    target = f"{instance}.{method}" if owner else method
    use = f"async for ... in {target}(...)" if iterating else f"await {target}(...)"
    return (
        f"{sync_name} cannot run on typedspy's own event loop (code typedspy runs there, "
        f"such as a module's aforward or an async tool); use `{use}`"
        " (blocking that loop would wait for itself)"
    )
