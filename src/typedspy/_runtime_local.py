"""Each thread's own event loop: sync calls made where no event loop runs (ADR-049).

A synchronous call made from a thread that runs no event loop runs its coroutine on that
thread's own loop, created on first use and reused by every later sync call of the thread
(pooled connections stay bound to the loop that opened them, so a loop per call would not do).
The loop runs only while a sync call of its thread is in progress, and nothing but that call's
tasks runs on it; no thread hand-off is made. The one exception is a sync stream started here
and consumed (or closed) on another thread, as a web server's thread pool does: the thread
waiting for its next item runs this loop in turn (`_Loop.take`), one thread at a time, so a
call of this thread meanwhile waits for that item, and the other way round.

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
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from typedspy._runtime_thread import WAIT_SLICE, as_coroutine, finish

__all__ = [
    "finish_own_loop",
    "is_root",
    "loop_running",
    "own_loop",
    "own_loop_running",
    "run_here",
]

T = TypeVar("T")


class _Loop:
    """A thread's loop, the seat of its sync calls; finished and closed when the thread ends.

    Whichever thread waits for the loop runs it, one thread at a time (`_Loop.take`): its
    own thread during its sync calls, or another thread consuming a sync stream this thread
    started (a web server's thread pool calls ``next()`` from any free worker). As the seat of
    a `typedspy._runtime.Driver`, its calls run at once when the loop is idle or this thread
    runs it, and are queued to it otherwise; its caller waits by running the loop.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.roots: set[asyncio.Task[Any]] = set()
        self.future = self.loop.create_future
        self._turn = threading.Lock()  # held by the thread running the loop
        self._driver: int | None = None  # that thread, if one does
        _tick(self.loop, contextvars.Context())

    def take(self, until: asyncio.Future[Any] | None = None) -> bool | None:
        """Take the turn to run the loop, waiting while another thread holds it.

        Returns True when taken (`give` it back), None when this thread already holds it
        (asyncio then refuses to run the loop again, as it always did), False when ``until``
        got done meanwhile: its task ran in the other thread's turn, so a thread the loop's
        own call waits for never waits for that call.
        """
        me = threading.get_ident()
        if self._driver == me:
            return None
        while not self._turn.acquire(timeout=WAIT_SLICE):
            if until is not None and until.done():
                return False
        self._driver = me
        return True

    def give(self) -> None:
        """Give back the turn `take` took."""
        self._driver = None
        self._turn.release()

    def wait(self, future: asyncio.Future[T]) -> T:
        """Run the loop until ``future`` is done (in this thread's turn); its result."""
        took = self.take(future)
        if took is False:
            return future.result()
        try:
            return self.loop.run_until_complete(future)
        finally:
            if took:
                self.give()

    def call(self, function: Callable[..., object], *args: object) -> None:
        """Run ``function`` on the loop: at once when this thread runs it or it is idle."""
        if self._driver == threading.get_ident():
            function(*args)
        elif self._turn.acquire(blocking=False):  # idle: nothing else touches it meanwhile
            try:
                function(*args)
            finally:
                self._turn.release()
        else:  # run by the thread running the loop
            self.loop.call_soon_threadsafe(function, *args)

    def spawn(
        self, coro: Coroutine[Any, None, None], ctx: contextvars.Context
    ) -> asyncio.Task[None]:
        task = ctx.run(self.loop.create_task, coro)
        self.roots.add(task)  # a stream's consuming task is a root task too
        task.add_done_callback(self.roots.discard)
        return task

    def can_wait(self) -> bool:
        # Not while this thread runs this loop (it ends in that call) or another one.
        return self._driver != threading.get_ident() and not loop_running()

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


def _tick(loop: asyncio.AbstractEventLoop, context: contextvars.Context) -> None:
    """Wake ``loop`` every slice while it runs, so a pending Ctrl-C is noticed while it waits.

    A wait without timeout is not interrupted by Ctrl-C on every platform (nor by
    ``_thread.interrupt_main``), as in `typedspy._runtime_thread`. The loop runs only during
    its thread's sync calls, so between them this costs nothing. It runs in an empty context of
    its own loop's (holding none of a caller's; a context is entered by one thread at a time).
    """
    loop.call_later(WAIT_SLICE, _tick, loop, context, context=context)


class _Local(threading.local):
    current: _Loop | None = None


_local = _Local()
_main_exit_registered = False


def own_loop() -> _Loop:
    """This thread's own loop, created on first use (again after it was finished)."""
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
        atexit.register(finish_own_loop)


def finish_own_loop() -> None:
    """Finish and close this thread's own loop, if a sync call made one (the thread ends).

    Left to the garbage collector, a dead thread's loop may be collected with its own
    self-pipe already closed (they form a cycle): closing it then fails, and its sockets and
    the loop itself are reported unclosed.
    """
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
    """Run a coroutine on this thread's own loop (no loop may be running here) to its end.

    On Ctrl-C the task is cancelled and run to its end before the `KeyboardInterrupt` goes on;
    so on a `SystemExit` a task of the call raised (a tool calling ``sys.exit``), which asyncio
    lets out of the loop as it does Ctrl-C: nothing of the call is left to run in later calls.
    """
    here = own_loop()
    ctx = contextvars.copy_context()
    took = here.take()
    try:
        task = ctx.run(here.loop.create_task, ctx.run(as_coroutine, awaitable))
        here.roots.add(task)
        try:
            return here.loop.run_until_complete(task)
        except (KeyboardInterrupt, SystemExit):
            if not task.done():
                task.cancel()
                try:
                    here.loop.run_until_complete(task)
                except (Exception, asyncio.CancelledError, SystemExit):
                    pass  # the first one is the news
            raise
        finally:
            here.roots.discard(task)
    finally:
        if took:
            here.give()


def loop_running() -> bool:
    """Whether this thread is running an event loop (any loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
