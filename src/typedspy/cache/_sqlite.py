"""`SQLiteCache`: a persistent response cache in one SQLite file (stdlib ``sqlite3``).

Entries are JSON text in a plain table, readable with any SQLite tool; nothing is pickled
(reference/peers.md: DSPy's pickled ``diskcache`` entries, CVE-2025-69872). The file is opened
in WAL mode with a busy timeout, so several processes can read and write one file at once:
readers never block, and writers wait for each other instead of failing.

All I/O runs on the cache's own thread (`Worker`), never on an event loop: a lock another
process holds stalls no task (ADR-055). Reads and writes are awaited off the loop, in the
order they were made (a read sees the writes queued before it); a write is committed with the
other writes queued meanwhile, in one transaction, so calls finishing under a held lock wait
one busy timeout, not one each. A write that fails (the file locked past the busy timeout, a
corrupt page) is logged and the reply stays unstored; a read that fails is a miss.
``close()`` (or the end of a ``with`` block, or garbage collection, or interpreter exit)
commits what is queued and closes the connection, which checkpoints the WAL: no ``-wal`` or
``-shm`` file is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from typedspy.cache._base import Cache, FailureLog, StoreFailure
from typedspy.errors import CacheError, ConfigurationError

__all__ = ["SQLiteCache", "Worker"]

_T = TypeVar("_T")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, created REAL NOT NULL, accessed REAL NOT NULL, entry TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS responses_accessed ON responses (accessed)",
)
_CLOSE_GRACE = 10.0  # seconds past the busy timeout that close() waits for the thread
_MAX_BUSY = 2_147_483  # seconds: SQLite takes the busy timeout in milliseconds, a C int


class SQLiteCache(Cache):
    """A response cache in a SQLite file, shared by processes and kept across runs.

    It doubles as a record/replay cassette: record once against a real endpoint with the
    default mode, then run tests with ``ts.context(cache_mode="replay")``, which answers
    from the file only and never sends a request.

    Close it when done (``close()`` or a ``with`` block); one left open is closed when it is
    garbage-collected or at interpreter exit.

    Example:
        ```python
        ts.configure(cache=ts.cache.SQLiteCache("responses.sqlite3", ttl=7 * 24 * 3600))
        ```

    Args:
        path: The database file (created with its table when missing).
        max_entries: Entries kept; the least recently used go first. ``None``: no limit.
        ttl: Seconds an entry stays valid; ``None`` for ever.
        busy_timeout: Seconds a write waits for another process's write to finish; past
            it, the write is skipped with a logged warning (the reply is still returned).

    Raises:
        ConfigurationError: The file cannot be opened as a SQLite database, or a bad
            ``busy_timeout``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int | None = None,
        ttl: float | None = None,
        busy_timeout: float = 30.0,
    ) -> None:
        self.path = os.fspath(path)
        super().__init__(ttl=ttl, max_entries=max_entries, name=f"SQLiteCache({self.path!r})")
        if isinstance(busy_timeout, bool) or not (
            isinstance(busy_timeout, (int, float)) and 0 <= busy_timeout <= _MAX_BUSY
        ):
            raise ConfigurationError(
                f"SQLiteCache busy_timeout={busy_timeout!r}: expected seconds from 0 to "
                f"{_MAX_BUSY} (SQLite counts it in milliseconds, as a C int)"
            )
        self.busy_timeout = float(busy_timeout)
        self._file = _File(self.path, self.busy_timeout, max_entries, self._failures)
        self._closer = weakref.finalize(self, self._file.close)

    @property
    def closed(self) -> bool:
        """Whether `close` has run (reads are then misses, writes skipped)."""
        return not self._closer.alive

    def close(self) -> None:
        """Commit the queued writes, close the connection and end the cache's thread."""
        self._closer()

    def __enter__(self) -> SQLiteCache:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def clear(self) -> None:
        """Remove every entry.

        Raises:
            CacheError: The file could not be written.
        """
        self._maintain("clear", self._file.clear)

    def purge_expired(self) -> int:
        """Delete entries older than ``ttl``; returns how many went.

        Raises:
            CacheError: The file could not be written.
        """
        if self.ttl is None:
            return 0
        oldest = self._oldest_valid()
        return self._maintain("purge_expired", lambda: self._file.purge(oldest))

    def __len__(self) -> int:
        return self._maintain("len", self._file.count)

    def _maintain(self, what: str, run: Callable[[], _T]) -> _T:
        try:
            return run()
        except StoreFailure as exc:
            raise CacheError(f"{self._failures.name}.{what}: {exc}") from exc

    async def _read(self, key: str, oldest: float) -> str | None:
        return await self._file.read(key, oldest)

    async def _write(self, key: str, text: str, now: float) -> None:
        # Shielded: the transaction is shared by every write queued with this one.
        await asyncio.shield(asyncio.wrap_future(self._file.write(key, text, now)))

    def __repr__(self) -> str:
        return f"SQLiteCache({self.path!r}, max_entries={self.max_entries}, ttl={self.ttl})"


class _File:
    """The connection, the thread it lives on, and the writes queued for it.

    Kept apart from `SQLiteCache` so that the cache's finalizer can close it: nothing here
    refers back to the cache.
    """

    def __init__(
        self, path: str, busy_timeout: float, max_entries: int | None, failures: FailureLog
    ) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._max_entries = max_entries
        self._failures = failures
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[float, str]] = {}  # key: (created, entry text)
        self._touched: dict[str, float] = {}  # key: last read (LRU order, with max_entries)
        self._flush_queued: Future[None] | None = None  # the next transaction, not started
        self._closed = False
        self._db: sqlite3.Connection | None = None  # used on the worker thread only
        self._worker: Worker | None = Worker(f"typedspy-cache {os.path.basename(path)}")
        try:
            self._worker.call(self._open)
        except BaseException as exc:
            self._worker.stop(_CLOSE_GRACE)
            if isinstance(exc, (sqlite3.Error, ValueError)):  # ValueError: a NUL in the path
                raise ConfigurationError(f"SQLiteCache({path!r}): {exc}") from exc
            raise
        _LIVE.add(self)

    # -- on the calling thread -----------------------------------------------------------

    async def read(self, key: str, oldest: float) -> str | None:
        return await self._ready().acall(lambda: self._select(key, oldest))

    def write(self, key: str, text: str, now: float) -> Future[None]:
        """Queue the entry; the future is done once its transaction has ended (never fails).

        Writes queued while a transaction runs go together into the next one.
        """
        worker = self._ready()
        with self._lock:
            if self._closed:
                raise StoreFailure("the cache is closed")
            self._pending[key] = (now, text)
            return self._queue_flush(worker)

    def count(self) -> int:
        sql = "SELECT count(*) FROM responses"
        return self._ready().call(lambda: int(self._flushed(sql).fetchone()[0]))

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()
            self._touched.clear()
        self._ready().call(lambda: self._flushed("DELETE FROM responses"))

    def purge(self, oldest: float) -> int:
        sql = "DELETE FROM responses WHERE created < ?"
        return self._ready().call(lambda: self._flushed(sql, oldest).rowcount)

    def close(self) -> None:
        """Commit the queued writes, close the connection, end the thread (once: a finalizer)."""
        with self._lock:
            self._closed = True
            worker = self._worker
        _LIVE.discard(self)
        if worker is not None:
            worker.submit(self._shutdown)
            worker.stop(self._busy_timeout + _CLOSE_GRACE)

    def forked(self) -> None:
        """In a forked child: forget the parent's thread, connection and queued writes."""
        self._lock = threading.Lock()  # the parent's may have been held by a thread now gone
        if self._db is not None:
            _ABANDONED.append(self._db)  # the parent's: never used nor closed in the child
        self._db = None
        self._worker = None  # a new thread and connection on first use
        self._pending.clear()
        self._touched.clear()
        self._flush_queued = None

    def _ready(self) -> Worker:
        with self._lock:
            if self._closed:
                raise StoreFailure("the cache is closed")
            if self._worker is None:  # first use in a forked child
                self._worker = Worker(f"typedspy-cache {os.path.basename(self._path)}")
                self._worker.submit(self._open)  # a failure shows in the first job's result
            return self._worker

    def _queue_flush(self, worker: Worker) -> Future[None]:  # with self._lock held
        if self._flush_queued is None:
            self._flush_queued = worker.submit(self._flush)
        return self._flush_queued

    # -- on the worker thread ------------------------------------------------------------

    def _open(self) -> None:
        # Two processes opening one new file at once: switching it to WAL (or creating the
        # schema) can report "database is locked" at once, without waiting in the busy
        # handler. Tried again until busy_timeout has passed; then the error stands.
        busy = self._busy_timeout
        give_up = time.monotonic() + busy
        pause = 0.01
        while True:
            try:
                self._db = self._connected(busy)
                return
            except sqlite3.OperationalError as exc:
                locked = "locked" in str(exc) or "busy" in str(exc)
                if not locked or time.monotonic() + pause > give_up:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.5)

    def _connected(self, busy: float) -> sqlite3.Connection:
        db = sqlite3.connect(self._path, timeout=busy, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(busy * 1000)}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                db.execute(statement)
        except BaseException:
            db.close()
            raise
        return db

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreFailure("the file could not be opened")
        return self._db

    def _select(self, key: str, oldest: float) -> str | None:
        try:
            row = (
                self._connection()
                .execute(
                    "SELECT entry FROM responses WHERE key = ? AND created >= ?", (key, oldest)
                )
                .fetchone()
            )
        except sqlite3.Error as exc:
            raise StoreFailure(str(exc)) from exc
        if row is None:
            return None
        if self._max_entries is not None and self._worker is not None:
            with self._lock:  # LRU order matters only then; written by a flush, not here
                self._touched[key] = time.time()
                self._queue_flush(self._worker)
        return str(row[0])

    def _flushed(self, sql: str, *params: object) -> sqlite3.Cursor:
        """Commit the queued writes, then run ``sql``."""
        self._flush()
        try:
            return self._connection().execute(sql, params)
        except sqlite3.Error as exc:
            raise StoreFailure(str(exc)) from exc

    def _flush(self) -> None:
        with self._lock:
            writes, self._pending = self._pending, {}
            touches, self._touched = self._touched, {}
            self._flush_queued = None
        if not writes and not touches:
            return
        try:
            self._commit(writes, touches)
        except (sqlite3.Error, StoreFailure) as exc:
            stored = f"{len(writes)} entries" if len(writes) != 1 else "an entry"
            self._failures.report(
                f"writing {stored}",
                str(exc),
                "the replies were returned, not stored",
                failures=max(1, len(writes)),
            )

    def _commit(self, writes: dict[str, tuple[float, str]], touches: dict[str, float]) -> None:
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")  # waits up to the busy timeout for other writers
        try:
            db.executemany(
                "INSERT OR REPLACE INTO responses (key, created, accessed, entry) "
                "VALUES (?, ?, ?, ?)",
                [(key, created, created, text) for key, (created, text) in writes.items()],
            )
            db.executemany(
                "UPDATE responses SET accessed = ? WHERE key = ?",
                [(accessed, key) for key, accessed in touches.items()],
            )
            if self._max_entries is not None:
                db.execute(
                    "DELETE FROM responses WHERE key IN (SELECT key FROM responses "
                    "ORDER BY accessed DESC LIMIT -1 OFFSET ?)",
                    (self._max_entries,),
                )
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            raise

    def _shutdown(self) -> None:
        self._flush()
        db, self._db = self._db, None
        if db is not None:
            try:
                db.close()  # the last connection to close checkpoints and removes the WAL
            except sqlite3.Error as exc:
                self._failures.report("closing the file", str(exc), "left to SQLite")


_Job = tuple[Callable[[], Any], "Future[Any]"]


class Worker:
    """A daemon thread running submitted functions one at a time, in order.

    A SQLite call may wait for another process's lock (up to the busy timeout): run on an event
    loop, that wait stalls every task of the loop (issue 21 measured 2.85 s). A `Worker` is the
    one thread that touches its store's connection (SQLite connections belong to the thread that
    made them), so the connection needs no lock and jobs run in the order they were submitted.
    Callers wait for a job's `concurrent.futures.Future`: async code through
    `asyncio.wrap_future`, from any loop (a sync call runs on its own thread's loop, ADR-049),
    sync code by blocking on it.

    The thread is a daemon (it never holds the interpreter open) and has its own queue rather
    than a `ThreadPoolExecutor`'s, whose workers are stopped before ``atexit`` handlers run: a
    cache closed at exit still needs its thread then.

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


_LIVE: weakref.WeakSet[_File] = weakref.WeakSet()
_ABANDONED: list[Any] = []  # connections inherited through fork(), kept so none is closed


def _after_fork_in_child() -> None:
    for file in list(_LIVE):
        file.forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
