"""`Budget`: caps on requests, tokens and cost, shared by every call made under it.

A request is admitted by `Budget.reserve`, which returns a `Reservation`: what the request holds
of the budget while it is in flight. The reply settles it (the hold is replaced by the usage the
endpoint reported); a request that ends without a reply releases it. Admission counts what was
spent plus what the requests in flight hold, under a `threading.Lock`, so concurrent requests
(tasks of one loop, sync calls in several threads) cannot all fit in the same remainder. A
request that could fit once the requests in flight have settled waits for them, on its own loop;
one that cannot fit even then is refused (ADR-056). A ``cost`` limit prices with `price_of`.
"""

from __future__ import annotations

import asyncio
import math
import threading
from decimal import Decimal

from typedspy._types import Usage
from typedspy.errors import BudgetExceededError, ConfigurationError, check_int

__all__ = ["Budget", "Reservation", "price_of"]

# What requests in flight hold. "unpriced" counts those that run alone under a cost limit: sent
# without a completion cap before any reply showed how long completions run.
_HELD = ("in_flight", "input_tokens", "total_tokens", "cost", "unpriced")


class Budget:
    """Limits on what the calls made under it may spend, counted across all of them.

    Put one in the settings (``ts.configure(budget=...)``, ``with ts.context(budget=...)``) or
    pass it to `Module.abatch`: every request sent under it (retries, ReAct steps, sub-modules,
    batch items, sync calls in other threads) is counted. A request is refused *before* it is
    sent, with `BudgetExceededError`, when the request limit is reached, when a token limit is
    already spent, or when its estimated prompt does not fit in what is left of
    ``input_tokens``, ``total_tokens`` or ``cost``. While it would fit only once requests in
    flight have settled, it waits for them. A batch turns each refusal into that item's result.
    Responses served from the response cache cost nothing.

    A request in flight holds its estimated prompt, and for a ``cost`` limit its expected price:
    the prompt plus its completion cap (``max_tokens``/``max_completion_tokens``), or without a
    cap the average completion seen so far under this budget (the first such request holds the
    rest of the limit until its reply is in). So ``input_tokens`` holds whatever the
    concurrency, up to the error of the prompt estimates; ``cost`` is passed by at most one
    reply's completion when the requests have a cap (as one request alone can pass it), and
    without a cap by the spread of completions around their average; ``output_tokens`` and
    ``total_tokens`` can be passed by what the requests in flight generate.

    A ``cost`` limit prices with the ``genai-prices`` package (``pip install
    "typedspy[prices]"``) from the model and endpoint; a model it has no price for is a
    `ConfigurationError`.

    Example:
        ```python
        budget = ts.limits.Budget(requests=100, total_tokens=50_000)
        with ts.context(budget=budget):
            ...
        budget.requests, budget.usage  # what was spent
        ```

    Args:
        requests: Requests that may be sent.
        input_tokens: Prompt tokens that may be spent.
        output_tokens: Completion tokens that may be spent.
        total_tokens: Prompt plus completion tokens that may be spent.
        cost: US dollars that may be spent (needs the ``prices`` extra).

    Raises:
        ConfigurationError: A limit that is not an int >= 0 (``cost``: a number >= 0), or no
            limit at all.
    """

    def __init__(
        self,
        *,
        requests: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        total_tokens: int | None = None,
        cost: float | Decimal | None = None,
    ) -> None:
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, (int, float, Decimal))
            or not Decimal(str(cost)).is_finite()  # a NaN made every comparison raise mid-call
            or cost < 0
        ):
            raise ConfigurationError(
                f"Budget(cost={cost!r}): expected a finite number of dollars >= 0"
            )
        limits = {
            "requests": requests,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": total_tokens,
        }
        for name, value in limits.items():
            check_int("Budget", name, value, minimum=0)
        if all(v is None for v in limits.values()) and cost is None:
            raise ConfigurationError("Budget() needs at least one limit")
        self.limits: dict[str, int | Decimal] = {k: v for k, v in limits.items() if v is not None}
        if cost is not None:
            self.limits["cost"] = Decimal(str(cost))
        self._lock = threading.Lock()
        self._requests = 0
        self._usage = Usage()
        self._cost = Decimal(0)
        self._held: dict[str, int | Decimal] = dict.fromkeys(_HELD, 0)
        self._completions = 0  # completions settled, for the average completion
        self._estimated = 0  # their prompt estimates, and the prompt tokens they reported:
        self._reported = 0  # later estimates are scaled by the ratio
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def requests(self) -> int:
        """Requests sent under this budget so far (counted when admitted)."""
        return self._requests

    @property
    def usage(self) -> Usage:
        """Tokens spent under this budget so far (as the replies reported them)."""
        return self._usage

    @property
    def cost(self) -> Decimal:
        """US dollars spent under this budget so far (counted only with a ``cost`` limit)."""
        return self._cost

    def remaining(self) -> dict[str, int | Decimal]:
        """What is left of each limit for new requests (never below 0).

        That is the limit less what was spent and what the requests in flight hold.
        """
        with self._lock:
            spent = self._spent()
            return {
                name: max(0, allowed - spent[name] - self._held.get(name, 0))
                for name, allowed in self.limits.items()
            }

    async def reserve(
        self,
        estimated_input_tokens: int,
        *,
        model: str = "",
        endpoint: str | None = None,
        max_output_tokens: int | None = None,
    ) -> Reservation:
        """Admit one request about to be sent (waiting for requests in flight), or refuse it.

        Args:
            estimated_input_tokens: Its prompt, estimated (see `estimate_tokens`).
            model: The model it goes to (priced when there is a ``cost`` limit).
            endpoint: The endpoint it goes to (picks the provider's prices).
            max_output_tokens: Its completion cap, if it has one (0 for a request that
                completes nothing, such as embeddings).

        Returns:
            What it holds until its reply settles it (`Reservation.settle`) or it ends without
            one (`Reservation.release`).

        Raises:
            BudgetExceededError: It cannot fit, even once the requests in flight have settled;
                nothing was counted.
            ConfigurationError: A ``cost`` limit, and no price is known for the model.
        """
        while True:
            tokens = self._calibrated(estimated_input_tokens)
            prompt = Usage(tokens, 0, tokens)
            need: dict[str, int | Decimal] = {
                "requests": 1,
                "input_tokens": tokens,
                "total_tokens": tokens,
            }
            held: dict[str, int | Decimal] = {
                "in_flight": 1,
                "input_tokens": tokens,
                "total_tokens": tokens,
            }
            if "cost" in self.limits:  # priced outside the lock; an unpriced model fails here
                need["cost"] = held["cost"] = price_of(prompt, model, endpoint)
                completion = self._expected_completion(max_output_tokens)
                if completion is None:
                    held["unpriced"] = 1
                elif completion:
                    whole = prompt + Usage(0, completion, completion)
                    held["cost"] = price_of(whole, model, endpoint)
            loop = asyncio.get_running_loop()
            with self._lock:
                if not self._must_wait(need, held):
                    self._requests += 1
                    self._hold(held, +1)
                    completes = max_output_tokens != 0
                    return Reservation(
                        self,
                        held,
                        model,
                        endpoint,
                        estimate=estimated_input_tokens if completes else 0,
                    )
                waiter = loop.create_future()
                self._waiters.append(waiter)
            try:
                await waiter  # until a request in flight settles or is released
            finally:
                with self._lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)

    def _calibrated(self, estimate: int) -> int:
        """A prompt estimate scaled by the ratio of reported to estimated prompts seen so far."""
        with self._lock:
            if not (self._estimated and self._reported):
                return estimate
            return max(1, math.ceil(estimate * self._reported / self._estimated))

    def _expected_completion(self, cap: int | None) -> int | None:
        """Completion tokens a request is priced with while in flight (None: not known yet)."""
        if cap is not None:
            return cap
        with self._lock:
            if not self._completions:
                return None
            return math.ceil(self._usage.completion_tokens / self._completions)

    def _must_wait(self, need: dict[str, int | Decimal], held: dict[str, int | Decimal]) -> bool:
        """Whether the request must wait for requests in flight; raises when it cannot fit."""
        spent = self._spent()
        wait = False
        for name, allowed in self.limits.items():
            extra = need.get(name, 0)
            if spent[name] + extra > allowed or (not extra and spent[name] >= allowed):
                raise self._refusal(name, allowed)
            wait = wait or spent[name] + self._held.get(name, 0) + extra > allowed
        if "cost" in self.limits and (held.get("unpriced") or self._held["unpriced"]):
            wait = wait or bool(self._held["in_flight"])  # an unpriced request runs alone
        return wait

    def _hold(self, held: dict[str, int | Decimal], sign: int) -> None:
        for name, amount in held.items():
            self._held[name] += sign * amount

    def _end(
        self,
        held: dict[str, int | Decimal],
        usage: Usage,
        price: Decimal,
        *,
        sent: bool,
        estimate: int,
        calibrates: bool = False,
    ) -> None:
        """A reservation ended: drop its hold, count its reply, wake the requests waiting.

        ``estimate``: the prompt estimate of a settled completion (0 for anything else);
        ``calibrates``: whether its usage was reported (an estimated one teaches nothing).
        """
        with self._lock:
            self._hold(held, -1)
            self._usage += usage
            self._cost += price
            if estimate:
                self._completions += 1
                if calibrates and usage.prompt_tokens:
                    self._estimated += estimate
                    self._reported += usage.prompt_tokens
            if not sent:
                self._requests -= 1
            waiters, self._waiters = self._waiters, []
        for waiter in waiters:  # each re-checks in its own loop (a thread's own, ADR-049)
            try:
                waiter.get_loop().call_soon_threadsafe(_wake, waiter)
            except RuntimeError:  # its loop is closed: nothing waits there any more
                pass

    def _spent(self) -> dict[str, int | Decimal]:
        return {
            "requests": self._requests,
            "input_tokens": self._usage.prompt_tokens,
            "output_tokens": self._usage.completion_tokens,
            "total_tokens": self._usage.total_tokens,
            "cost": self._cost,
        }

    def _refusal(self, name: str, allowed: int | Decimal) -> BudgetExceededError:
        spent = self._spent()[name]
        what = "a request" if name == "requests" else f"{name} (estimated need of the next request)"
        return BudgetExceededError(
            f"budget exhausted: {name} limit {allowed}, already spent {spent}; "
            f"refused {what} before sending it",
            limit=name,
            allowed=allowed,
            requests=self._requests,
            usage=self._usage,
        )

    def __repr__(self) -> str:
        limits = ", ".join(f"{k}={v}" for k, v in self.limits.items())
        return f"Budget({limits}; spent requests={self._requests}, usage={self._usage})"


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Reservation:
    """What one admitted request holds of a `Budget` while it is in flight.

    It ends once: `settle` with the reply's usage, or `release` when the request ended without
    one; later calls do nothing, so ``release`` can sit in a ``finally`` after ``settle``.
    """

    def __init__(
        self,
        budget: Budget,
        held: dict[str, int | Decimal],
        model: str,
        endpoint: str | None,
        *,
        estimate: int,
    ) -> None:
        self._budget = budget
        self._estimate = estimate  # its prompt estimate, if it is a completion (else 0)
        self._held = held
        self._model = model
        self._endpoint = endpoint
        self._open = True
        self._lock = threading.Lock()

    def settle(self, usage: Usage, *, calibrates: bool = True) -> None:
        """Replace the hold by what the reply cost (and, with a ``cost`` limit, its price).

        Args:
            usage: What the reply reported (or, if it reported nothing, was estimated).
            calibrates: Whether ``usage`` was reported, so later prompt estimates learn from it.

        Raises:
            ConfigurationError: A ``cost`` limit, and no price is known for the model.
        """
        price = Decimal(0)
        if "cost" in self._budget.limits:
            try:
                price = price_of(usage, self._model, self._endpoint)
            except BaseException:
                self.release()  # the hold never outlives the request
                raise
        if self._close():
            self._budget._end(
                self._held, usage, price, sent=True, estimate=self._estimate, calibrates=calibrates
            )

    def release(self, *, sent: bool = True) -> None:
        """Give the hold back: the request ended without a reply to settle it with.

        Args:
            sent: Whether the request may have reached the endpoint (it stays counted in
                ``requests``); ``False`` when it was never sent (a rate-limit wait failed).
        """
        if self._close():
            self._budget._end(self._held, Usage(), Decimal(0), sent=sent, estimate=0)

    def _close(self) -> bool:
        with self._lock:
            was_open, self._open = self._open, False
        return was_open


def price_of(usage: Usage, model: str, endpoint: str | None) -> Decimal:
    """What ``usage`` of ``model`` costs in US dollars, per genai-prices' bundled price list.

    For `Budget(cost=...)`; ``genai-prices`` is an extra (``typedspy[prices]``).

    The endpoint's URL picks the provider when genai-prices knows it; otherwise the model
    name alone is looked up.

    Raises:
        ConfigurationError: genai-prices is not installed, or knows no price for the model.
    """
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import calc_price
    except ImportError as exc:
        raise ConfigurationError(
            'Budget(cost=...) needs genai-prices: pip install "typedspy[prices]"'
        ) from exc
    counted = PriceUsage(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens)
    try:
        return calc_price(counted, model_ref=model, provider_api_url=endpoint).total_price
    except LookupError:
        pass  # an endpoint genai-prices does not know (a proxy, a local server)
    try:
        return calc_price(counted, model_ref=model).total_price
    except LookupError as exc:
        raise ConfigurationError(
            f"Budget(cost=...): genai-prices knows no price for model {model!r}; "
            "use a token limit for this model instead"
        ) from exc
