"""The sync bridge: run typedspy's async code from synchronous callers.

All of typedspy is implemented once, in async code. Synchronous entry points (``Predict.__call__``,
``LM.__call__``, ...) hand their coroutine to `run_sync` (or an async iterator to `iterate_sync`):

* from a thread that runs no event loop (a script, a web worker thread), it runs on that
  thread's own loop, reused by the thread's later sync calls (`typedspy._runtime_local`,
  ADR-049); the call's root task sends its requests with the SDK's blocking client;
* from a thread that runs its own event loop (a Jupyter cell, a sync function called from
  async code), it runs on typedspy's background loop in a daemon thread while the caller's loop
  is blocked until it is done (`typedspy._runtime_thread`, ADR-024).

The caller's `contextvars` are copied into the coroutine, so ``with ts.context(...)`` in the
calling thread applies to the work. Only a synchronous call from code typedspy itself runs on
one of its loops is refused: it would wait for itself.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from typing import TypeVar

from typedspy._runtime_local import is_root, iterate_here, own_loop_running, run_here
from typedspy._runtime_thread import (
    LOOP,
    await_on_thread,
    close_unawaited,
    iterate_on_thread,
    relay_from_thread,
    run_on_thread,
)
from typedspy.errors import ConfigurationError

__all__ = [
    "await_on_thread",
    "background_loop",
    "background_started",
    "is_root",
    "iterate_sync",
    "on_own_loop",
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
    waiting cancels the coroutine.

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
    _refuse_on_own_loop(awaitable, async_name)
    if not _loop_running():
        return run_here(awaitable)
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
    _refuse_on_own_loop(None, async_name, iterating=True)
    if not _loop_running():
        return iterate_here(factory)
    return iterate_on_thread(factory)


def run_in_background(
    awaitable: Awaitable[T] | Callable[[], Awaitable[T]], *, async_name: str
) -> T:
    """`run_sync`, but on typedspy's background loop whatever thread calls.

    For work whose result must outlive the call on a loop that always runs (an MCP connection
    entered with a sync ``with``), where a thread's own loop runs only during its sync calls.
    """
    _refuse_on_own_loop(awaitable, async_name)
    return run_on_thread(awaitable)


def background_loop() -> asyncio.AbstractEventLoop | None:
    """The background loop, if it was started (None before the first call that needs it)."""
    return LOOP.current()


def background_started() -> bool:
    """True once typedspy's background loop runs (a sync call was made inside a running loop)."""
    return LOOP.started()


def on_own_loop() -> bool:
    """True when the running loop is one of typedspy's own (a sync call runs on it)."""
    return own_loop_running() or LOOP.is_current_thread()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _refuse_on_own_loop(awaitable: object, async_name: str, *, iterating: bool = False) -> None:
    if not on_own_loop():
        return  # another thread's running loop is blocked while we wait: allowed (ADR-024)
    close_unawaited(awaitable)
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
