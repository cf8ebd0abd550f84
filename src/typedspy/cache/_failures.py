"""`FailureLog`: a cache's failures counted, each cause logged once.

A cache that cannot be read or written must not fail the call it serves (a read failure is a
miss, a write failure leaves the reply unstored), but it must not fail silently either: the
first failure of each cause is a warning on the ``typedspy`` logger, later ones of that cause
are logged at DEBUG, so a locked file does not log once per call.
"""

from __future__ import annotations

import logging
import threading

__all__ = ["FailureLog"]

logger = logging.getLogger("typedspy")

_MAX_CAUSES = 64  # distinct causes remembered; past it, every failure is logged at DEBUG


class FailureLog:
    """How many reads and writes of one cache failed; each cause warned about once.

    Attributes:
        name: The cache, as the messages name it.
        count: Failures so far.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self._lock = threading.Lock()
        self._seen: set[str] = set()

    def report(
        self, action: str, cause: str, outcome: str, *, failures: int = 1, logged: bool = True
    ) -> None:
        """Count ``failures`` of ``action`` (e.g. ``"reading an entry"``) and log the cause.

        Args:
            action: What failed.
            cause: Why: the store's message or the entry's defect.
            outcome: What the cache did instead (``"treated as a miss"``).
            failures: How many operations failed with it.
            logged: False to count only (the failure is raised to the caller instead).
        """
        with self._lock:
            self.count += failures
            if not logged:
                return
            first = cause not in self._seen and len(self._seen) < _MAX_CAUSES
            if first:
                self._seen.add(cause)
        message = "%s: %s failed (%s); %s"
        if first:
            later = ". Later failures of this cause are logged at DEBUG."
            logger.warning(message + later, self.name, action, cause, outcome)
        else:
            logger.debug(message, self.name, action, cause, outcome)
