"""`RateLimit`: requests- and tokens-per-minute limits, shared by threads and event loops.

Tokens are charged up front from an estimate (the prompt's size plus the average completion
seen so far) and reconciled with the usage the endpoint reports: a shortfall is charged when
the reply arrives, a surplus is credited to the next requests. Rate-limit headers pause every
caller sharing the limit (``x-ratelimit-remaining-*: 0`` until ``x-ratelimit-reset-*``, and a
final 429's ``Retry-After``), for at most ``max_pause`` seconds; sending again after a 429
stays the SDK's job (its ``max_retries``), so no second retry loop is stacked on it
(reference/scale.md).

The buckets are booked under a lock and waited for on the caller's own loop (`Bucket`), so a
limit works for sync calls in several threads, each on its own loop (ADR-049, ADR-056).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections.abc import Mapping

from typedspy._deadline import check_wait
from typedspy._types import Usage
from typedspy.errors import ConfigurationError, check_number

__all__ = ["Bucket", "RateLimit", "parse_reset"]

logger = logging.getLogger("typedspy")

# The openai SDK honours a server-directed wait up to two minutes and refuses to retry past it:
# `MAX_RETRY_AFTER_DELAY = 2 * 60` in openai/_constants.py, read by
# `BaseClient._calculate_retry_timeout` and `_should_retry` in openai/_base_client.py.
MAX_PAUSE = 120.0
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


# Capacity, in seconds of the rate: the slack that lets a burst of late senders (a busy loop,
# requests arriving slower than the rate) use what drained meanwhile. The bucket starts primed,
# full less its first booking, so that slack is never an up-front burst (ADR-038).
_BURST_SECONDS = 0.25


class Bucket:
    """A leaky bucket draining ``per_minute / 60`` a second, booked across threads and loops.

    A booking is not awaited inside the bucket: `Bucket.book` adds the amount to the level under
    a `threading.Lock` and returns the ``time.monotonic()`` instant at which the level will have
    drained back to the capacity, the moment the amount may be used. The caller sleeps until
    then on its own event loop (`asyncio.sleep`), so callers on any loop, in any thread, share
    one rate, in the order they booked. A booking that is never used (its wait was cancelled) is
    given back with `Bucket.refund` (ADR-056).

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


class RateLimit:
    """Requests per minute and tokens per minute, shared by every request sent under it.

    Pass one to `Module.abatch` (``rate_limit=``) or put it in the settings
    (``ts.context(rate_limit=...)``); use one object per endpoint and share it between the
    batches that call that endpoint, in any threads and event loops (sync batches in several
    threads share its rate).

    Example:
        ```python
        limit = ts.limits.RateLimit(requests_per_minute=500, tokens_per_minute=200_000)
        results = await module.abatch(inputs, rate_limit=limit)
        ```

    Args:
        requests_per_minute: Requests that may start per minute.
        tokens_per_minute: Prompt plus completion tokens per minute.
        max_pause: The longest pause, in seconds, a reply's rate-limit headers or a 429's
            ``Retry-After`` may impose; longer ones are cut to it (the openai SDK's own cap
            on a server-directed wait is 120 s).

    Raises:
        ConfigurationError: A limit that is not a number > 0, no limit at all, or a
            ``max_pause`` that is not a finite number of seconds > 0.

    Attributes:
        requests_per_minute: The request limit.
        tokens_per_minute: The token limit.
        max_pause: The cap on one pause.
        pauses: How many times rate-limit headers paused the senders.
    """

    def __init__(
        self,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        max_pause: float = MAX_PAUSE,
    ) -> None:
        check_number("RateLimit", "requests_per_minute", requests_per_minute)
        check_number("RateLimit", "tokens_per_minute", tokens_per_minute)
        # Finite: an endless pause is what the cap is there to prevent.
        check_number("RateLimit", "max_pause", max_pause, unit="seconds", optional=False)
        if requests_per_minute is None and tokens_per_minute is None:
            raise ConfigurationError("RateLimit() needs requests_per_minute or tokens_per_minute")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.max_pause = float(max_pause)
        self.pauses = 0
        self._requests = None if requests_per_minute is None else Bucket(requests_per_minute)
        self._tokens = None if tokens_per_minute is None else Bucket(tokens_per_minute)
        self._lock = threading.Lock()
        self._resume_at = 0.0  # a time.monotonic() instant, the same clock in every thread
        self._credit = 0.0
        self._completions = 0
        self._completion_tokens = 0
        self._estimated_prompts = 0
        self._reported_prompts = 0

    async def acquire(self, estimated_input_tokens: int) -> int:
        """Wait until a request may be sent; returns the tokens charged for it.

        Args:
            estimated_input_tokens: The request's prompt, estimated.

        Raises:
            DeadlineExceededError: The wait would end past the call's deadline: raised at
                once, nothing is charged.
        """
        await self._wait_for_pause()
        charge, taken = self._charge(estimated_input_tokens)
        ready = 0.0
        if self._requests is not None:
            ready = self._requests.book(1)
        if self._tokens is not None:
            ready = max(ready, self._tokens.book(charge - taken))
        try:
            if ready > time.monotonic():
                check_wait(ready, f"about to wait {self._left(ready)} for the rate limit")
                await _sleep_until(ready)
        except BaseException:  # cancelled, or past the deadline: the request is not sent
            self._give_back(charge, taken)
            raise
        return charge

    def _charge(self, estimated_input_tokens: int) -> tuple[int, float]:
        """The tokens to charge a request, and how much of it the credit pays."""
        if self._tokens is None:
            return 0, 0.0
        with self._lock:
            average = self._completion_tokens / self._completions if self._completions else 0
            scale = (
                self._reported_prompts / self._estimated_prompts
                if self._estimated_prompts and self._reported_prompts
                else 1.0
            )
            charge = max(1, round(estimated_input_tokens * scale)) + round(average)
            taken = min(self._credit, charge)
            self._credit -= taken
        return charge, taken

    def _give_back(self, charge: int, taken: float) -> None:
        if self._requests is not None:
            self._requests.refund(1)
        if self._tokens is not None:
            self._tokens.refund(charge - taken)
            with self._lock:
                self._credit += taken

    async def settle(
        self,
        charged: int,
        usage: Usage,
        *,
        estimated: int | None = None,
        completion: bool = True,
    ) -> None:
        """Reconcile a request's up-front charge with the tokens its reply reported.

        Later charges learn from it: they add the average completion seen so far, and scale
        prompt estimates by the ratio of reported to estimated prompt tokens, so an estimate
        that runs high does not hold tokens back while requests are in flight. A shortfall
        is booked at once (later requests wait for it; this reply is not held back).

        Args:
            charged: What `acquire` charged for it.
            usage: What its reply reported.
            estimated: The prompt estimate it was charged from (calibrates later estimates).
            completion: Whether it was a completion (its completion tokens feed the average
                added to later estimates); ``False`` for an embeddings request.
        """
        if self._tokens is None:
            return
        actual = usage.total_tokens
        with self._lock:
            if completion:
                self._completions += 1
                self._completion_tokens += usage.completion_tokens
                if estimated and usage.prompt_tokens:
                    self._estimated_prompts += estimated
                    self._reported_prompts += usage.prompt_tokens
            if actual < charged:
                self._credit += charged - actual
        if actual > charged:
            self._tokens.book(actual - charged)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Pause every sender when the endpoint says a limit is used up.

        ``x-ratelimit-remaining-requests: 0`` (or ``-tokens: 0``) pauses until the matching
        ``x-ratelimit-reset-*`` duration (``"1s"``, ``"6m0s"``, ``"20ms"``) has passed, for at
        most ``max_pause``; a reset that is not a finite duration is ignored (and logged).
        """
        for kind in ("requests", "tokens"):
            if headers.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0":
                value = headers.get(f"x-ratelimit-reset-{kind}", "")
                reset = parse_reset(value)
                if reset is None:
                    logger.warning(
                        "rate limit: ignored x-ratelimit-reset-%s: %r (not a duration)",
                        kind,
                        value[:40],
                    )
                elif reset:
                    self.pause(reset)

    def pause(self, seconds: float) -> None:
        """Hold back every request for ``seconds`` from now (e.g. a 429's ``Retry-After``).

        A pause longer than ``max_pause`` is cut to it; one that is not a finite number of
        seconds above 0 is ignored. Both are logged.
        """
        if not _positive(seconds):
            logger.warning("rate limit: ignored a pause of %r s (not a finite duration)", seconds)
            return
        if seconds > self.max_pause:
            logger.warning(
                "rate limit: the endpoint asked for a pause of %g s; paused for max_pause=%g s",
                seconds,
                self.max_pause,
            )
            seconds = self.max_pause
        with self._lock:
            self._resume_at = max(self._resume_at, time.monotonic() + seconds)
            self.pauses += 1

    async def _wait_for_pause(self) -> None:
        # Each turn sleeps until the latest pause ends; a turn only repeats when another pause
        # was announced meanwhile (each at most max_pause), so the loop ends once the endpoint
        # stops pausing us, and the call's deadline bounds it in any case.
        while (resume_at := self._resume_at) > time.monotonic():
            check_wait(
                resume_at,
                f"about to wait {self._left(resume_at)} for the rate limit: a pause the "
                "endpoint asked for (rate-limit headers or Retry-After)",
            )
            await _sleep_until(resume_at)

    @staticmethod
    def _left(instant: float) -> str:
        return f"{max(0.0, instant - time.monotonic()):.2f} s"

    def __repr__(self) -> str:
        return (
            f"RateLimit(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute})"
        )


def _positive(value: object) -> bool:
    """A finite int or float above 0 (not a bool)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


async def _sleep_until(instant: float) -> None:
    """Sleep on the running loop until the ``time.monotonic()`` instant."""
    await asyncio.sleep(max(0.0, instant - time.monotonic()))


def parse_reset(value: str) -> float | None:
    """Seconds in an ``x-ratelimit-reset-*`` value: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"0.5"``.

    Returns:
        The seconds, or ``None`` when the value is not a finite duration of 0 or more
        (``"inf"``, ``"nan"``, ``"-5"``, ``"soon"``).
    """
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        parts = _DURATION.findall(value)
        if not parts or "".join(n + u for n, u in parts) != value:
            return None
        seconds = sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
    return seconds if math.isfinite(seconds) and seconds >= 0 else None
