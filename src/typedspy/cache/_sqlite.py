"""`SQLiteCache`: a persistent response cache in one SQLite file (stdlib ``sqlite3``).

Entries are JSON text in a plain table, readable with any SQLite tool; nothing is pickled
(reference/peers.md: DSPy's pickled ``diskcache`` entries, CVE-2025-69872). The file is opened
in WAL mode with a busy timeout, so several processes can read and write one file at once:
readers never block, and writers wait for each other instead of failing. Every entry is
committed as soon as its reply arrives, so a batch killed half-way keeps what it finished.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time

from typedspy.cache._base import Cache
from typedspy.errors import ConfigurationError

__all__ = ["SQLiteCache"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses ("
    " key TEXT PRIMARY KEY, created REAL NOT NULL, accessed REAL NOT NULL, entry TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS responses_accessed ON responses (accessed)",
)


class SQLiteCache(Cache):
    """A response cache in a SQLite file, shared by processes and kept across runs.

    It doubles as a record/replay cassette: record once against a real endpoint with the
    default mode, then run tests with ``ts.context(cache_mode="replay")``, which answers
    from the file only and never sends a request.

    Example:
        ```python
        ts.configure(cache=ts.SQLiteCache("responses.sqlite3", ttl=7 * 24 * 3600))
        ```

    Args:
        path: The database file (created with its table when missing).
        max_entries: Entries kept; the least recently used go first. ``None``: no limit.
        ttl: Seconds an entry stays valid; ``None`` for ever.
        busy_timeout: Seconds a writer waits for another process's write to finish.

    Raises:
        ConfigurationError: The file cannot be opened as a SQLite database.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_entries: int | None = None,
        ttl: float | None = None,
        busy_timeout: float = 30.0,
    ) -> None:
        super().__init__(ttl=ttl, max_entries=max_entries)
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.DatabaseError as exc:
            raise ConfigurationError(f"SQLiteCache({self.path!r}): {exc}") from exc

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._db.execute("DELETE FROM responses")

    def purge_expired(self) -> int:
        """Delete entries older than ``ttl``; returns how many went."""
        if self.ttl is None:
            return 0
        with self._lock:
            cursor = self._db.execute(
                "DELETE FROM responses WHERE created < ?", (self._oldest_valid(),)
            )
            return cursor.rowcount

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._db.close()

    def __len__(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM responses").fetchone()
        return int(row[0])

    def _read(self, key: str, oldest: float) -> str | None:
        with self._lock:
            row = self._db.execute(
                "SELECT entry FROM responses WHERE key = ? AND created >= ?", (key, oldest)
            ).fetchone()
            if row is not None and self.max_entries is not None:  # LRU order matters only then
                self._db.execute(
                    "UPDATE responses SET accessed = ? WHERE key = ?", (time.time(), key)
                )
        return None if row is None else str(row[0])

    def _write(self, key: str, text: str, now: float) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, created, accessed, entry) "
                "VALUES (?, ?, ?, ?)",
                (key, now, now, text),
            )
            if self.max_entries is not None:
                self._db.execute(
                    "DELETE FROM responses WHERE key IN (SELECT key FROM responses "
                    "ORDER BY accessed DESC LIMIT -1 OFFSET ?)",
                    (self.max_entries,),
                )

    def __repr__(self) -> str:
        return f"SQLiteCache({self.path!r}, max_entries={self.max_entries}, ttl={self.ttl})"
