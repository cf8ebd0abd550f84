"""Resuming a paused run once: the store that remembers which pauses were answered.

Each pause of a ReAct run carries a ``pause_id`` (a random id made when the run paused). The
first resumption claims that id in a `ResumeStore` before the approved tool runs and records what
the call returned; a second resumption from the same saved state finds the record and replays
that observation instead of running the tool again (ADR-036). The default store lives in the
process; a web app that resumes in several processes passes a shared one (docs/confirmations.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from typedspy.errors import ConfigurationError

__all__ = ["MemoryResumeStore", "ResumeRecord", "ResumeStore", "default_resume_store"]


@dataclass(frozen=True)
class ResumeRecord:
    """What a store holds for one answered pause.

    Attributes:
        action: The answer's action (``"approve"``, ``"edit"``, ``"reject"``, ``"feedback"``).
        observation: What the paused call returned, as the model read it; None while the call
            runs (or when the process running it stopped before it was recorded).
        failed: Whether that observation reports an error.
    """

    action: str
    observation: str | None = None
    failed: bool = False


@runtime_checkable
class ResumeStore(Protocol):
    """Where a ReAct agent records answered pauses, so an approval applies once.

    Both methods must be atomic with respect to each other for one key (a database row with the
    key as primary key does it: ``INSERT`` that fails on conflict, then ``UPDATE``).
    """

    async def claim(self, key: str, action: str) -> ResumeRecord | None:
        """Claim ``key`` for an answer with ``action``.

        Returns:
            None when this call claimed the key (the paused call is to run now); otherwise the
            record an earlier claim left.
        """
        ...

    async def record(self, key: str, observation: str, failed: bool) -> None:
        """Record what the paused call claimed under ``key`` returned."""
        ...


class MemoryResumeStore:
    """A `ResumeStore` in this process's memory, bounded to the ``max_entries`` newest keys.

    Args:
        max_entries: The most answered pauses remembered; the oldest are forgotten first.

    Raises:
        ConfigurationError: ``max_entries`` is not a positive int.
    """

    def __init__(self, max_entries: int = 10_000) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigurationError(f"max_entries must be an int >= 1, not {max_entries!r}")
        self.max_entries = max_entries
        self._records: OrderedDict[str, ResumeRecord] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    async def claim(self, key: str, action: str) -> ResumeRecord | None:
        """See `ResumeStore.claim`."""
        with self._lock:
            known = self._records.get(key)
            if known is not None:
                return known
            self._records[key] = ResumeRecord(action)
            while len(self._records) > self.max_entries:
                self._records.popitem(last=False)
            return None

    async def record(self, key: str, observation: str, failed: bool) -> None:
        """See `ResumeStore.record`."""
        with self._lock:
            known = self._records.get(key)
            action = known.action if known is not None else "approve"
            self._records[key] = ResumeRecord(action, observation, failed)


_DEFAULT = MemoryResumeStore()


def default_resume_store() -> MemoryResumeStore:
    """The process-wide store agents use when given none."""
    return _DEFAULT
