"""`Bucket`: a leaky bucket shared by threads and event loops, for `RateLimit` (ADR-056).

A booking is not awaited inside the bucket: `Bucket.book` adds the amount to the level under a
`threading.Lock` and returns the ``time.monotonic()`` instant at which the level will have
drained back to the capacity, the moment the amount may be used. The caller sleeps until then
on its own event loop (`asyncio.sleep`), so callers on any loop, in any thread, share one rate,
in the order they booked. A booking that is never used (its wait was cancelled) is given back
with `Bucket.refund`.
"""

from __future__ import annotations

import threading
import time

__all__ = ["Bucket"]

# Capacity, in seconds of the rate: the slack that lets a burst of late senders (a busy loop,
# requests arriving slower than the rate) use what drained meanwhile. The bucket starts primed,
# full less its first booking, so that slack is never an up-front burst (ADR-038).
_BURST_SECONDS = 0.25


class Bucket:
    """A leaky bucket draining ``per_minute / 60`` a second, booked across threads and loops.

    Attributes:
        rate: What drains per second.
        capacity: The level up to which bookings are ready at once.
    """

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60
        self.capacity = max(2.0, self.rate * _BURST_SECONDS)  # primed: one request of slack
        self._lock = threading.Lock()
        self._level: float | None = None  # None until the first booking primes it
        self._checked = 0.0

    def book(self, amount: float) -> float:
        """Add ``amount`` to the level; returns the monotonic instant it may be used."""
        with self._lock:
            now = time.monotonic()
            if self._level is None:
                level = max(0.0, self.capacity - amount)
            else:
                level = max(0.0, self._level - (now - self._checked) * self.rate)
            self._level, self._checked = level + amount, now
            return now + max(0.0, self._level - self.capacity) / self.rate

    def refund(self, amount: float) -> None:
        """Give back a booking that was not used (later bookings may then go sooner)."""
        with self._lock:
            if self._level is not None:
                now = time.monotonic()
                level = self._level - (now - self._checked) * self.rate
                self._level, self._checked = max(0.0, level - amount), now
