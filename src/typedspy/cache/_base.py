"""The response-cache interface and what an entry holds."""

from __future__ import annotations

import abc
import json
import time
from typing import Any, Literal, TypeVar

from typedspy._types import Usage
from typedspy.lm import EmbeddingResponse, LMResponse

__all__ = ["Cache", "CacheMode", "decode_entry", "encode_entry"]

_EMBEDDINGS = "embeddings"

_Found = TypeVar("_Found", LMResponse | None, EmbeddingResponse | None)

CacheMode = Literal["read_write", "read", "refresh", "replay", "off"]
"""How calls use the configured cache.

``"read_write"`` (default): answer from the cache, store what is fetched. ``"read"``: answer
from the cache, store nothing. ``"refresh"``: always fetch, overwrite the entry. ``"replay"``:
answer from the cache only; a miss is a `CacheMissError` and nothing is sent (a cassette).
``"off"``: ignore the cache."""


class Cache(abc.ABC):
    """A store of chat completions by request key; entries are JSON text, never pickles.

    Attributes:
        ttl: Seconds an entry stays valid; ``None`` for ever.
        max_entries: Entries kept; the least recently used go first. ``None``: no limit.
        hits: Lookups answered. misses: Lookups not answered.
    """

    def __init__(self, *, ttl: float | None = None, max_entries: int | None = None) -> None:
        from typedspy.errors import ConfigurationError

        if ttl is not None and not ttl > 0:
            raise ConfigurationError(f"cache ttl={ttl!r}: expected seconds > 0 or None")
        if max_entries is not None and (isinstance(max_entries, bool) or max_entries < 1):
            raise ConfigurationError(f"cache max_entries={max_entries!r}: expected >= 1 or None")
        self.ttl = ttl
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> LMResponse | None:
        """The cached response for ``key``, or ``None`` (missing, expired or unreadable)."""
        text = self._read(key, self._oldest_valid())
        return self._counted(decode_entry(text) if text is not None else None)

    def put(self, key: str, response: LMResponse) -> None:
        """Store ``response`` under ``key`` (replacing an older entry)."""
        self._write(key, encode_entry(response), time.time())

    def get_embeddings(self, key: str) -> EmbeddingResponse | None:
        """The cached ``/v1/embeddings`` reply for ``key``, or ``None``."""
        text = self._read(key, self._oldest_valid())
        return self._counted(_decode_embeddings(text) if text is not None else None)

    def put_embeddings(self, key: str, response: EmbeddingResponse) -> None:
        """Store an embeddings reply under ``key`` (its vectors and usage, as JSON)."""
        usage = response.usage
        entry = {
            _EMBEDDINGS: {
                "model": response.model,
                "vectors": response.vectors,
                "usage": [usage.prompt_tokens, usage.total_tokens],
            }
        }
        self._write(key, json.dumps(entry, separators=(",", ":")), time.time())

    @abc.abstractmethod
    def clear(self) -> None:
        """Remove every entry."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """How many entries are stored (expired ones included until evicted)."""

    @abc.abstractmethod
    def _read(self, key: str, oldest: float) -> str | None:
        """The entry's JSON text when it was written at or after ``oldest``."""

    @abc.abstractmethod
    def _write(self, key: str, text: str, now: float) -> None:
        """Store the JSON text, then evict beyond ``max_entries``."""

    def _counted(self, found: _Found) -> _Found:
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def _oldest_valid(self) -> float:
        return time.time() - self.ttl if self.ttl is not None else float("-inf")


def encode_entry(response: LMResponse) -> str:
    """An entry's JSON text: the completion as received and the model asked for."""
    entry: dict[str, Any] = {"model": response.model, "completion": dict(response.raw)}
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))


def decode_entry(text: str) -> LMResponse | None:
    """The response an entry holds; ``None`` for an entry that cannot be read (a miss)."""
    from typedspy.errors import LMResponseError

    try:
        entry = json.loads(text)
        return LMResponse.from_completion(entry["completion"], model=str(entry["model"]))
    except (ValueError, KeyError, TypeError, LMResponseError):
        return None


def _decode_embeddings(text: str) -> EmbeddingResponse | None:
    try:
        entry = json.loads(text)[_EMBEDDINGS]
        prompt, total = entry["usage"]
        vectors = [[float(v) for v in vector] for vector in entry["vectors"]]
        return EmbeddingResponse(vectors, Usage(int(prompt), 0, int(total)), str(entry["model"]))
    except (ValueError, KeyError, TypeError):
        return None
