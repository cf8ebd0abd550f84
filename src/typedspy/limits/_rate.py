"""`RateLimit`: requests- and tokens-per-minute limits over `aiolimiter` leaky buckets.

Tokens are charged up front from an estimate (the prompt's size plus the average completion
seen so far) and reconciled with the usage the endpoint reports: a shortfall is charged when
the reply arrives, a surplus is credited to the next requests. Rate-limit headers pause every
caller sharing the limit (``x-ratelimit-remaining-*: 0`` until ``x-ratelimit-reset-*``, and a
final 429's ``Retry-After``); sending again after a 429 stays the SDK's job (its
``max_retries``), so no second retry loop is stacked on it (reference/scale.md).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Mapping

from aiolimiter import AsyncLimiter

from typedspy._types import Usage
from typedspy.errors import ConfigurationError, check_number

__all__ = ["RateLimit", "parse_reset"]

# Leaky-bucket capacity, in seconds of the rate: the slack that absorbs late wake-ups of the
# event loop (a waiter woken late still finds the capacity that drained meanwhile). The buckets
# start primed, one request short of full, so that slack is never an up-front burst (ADR-038).
_BURST_SECONDS = 0.25
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class RateLimit:
    """Requests per minute and tokens per minute, shared by every request sent under it.

    Pass one to `Module.abatch` (``rate_limit=``) or put it in the settings
    (``ts.context(rate_limit=...)``); use one object per endpoint and share it between the
    batches that call that endpoint. It must be used from one event loop (the sync API's
    background loop counts as one).

    Example:
        ```python
        limit = ts.limits.RateLimit(requests_per_minute=500, tokens_per_minute=200_000)
        results = await module.abatch(inputs, rate_limit=limit)
        ```

    Args:
        requests_per_minute: Requests that may start per minute.
        tokens_per_minute: Prompt plus completion tokens per minute.

    Raises:
        ConfigurationError: A limit that is not a positive number, or no limit at all.

    Attributes:
        requests_per_minute: The request limit.
        tokens_per_minute: The token limit.
        pauses: How many times rate-limit headers paused the senders.
    """

    def __init__(
        self,
        *,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
    ) -> None:
        check_number("RateLimit", "requests_per_minute", requests_per_minute)
        check_number("RateLimit", "tokens_per_minute", tokens_per_minute)
        if requests_per_minute is None and tokens_per_minute is None:
            raise ConfigurationError("RateLimit() needs requests_per_minute or tokens_per_minute")
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.pauses = 0
        self._requests = _bucket(requests_per_minute)
        self._tokens = _bucket(tokens_per_minute)
        self._lock = threading.Lock()
        # aiolimiter serves the smallest waiting amount first: a request charged more than
        # the others could wait behind them for a whole batch. One waiter at a time, in
        # arrival order (asyncio.Lock is FIFO), keeps token charges first come, first served.
        self._token_turn = asyncio.Lock()
        self._resume_at = 0.0
        self._credit = 0.0
        self._completions = 0
        self._completion_tokens = 0
        self._estimated_prompts = 0
        self._reported_prompts = 0
        self._primed = False

    async def acquire(self, estimated_input_tokens: int) -> int:
        """Wait until a request may be sent; returns the tokens charged for it.

        Args:
            estimated_input_tokens: The request's prompt, estimated.
        """
        await self._wait_for_pause()
        first = not self._primed
        self._primed = True
        if self._requests is not None:
            if first:  # instant: the bucket is empty, so this fills it without waiting
                await self._requests.acquire(self._requests.max_rate - 1)
            await self._requests.acquire(1)
        if self._tokens is None:
            return 0
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
        if first:
            bucket = self._tokens.max_rate
            await self._tokens.acquire(bucket - min(bucket, charge - taken))
        await self._take_tokens(charge - taken)
        return charge

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
        that runs high does not hold tokens back while requests are in flight.

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
            await self._take_tokens(actual - charged)

    async def _take_tokens(self, amount: float) -> None:
        if amount <= 0 or self._tokens is None:
            return
        async with self._token_turn:
            await _take(self._tokens, amount)

    def observe(self, headers: Mapping[str, str]) -> None:
        """Pause every sender when the endpoint says a limit is used up.

        ``x-ratelimit-remaining-requests: 0`` (or ``-tokens: 0``) pauses until the matching
        ``x-ratelimit-reset-*`` duration (``"1s"``, ``"6m0s"``, ``"20ms"``) has passed.
        """
        for kind in ("requests", "tokens"):
            if headers.get(f"x-ratelimit-remaining-{kind}", "").strip() == "0":
                reset = parse_reset(headers.get(f"x-ratelimit-reset-{kind}", ""))
                if reset:
                    self.pause(reset)

    def pause(self, seconds: float) -> None:
        """Hold back every request for ``seconds`` from now (e.g. a 429's ``Retry-After``)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            self._resume_at = max(self._resume_at, loop.time() + seconds)
            self.pauses += 1

    async def _wait_for_pause(self) -> None:
        loop = asyncio.get_running_loop()
        # Each turn sleeps until the latest pause ends; a turn only repeats when another pause
        # was announced meanwhile, so the loop ends once the endpoint stops pausing us.
        while (delay := self._resume_at - loop.time()) > 0:
            await asyncio.sleep(delay)

    def __repr__(self) -> str:
        return (
            f"RateLimit(requests_per_minute={self.requests_per_minute}, "
            f"tokens_per_minute={self.tokens_per_minute})"
        )


def _bucket(per_minute: float | None) -> AsyncLimiter | None:
    if per_minute is None:
        return None
    per_second = per_minute / 60
    capacity = max(2.0, per_second * _BURST_SECONDS)  # primed at 1: one of slack at least
    return AsyncLimiter(capacity, capacity / per_second)


async def _take(bucket: AsyncLimiter, amount: float) -> None:
    """Acquire ``amount`` in pieces no larger than the bucket (a big request waits longer)."""
    while amount > 0:
        piece = min(amount, bucket.max_rate)
        await bucket.acquire(piece)
        amount -= piece


def parse_reset(value: str) -> float | None:
    """Seconds in an ``x-ratelimit-reset-*`` value: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"0.5"``.

    Returns:
        The seconds, or ``None`` when the value cannot be read.
    """
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in parts)
