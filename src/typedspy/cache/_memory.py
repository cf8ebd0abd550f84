"""`MemoryCache`: an in-process LRU of completions, bounded in entries and in bytes."""

from __future__ import annotations

import threading
from collections import OrderedDict

from typedspy.cache._base import Cache, StoreFailure
from typedspy.errors import check_int

__all__ = ["MemoryCache"]

DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class MemoryCache(Cache):
    """An in-memory LRU response cache for this process.

    Example:
        ```python
        ts.configure(cache=ts.cache.MemoryCache(max_entries=10_000))
        ```

    Args:
        max_entries: Entries kept; the least recently used are dropped first.
        max_bytes: Bytes of entry text (UTF-8 JSON) kept, 256 MiB by default; the least
            recently used are dropped first, and a larger entry than this is not stored.
            ``None``: no limit.
        ttl: Seconds an entry stays valid; ``None`` for ever.

    Raises:
        ConfigurationError: A limit that is not a positive number.
    """

    def __init__(
        self,
        *,
        max_entries: int | None = 10_000,
        max_bytes: int | None = DEFAULT_MAX_BYTES,
        ttl: float | None = None,
    ) -> None:
        super().__init__(ttl=ttl, max_entries=max_entries)
        check_int("MemoryCache", "max_bytes", max_bytes)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, str, int]] = OrderedDict()
        self._bytes = 0

    @property
    def bytes(self) -> int:
        """Bytes of entry text held now."""
        return self._bytes

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    async def _read(self, key: str, oldest: float) -> str | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] < oldest:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return found[1]

    async def _write(self, key: str, text: str, now: float) -> None:
        size = len(text) if text.isascii() else len(text.encode())
        if self.max_bytes is not None and size > self.max_bytes:
            raise StoreFailure(f"the entry is larger than max_bytes={self.max_bytes}")
        with self._lock:
            self._drop(key)
            self._entries[key] = (now, text, size)
            self._bytes += size
            while (self.max_entries is not None and len(self._entries) > self.max_entries) or (
                self.max_bytes is not None and self._bytes > self.max_bytes
            ):
                self._drop(next(iter(self._entries)))

    def _drop(self, key: str) -> None:
        found = self._entries.pop(key, None)
        if found is not None:
            self._bytes -= found[2]

    def __repr__(self) -> str:
        return (
            f"MemoryCache(entries={len(self)}, max_entries={self.max_entries}, "
            f"max_bytes={self.max_bytes}, ttl={self.ttl})"
        )
