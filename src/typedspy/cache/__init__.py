"""Response caches: an in-memory LRU and a SQLite file, keyed by the request as sent."""

from typedspy.cache._base import Cache, CacheMode
from typedspy.cache._key import cache_key, embedding_key, key_material
from typedspy.cache._memory import MemoryCache
from typedspy.cache._sqlite import SQLiteCache

__all__ = [
    "Cache",
    "CacheMode",
    "MemoryCache",
    "SQLiteCache",
    "cache_key",
    "embedding_key",
    "key_material",
]
