"""The sync bridge: run typedspy's async code from synchronous callers.

All of typedspy is implemented once, in async code. Synchronous entry points (``Predict.__call__``,
``LM.__call__``, ...) hand their coroutine to `run_sync` (or an async iterator to `iterate_sync`):

* from a thread that runs no event loop (a script, a web worker thread), it runs on that
  thread's own loop, reused by the thread's later sync calls (`typedspy._runtime_local`,
  ADR-049); the call's root task sends its requests with the SDK's blocking client;
* from a thread that runs its own event loop (a Jupyter cell, a sync function called from
  async code), it runs on typedspy's background loop in a daemon thread while the caller's loop
  is blocked until it is done (`typedspy._runtime_thread`, ADR-024).

An async iterator is consumed by one task, a `Driver`'s, on either loop: only where the task
runs and how the caller waits differ (the loop's `Seat`).

The caller's `contextvars` are copied into the coroutine, so ``with ts.context(...)`` in the
calling thread applies to the work. Only a synchronous call from code typedspy itself runs on
one of its loops is refused: it would wait for itself.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import os
import re
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator
from typing import Any, Generic, Protocol, TypeVar

from typedspy._runtime_local import (
    finish_own_loop,
    is_root,
    loop_running,
    own_loop,
    own_loop_running,
    run_here,
)
from typedspy._runtime_thread import (
    LOOP,
    BackgroundSeat,
    await_on_thread,
    close_unawaited,
    run_on_thread,
)
from typedspy.errors import ConfigurationError

__all__ = [
    "await_on_thread",
    "background_loop",
    "call_user",
    "in_thread",
    "is_root",
    "iterate_sync",
    "own_cancellation",
    "own_loop_running",
    "relay_from_thread",
    "run_in_background",
    "run_sync",
]

T = TypeVar("T")


def run_sync(awaitable: Awaitable[T] | Callable[[], Awaitable[T]], *, async_name: str) -> T:
    """Run a coroutine to its end from synchronous code and return its result (see the module).

    The coroutine runs in a copy of the calling thread's `contextvars` context. Its exception, if
    any, is raised here with its original type and traceback. A `KeyboardInterrupt` while
    waiting cancels the coroutine, and so does a cancellation of the task that called while its
    loop is blocked here (Ctrl-C under ``asyncio.run``), raised as `asyncio.CancelledError`.

    Args:
        awaitable: The coroutine to run, or a zero-argument callable that creates it (preferred:
            nothing is created when the call is refused).
        async_name: The async method to suggest when called from typedspy's own loop, as
            ``"Owner.amethod"`` (for example ``"Predict.acall"``).

    Returns:
        What the coroutine returned.

    Raises:
        ConfigurationError: Called from one of typedspy's loops itself (in code that typedspy
            runs there), where waiting would deadlock; the coroutine is closed without running.
    """
    if not loop_running():  # so not one of typedspy's loops either
        return run_here(awaitable)
    _refuse_on_own_loop(awaitable, async_name)
    return run_on_thread(awaitable)


def iterate_sync(
    factory: Callable[[], AsyncIterator[T]], *, async_name: str
) -> Generator[T, None, None]:
    """Drive an async iterator from synchronous code, one item per ``next()``.

    The async iterator is created by ``factory`` inside one task (on the thread's own loop, or
    the background loop as for `run_sync`), in a copy of the caller's `contextvars` context,
    and consumed by that same task, so resources it
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
        ConfigurationError: Called from one of typedspy's loops itself.
    """
    if not loop_running():
        return iter(Driver(factory, own_loop(), async_name))
    _refuse_on_own_loop(None, async_name, iterating=True)
    return iter(Driver(factory, BackgroundSeat(), async_name))


def run_in_background(
    awaitable: Awaitable[T] | Callable[[], Awaitable[T]], *, async_name: str
) -> T:
    """`run_sync`, but on typedspy's background loop whatever thread calls.

    For work whose result must outlive the call on a loop that always runs (an MCP connection
    entered with a sync ``with``), where a thread's own loop runs only during its sync calls.
    """
    _refuse_on_own_loop(awaitable, async_name)
    return run_on_thread(awaitable)


async def relay_from_thread(factory: Callable[[], AsyncIterator[T]]) -> AsyncIterator[T]:
    """Iterate, from another event loop, an async iterator consumed on the background loop."""
    driver = Driver(factory, BackgroundSeat())
    try:
        while True:
            item = await asyncio.wrap_future(driver.ask())
            if isinstance(item, _Exhausted):
                return
            yield item
    finally:
        driver.close(wait=False)
        if driver.started:
            await asyncio.wrap_future(driver.finished)


async def in_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, a user's sync code, in a worker thread with the `contextvars`.

    As `asyncio.to_thread` (at most as many at once on a loop as its default executor runs),
    but in a daemon thread of its own, and what ``fn`` raises reaches the caller as what it is.
    A default executor's thread held up Ctrl-C under ``asyncio.run`` (which waits for them) and
    the interpreter's exit (which joins them) for as long as a sync tool ran; a daemon thread
    cannot be stopped either, but nothing waits for it once its call is cancelled. The
    exceptions a future cannot carry come as a `RuntimeError` naming them, from them, as a
    coroutine's `StopIteration` does (PEP 479). A `StopIteration` left the awaiting task
    waiting for ever; a `CancelledError` (``concurrent.futures``' too, which asyncio converts)
    read as the caller's own cancellation, and a `GeneratorExit` as its closing.
    """
    ctx = contextvars.copy_context()
    async with _slots():
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # so a cancelled wait leaves it to the thread
        work = threading.Thread(
            target=_fill,
            args=(future, lambda: ctx.run(_carried, fn, args, kwargs)),
            name="typedspy-worker",
            daemon=True,
        )
        work.start()
        return await asyncio.wrap_future(future)


# Each loop's `in_thread` slots; a loop's default executor has as many threads.
_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)
_SLOT_COUNT = min(32, (os.cpu_count() or 1) + 4)


def _slots() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(_SLOT_COUNT)
    return slots


def _fill(future: concurrent.futures.Future[T], fn: Callable[[], T]) -> None:
    try:
        future.set_result(fn())
    except BaseException as exc:  # as a ThreadPoolExecutor: the caller's to raise
        future.set_exception(exc)
    finally:  # the thread ends: the loop its sync typedspy calls ran on is closed now
        finish_own_loop()


async def call_user(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a user's sync or async callable, awaited to its result.

    A sync one runs `in_thread`, so it may make sync typedspy calls (they would be refused on
    typedspy's own loop) and never blocks the loop; an async one (a coroutine function, or an
    object whose ``__call__`` is one) runs on the loop. An awaitable result is awaited.
    """
    result = fn(*args, **kwargs) if _is_async(fn) else await in_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    # An object whose __call__ is async (inspect does not look there for instances).
    return not inspect.isfunction(fn) and inspect.iscoroutinefunction(type(fn).__call__)


# What `in_thread` re-raises as a RuntimeError: they mean something else past the thread.
_UNCARRIED = (
    StopIteration,
    GeneratorExit,
    asyncio.CancelledError,
    concurrent.futures.CancelledError,
)


def _carried(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    try:
        return fn(*args, **kwargs)
    except _UNCARRIED as exc:
        name = str(getattr(fn, "__qualname__", type(fn).__qualname__)).rpartition("<locals>.")[2]
        raise RuntimeError(_raised(name, exc)) from exc


def own_cancellation(name: str, exc: asyncio.CancelledError) -> RuntimeError:
    """The failure of ``name``, whose own code met ``exc`` (a future it awaited was cancelled).

    Such a `CancelledError` must not read as the running task's cancellation: it becomes a
    `RuntimeError` naming ``name``, from ``exc``.

    Raises:
        asyncio.CancelledError: ``exc``, when the running task is being cancelled (a
            deadline, the caller's cancel): then it is that cancellation.
    """
    task = asyncio.current_task()
    if task is None or task.cancelling():
        raise exc
    failure = RuntimeError(_raised(name, exc))
    failure.__cause__ = exc
    return failure


def _raised(name: str, exc: BaseException) -> str:
    """``"name raised KindOfError: message"`` (without the colon when there is no message)."""
    return f"{name} raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")


def background_loop() -> asyncio.AbstractEventLoop | None:
    """The background loop, if it was started (None before the first call that needs it)."""
    return LOOP.current()


def _refuse_on_own_loop(awaitable: object, async_name: str, *, iterating: bool = False) -> None:
    if not own_loop_running() and not LOOP.is_current_thread():  # not one of typedspy's loops
        return  # another thread's running loop is blocked while we wait: allowed (ADR-024)
    close_unawaited(awaitable)
    raise ConfigurationError(_running_loop_message(async_name, iterating=iterating))


def _refused(async_name: str) -> ConfigurationError:
    """Why a sync stream's ``next()`` cannot wait on this thread, which runs an event loop."""
    own = own_loop_running() or LOOP.is_current_thread()
    return ConfigurationError(_running_loop_message(async_name, iterating=True, own=own))


def _running_loop_message(async_name: str, *, iterating: bool, own: bool = True) -> str:
    owner, _, method = async_name.rpartition(".")
    sync_method = "__call__" if method == "acall" else method.removeprefix("a")
    instance = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", owner).lower()
    sync_name = f"{owner}.{sync_method}" if owner else sync_method
    target = f"{instance}.{method}" if owner else method
    use = f"async for ... in {target}(...)" if iterating else f"await {target}(...)"
    if not own:  # a sync stream started where no loop ran, read where one runs (ADR-097)
        return (
            f"{sync_name} cannot be read in a thread running an event loop: it was started "
            "where none ran, and its items come from that thread's own loop, which cannot run "
            f"inside another; start it where it is read, or use `{use}`"
        )
    return (
        f"{sync_name} cannot run on typedspy's own event loop (code typedspy runs there, "
        f"such as a module's aforward or an async tool); use `{use}`"
        " (blocking that loop would wait for itself)"
    )


class Seat(Protocol):
    """The loop a `Driver`'s task runs on, and how its caller outside that loop waits.

    This thread's own loop (`typedspy._runtime_local`) or the background loop
    (`typedspy._runtime_thread.BackgroundSeat`); its futures are of the kind its caller waits
    for (``asyncio`` or ``concurrent.futures``).
    """

    def call(self, function: Callable[..., object], /, *args: Any) -> object: ...  # on its thread

    def future(self) -> Any: ...  # for the loop's thread to complete, the caller to wait for

    def spawn(  # start a task (called on the loop's thread)
        self, coro: Coroutine[Any, None, None], ctx: contextvars.Context
    ) -> asyncio.Task[None]: ...

    def can_wait(self) -> bool: ...  # whether the caller may block until the task ends

    def wait(self, future: Any, /) -> Any: ...  # block until the future is done; its result


class _Exhausted:
    """Marks the end of the async iterator in a reply."""


class Driver(Generic[T]):
    """Owns one task that consumes an async iterator on a seat's loop, on request from outside.

    The iterator is created and consumed by that task, in a copy of the caller's context, so
    what it holds is opened and closed in one task; iterating the driver yields its items.
    """

    def __init__(self, factory: Callable[[], AsyncIterator[T]], seat: Seat, name: str = "") -> None:
        self._factory = factory
        self._seat = seat
        self._name = name  # the async method, as `iterate_sync` takes it
        self._ctx = contextvars.copy_context()
        self.started = False  # only touched by the caller
        self._task: asyncio.Task[None] | None = None  # only touched on the loop's thread
        self._requests: asyncio.Queue[Any] | None = None
        self.finished = seat.future()  # done once the task ended (the async iterator closed)

    def __iter__(self) -> Generator[T, None, None]:
        """A synchronous generator over the items; closing it closes the driver."""
        try:
            while not self.finished.done():
                try:
                    item = self._seat.wait(self.ask())
                except RuntimeError:  # the stream's own, or a loop this thread runs refused
                    if self._seat.can_wait():
                        raise
                    raise _refused(self._name) from None
                if isinstance(item, _Exhausted):
                    return
                yield item
        finally:
            self.close()

    def ask(self) -> Any:
        """Ask for the next item: a future of the seat's kind, completed on the loop's thread."""
        if not self.started:
            self.started = True
            self._seat.call(self._start)
        reply = self._seat.future()
        self._seat.call(self._request, reply)
        return reply

    def close(self, *, wait: bool = True) -> None:
        """Cancel the consuming task (which closes the async iterator) and wait for its end."""
        if not self.started or self.finished.done():
            return  # nothing was ever created, or it ended already
        self._seat.call(self._cancel)
        if wait and self._seat.can_wait():
            self._seat.wait(self.finished)

    def _start(self) -> None:
        self._requests = asyncio.Queue()
        self._task = self._seat.spawn(_consume(self._factory, self._requests), self._ctx)
        self._task.add_done_callback(lambda _: self.finished.set_result(None))

    def _request(self, reply: Any) -> None:
        if self._requests is None or self._task is None or self._task.done():
            reply.set_result(_Exhausted())
        else:
            self._requests.put_nowait(reply)

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()


async def _consume(factory: Callable[[], AsyncIterator[T]], requests: asyncio.Queue[Any]) -> None:
    """Consume the iterator ``factory`` makes, one item per reply future taken from ``requests``.

    The replies are futures (``concurrent.futures`` or ``asyncio``): an item, `_Exhausted` at
    the end, the iterator's exception, or cancelled with this task.
    """
    iterator: AsyncIterator[T] | None = None
    try:
        while True:
            reply = await requests.get()
            try:
                if iterator is None:  # created here, in this task and its context
                    iterator = factory()
                item = await iterator.__anext__()
            except StopAsyncIteration:
                reply.set_result(_Exhausted())
                return
            except asyncio.CancelledError:
                reply.cancel()
                raise
            except (Exception, KeyboardInterrupt, SystemExit) as exc:
                reply.set_exception(exc)  # the caller raises it; the task ends quietly
                return
            reply.set_result(item)
    finally:
        aclose = getattr(iterator, "aclose", None)  # plain async iterators may lack it
        if aclose is not None:
            await aclose()
        while not requests.empty():  # requests that raced with the end
            requests.get_nowait().set_result(_Exhausted())
