"""`MemoryCache`: an in-process LRU of completions."""

from __future__ import annotations

import threading
from collections import OrderedDict

from typedspy.cache._base import Cache

__all__ = ["MemoryCache"]


class MemoryCache(Cache):
    """An in-memory LRU response cache for this process.

    Example:
        ```python
        ts.configure(cache=ts.MemoryCache(max_entries=10_000))
        ```

    Args:
        max_entries: Entries kept; the least recently used are dropped first.
        ttl: Seconds an entry stays valid; ``None`` for ever.
    """

    def __init__(self, *, max_entries: int | None = 10_000, ttl: float | None = None) -> None:
        super().__init__(ttl=ttl, max_entries=max_entries)
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, str]] = OrderedDict()

    def clear(self) -> None:
        """Remove every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def _read(self, key: str, oldest: float) -> str | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            if found[0] < oldest:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return found[1]

    def _write(self, key: str, text: str, now: float) -> None:
        with self._lock:
            self._entries[key] = (now, text)
            self._entries.move_to_end(key)
            while self.max_entries is not None and len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __repr__(self) -> str:
        return f"MemoryCache(entries={len(self)}, max_entries={self.max_entries}, ttl={self.ttl})"
